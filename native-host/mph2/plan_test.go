package mph2

import (
	"testing"
	"time"
)

const mbit = 1e6 / 8 // bytes per second in one Mbit/s

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		name       string
		d          int64
		bwI, bwJ   float64
		rttI, rttJ time.Duration
		want       int64
	}{
		{"equal paths halve", 1_000_000, 10 * mbit, 10 * mbit, 50 * time.Millisecond, 50 * time.Millisecond, 500_000},
		{"rates share", 1_200_000, 10 * mbit, 5 * mbit, 0, 0, 800_000},
		// Seed 003's baseline links: WiFi 7.04 Mbit/s 50 ms, LTE 9.185 Mbit/s 70 ms: D_wifi =
		// (D·BW_w + BW_w·BW_l·(RTT_l − RTT_w)) / (BW_w + BW_l).
		{"seed links", 8_000_000, 7.04 * mbit, 9.185 * mbit, 50 * time.Millisecond, 70 * time.Millisecond, 3_481_149},
		{"slower RTT on i shrinks its share", 1_000_000, 10 * mbit, 10 * mbit, 150 * time.Millisecond, 50 * time.Millisecond, 437_500},
		{"a huge RTT gives i nothing", 100_000, 1 * mbit, 1 * mbit, 10 * time.Second, 0, 0},
		{"j's huge RTT gives i everything", 100_000, 1 * mbit, 1 * mbit, 0, 10 * time.Second, 100_000},
		{"unknown rate halves", 1_000_001, 0, 5 * mbit, 0, 0, 500_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Split(c.d, c.bwI, c.bwJ, c.rttI, c.rttJ)
			if d := got - c.want; d < -1 || d > 1 {
				t.Errorf("Split = %d, want %d", got, c.want)
			}
			// Both paths finish together (Eq. 1's premise) whenever the split is inside the object.
			if got > 0 && got < c.d && c.bwI > 0 && c.bwJ > 0 {
				ti := c.rttI.Seconds() + float64(got)/c.bwI
				tj := c.rttJ.Seconds() + float64(c.d-got)/c.bwJ
				if diff := ti - tj; diff > 1e-5 || diff < -1e-5 {
					t.Errorf("completion %f s vs %f s", ti, tj)
				}
			}
		})
	}
}

func TestTakeover(t *testing.T) {
	for _, c := range []struct {
		name     string
		r        int64
		bwJ, bwI float64
		rttI     time.Duration
		want     int64
	}{
		// RTT_i + D_i/BW_i = (r − D_i)/BW_j.
		{"equal rates, no RTT", 1_000_000, 10 * mbit, 10 * mbit, 0, 500_000},
		{"one RTT of the fast path's rate is lost", 1_000_000, 10 * mbit, 10 * mbit, 100 * time.Millisecond, 437_500},
		{"fast path twice as fast", 900_000, 5 * mbit, 10 * mbit, 0, 600_000},
		{"too little left to be worth it", 10_000, 1 * mbit, 1 * mbit, time.Second, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Takeover(c.r, c.bwJ, c.bwI, c.rttI); got != c.want {
				t.Errorf("Takeover = %d, want %d", got, c.want)
			}
		})
	}
}

func TestStep(t *testing.T) {
	fast := PathView{Remaining: 0, BW: 10 * mbit, RTT: 50 * time.Millisecond, Streams: 0, Cap: -1}
	slow := PathView{Remaining: 2_000_000, BW: 5 * mbit, RTT: 80 * time.Millisecond, Streams: 1,
		TailStart: 1_100_000, TailEnd: 3_000_000, Cap: -1}
	for _, c := range []struct {
		name        string
		this, other PathView
		wantOK      bool
		wantSplit   int64
	}{
		// D_i = (2e6·BW_i − 0.05·BW_i·BW_j) / (BW_i + BW_j) = 1,312,500 → split 3e6 − 1,312,500.
		{"idle fast path takes by Algorithm 1", fast, slow, true, 1_687_500},
		{"not while its own chunk lasts longer than an RTT", with(fast, func(v *PathView) { v.Remaining, v.Streams = 1_000_000, 1 }), slow, false, 0},
		{"pipelined: within one RTT of its end", with(fast, func(v *PathView) { v.Remaining, v.Streams = 50_000, 1 }), slow, true, 1_687_500},
		{"never more than two streams", with(fast, func(v *PathView) { v.Streams = 2 }), slow, false, 0},
		{"δ: finishing together already", fast, with(slow, func(v *PathView) { v.Remaining = 30_000 }), false, 0},
		{"the slow path is not the one to take", slow, fast, false, 0},
		{"split never inside granted credit", fast, with(slow, func(v *PathView) { v.TailStart = 2_500_000 }), true, 2_500_000},
		{"nothing takeable below MinChunk", fast, with(slow, func(v *PathView) { v.TailStart = 3_000_000 - MinChunk + 1 }), false, 0},
		{"θ2 caps what the fast path may take", with(fast, func(v *PathView) { v.Cap = 200_000 }), slow, true, 2_800_000},
		{"θ2 used up", with(fast, func(v *PathView) { v.Cap = 0 }), slow, false, 0},
		{"bootstrap: idle path without a rate takes half the tail", with(fast, func(v *PathView) { v.BW = 0 }), with(slow, func(v *PathView) { v.BW = 0 }), true, 2_050_000},
		{"bootstrap: a busy path without a rate waits", with(fast, func(v *PathView) { v.BW, v.Remaining, v.Streams = 0, 10, 1 }), slow, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			split, ok := Step(c.this, c.other, Delta, MinChunk)
			if ok != c.wantOK || (ok && split != c.wantSplit) {
				t.Errorf("Step = %d, %v; want %d, %v", split, ok, c.wantSplit, c.wantOK)
			}
		})
	}
}

func TestStartSplit(t *testing.T) {
	unknown := PathView{Cap: -1}
	wifi := PathView{BW: 7.04 * mbit, RTT: 50 * time.Millisecond, Cap: -1}
	lte := PathView{BW: 9.185 * mbit, RTT: 70 * time.Millisecond, Cap: -1}
	for _, c := range []struct {
		name               string
		size               int64
		primary, secondary PathView
		want               int64
	}{
		{"no estimates: halves (§3.3)", 8_000_000, unknown, unknown, 4_000_000},
		{"one rate unknown: halves", 8_000_001, wifi, unknown, 4_000_000},
		// Eq. 1 as the scheduler uses it later: the seed's links, as in TestSplit.
		{"estimates: Eq. 1", 8_000_000, wifi, lte, 3_481_149},
		{"θ2 keeps the secondary's share within its cap", 8_000_000, wifi, with(lte, func(v *PathView) { v.Cap = 1_000_000 }), 7_000_000},
		{"a cap above the share changes nothing", 8_000_000, wifi, with(lte, func(v *PathView) { v.Cap = 6_000_000 }), 3_481_149},
		{"θ2 used up: no second request", 8_000_000, unknown, with(unknown, func(v *PathView) { v.Cap = 0 }), 8_000_000},
		{"the secondary's share below MinChunk: no second request", MinChunk*2 - 1, unknown, unknown, MinChunk*2 - 1},
		{"a share of exactly MinChunk is worth a request", MinChunk * 2, unknown, unknown, MinChunk},
		// A primary that Eq. 1 gives nothing (its RTT alone outlasts the secondary's whole transfer) still asks
		// first, for MinChunk.
		{"the primary keeps MinChunk", 1_000_000, with(wifi, func(v *PathView) { v.RTT = 10 * time.Second }), lte, MinChunk},
		{"a tiny object: all on the primary", 1000, unknown, unknown, 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := StartSplit(c.size, c.primary, c.secondary, MinChunk)
			if d := got - c.want; d < -1 || d > 1 {
				t.Errorf("StartSplit = %d, want %d", got, c.want)
			}
			if got < min(MinChunk, c.size) || got > c.size || (got < c.size && c.size-got < MinChunk) {
				t.Errorf("split %d of %d leaves a share below MinChunk", got, c.size)
			}
		})
	}
}

func with(v PathView, f func(*PathView)) PathView {
	f(&v)
	return v
}

func TestRTT(t *testing.T) {
	var r RTT
	if _, ok := r.Value(); ok {
		t.Fatal("estimate before samples")
	}
	for i, want := range []time.Duration{10, 15, 20, 25, 30, 40, 50} {
		r.Add(time.Duration(10+10*i) * time.Millisecond)
		if got, _ := r.Value(); got != want*time.Millisecond {
			t.Errorf("after %d samples: %v, want %v", i+1, got, want*time.Millisecond)
		}
	}
}

func TestBandwidth(t *testing.T) {
	var b Bandwidth
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	b.Add(16384, at(0)) // starts the clock
	if _, ok := b.Value(); ok {
		t.Fatal("estimate from one read")
	}
	// 1 MB/s for 200 KB.
	for ms := 10; ms <= 200; ms += 10 {
		b.Add(10_000, at(ms))
	}
	if v, _ := b.Value(); v < 0.99e6 || v > 1.01e6 {
		t.Errorf("rate %f, want 1e6", v)
	}
	// Idle time is not a slowdown: the next bytes restart the clock.
	b.Idle()
	b.Add(10_000, at(5000))
	for ms := 5010; ms <= 5200; ms += 10 {
		b.Add(20_000, at(ms)) // 2 MB/s now
	}
	v, _ := b.Value()
	if v < 1.3e6 || v > 1.7e6 {
		t.Errorf("rate %f, want between the two rates (window of 500 KB spans both)", v)
	}
	// After 500 KB more at 2 MB/s the old samples are out of the window.
	for ms := 5210; ms <= 5500; ms += 10 {
		b.Add(20_000, at(ms))
	}
	if v, _ := b.Value(); v < 1.98e6 || v > 2.02e6 {
		t.Errorf("rate %f, want 2e6", v)
	}
}

func TestCredit(t *testing.T) {
	t0 := time.Unix(0, 0)
	// feed makes an estimate from n reads of 10 kB, gap apart.
	feed := func(n int, gap time.Duration) *Bandwidth {
		var b Bandwidth
		b.Add(1, t0)
		for i := 1; i <= n; i++ {
			b.Add(10_000, t0.Add(time.Duration(i)*gap))
		}
		return &b
	}
	for _, c := range []struct {
		name    string
		bw      *Bandwidth
		baseRTT time.Duration
		want    int64 // 0: not sized yet
	}{
		// 100 kB read within 10 µs (20 GB/s): sized from it, the credit would be the 16 MiB maximum.
		{"a burst read at once sizes nothing", feed(10, time.Microsecond), 50 * time.Millisecond, 0},
		{"too few bytes at an honest rate", feed(10, 10*time.Millisecond), 50 * time.Millisecond, 0},
		{"no RTT yet", feed(30, 10*time.Millisecond), 0, 0},
		// 1 MB/s, 50 ms: 150 kB, below the minimum.
		{"slow path: the minimum", feed(30, 10*time.Millisecond), 50 * time.Millisecond, minCredit},
		{"three bandwidth-delay products", feed(30, 10*time.Millisecond), time.Second, 3_000_000},
		{"never above the maximum", feed(30, 10*time.Microsecond), time.Second, maxCredit},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Credit(c.bw, c.baseRTT)
			if ok != (c.want > 0) || got != c.want {
				t.Errorf("Credit = %d, %v; want %d", got, ok, c.want)
			}
		})
	}
}
