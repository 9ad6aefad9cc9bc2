package rrc

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

func load(t *testing.T, tech string) *radio.Model {
	t.Helper()
	m, err := radio.Load(filepath.Join("../../policy-models", "power-"+tech+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var t0 = time.Unix(1_700_000_000, 0)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// check is an expected state at a time offset: the name and the offset at which the radio entered it.
type check struct {
	at    time.Duration
	state string
	since time.Duration
}

// TestTimers drives the machine with counter samples every 50 ms (a fake clock) and checks state and entry
// time against the timers of the shipped models: LTE promotion 260 ms, inactivity 100 ms, short DRX 20 ms,
// long DRX 11456 ms; 3G promotion 2 s, DCH tail 5 s, FACH 12 s, FACH->DCH 1.5 s.
func TestTimers(t *testing.T) {
	lte, g3 := load(t, radio.LTE), load(t, radio.ThreeG)
	const step = 50 * time.Millisecond
	cases := []struct {
		name   string
		m      *radio.Model
		active [][2]time.Duration // [from, to): samples in here see 10 new 1500-byte packets each way
		small  bool               // packets of 100 bytes instead
		checks []check
	}{
		{"lte stays idle without traffic", lte, nil, false, []check{{ms(0), "idle", 0}, {30 * time.Second, "idle", 0}}},
		{"lte one burst", lte, [][2]time.Duration{{ms(1000), ms(1050)}}, false, []check{
			{ms(999), "idle", 0},
			{ms(1000), "promotion", ms(1000)},
			{ms(1259), "promotion", ms(1000)},
			{ms(1260), "continuous", ms(1260)},
			{ms(1359), "continuous", ms(1260)},
			{ms(1360), "short_drx", ms(1360)},
			{ms(1380), "long_drx", ms(1380)},
			{ms(1260 + 11576 - 1), "long_drx", ms(1380)},
			{ms(1260 + 11576), "idle", ms(1260 + 11576)},
		}},
		{"lte transfer keeps continuous reception", lte, [][2]time.Duration{{ms(0), ms(3000)}}, false, []check{
			{ms(0), "promotion", 0},
			{ms(300), "continuous", ms(260)},
			{ms(2950), "continuous", ms(260)},
			{ms(2950 + 100), "short_drx", ms(3050)},
			{ms(2950 + 120 + 11456), "idle", ms(2950 + 11576)},
		}},
		{"lte packet in long drx goes straight back", lte, [][2]time.Duration{{ms(0), ms(50)}, {ms(5000), ms(5050)}}, false, []check{
			{ms(4999), "long_drx", ms(380)},
			{ms(5000), "continuous", ms(5000)},
			{ms(5100), "short_drx", ms(5100)},
		}},
		{"3g burst walks dch, fach, idle", g3, [][2]time.Duration{{ms(0), ms(50)}}, false, []check{
			{ms(0), "promo_idle_dch", 0},
			{ms(1999), "promo_idle_dch", 0},
			{ms(2000), "dch", ms(2000)},
			{ms(6999), "dch", ms(2000)},
			{ms(7000), "fach", ms(7000)},
			{ms(18999), "fach", ms(7000)},
			{ms(19000), "idle", ms(19000)},
		}},
		{"3g large packets in fach promote to dch", g3, [][2]time.Duration{{ms(0), ms(50)}, {ms(10000), ms(10050)}}, false, []check{
			{ms(10000), "promo_fach_dch", ms(10000)},
			{ms(11499), "promo_fach_dch", ms(10000)},
			{ms(11500), "dch", ms(11500)},
		}},
		{"3g small packets in fach stay in fach and restart its timer", g3, [][2]time.Duration{{ms(0), ms(50)}, {ms(10000), ms(10050)}}, true, []check{
			{ms(10000), "fach", ms(7000)},
			{ms(10000 + 11999), "fach", ms(7000)},
			{ms(10000 + 12000), "idle", ms(22000)},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, err := New(c.m, "wwan0", t0)
			if err != nil {
				t.Fatal(err)
			}
			var cnt Counters
			x.Observe(t0.Add(-step), cnt)
			size := uint64(1500)
			if c.small {
				size = 100
			}
			// Samples every 50 ms, with extra samples at each check's time in between.
			next := 0
			for at := time.Duration(0); next < len(c.checks); at += step {
				for next < len(c.checks) && c.checks[next].at < at {
					chk := c.checks[next]
					got := x.State(t0.Add(chk.at))
					if got.State != chk.state || got.SinceMS != t0.Add(chk.since).UnixMilli() {
						t.Errorf("at %v: %s since %v; want %s since %v", chk.at, got.State,
							time.Duration(got.SinceMS-t0.UnixMilli())*time.Millisecond, chk.state, chk.since)
					}
					next++
				}
				for _, a := range c.active {
					if at >= a[0] && at < a[1] {
						cnt.RxPackets += 10
						cnt.TxPackets += 10
						cnt.RxBytes += 10 * size
						cnt.TxBytes += 10 * size
					}
				}
				x.Observe(t0.Add(at), cnt)
				if next < len(c.checks) && c.checks[next].at == at {
					chk := c.checks[next]
					got := x.State(t0.Add(at))
					if got.State != chk.state || got.SinceMS != t0.Add(chk.since).UnixMilli() {
						t.Errorf("at %v: %s since %v; want %s since %v", chk.at, got.State,
							time.Duration(got.SinceMS-t0.UnixMilli())*time.Millisecond, chk.state, chk.since)
					}
					next++
				}
			}
		})
	}
}

func TestInfoAndErrors(t *testing.T) {
	if _, err := New(load(t, radio.WiFi), "wlan0", t0); err == nil {
		t.Error("a WiFi model was accepted for RRC inference")
	}
	if _, err := New(nil, "wwan0", t0); err == nil {
		t.Error("a nil model was accepted")
	}
	x, err := New(load(t, radio.LTE), "wwan0", t0)
	if err != nil {
		t.Fatal(err)
	}
	got := x.State(t0.Add(time.Second))
	want := Info{Interface: "wwan0", Tech: "lte", State: "idle", SinceMS: t0.UnixMilli(), Source: "inferred"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// Counters going backwards (interface re-created) are no activity.
	x.Observe(t0.Add(2*time.Second), Counters{RxPackets: 100})
	x.Observe(t0.Add(2050*time.Millisecond), Counters{RxPackets: 5})
	if s := x.State(t0.Add(2100 * time.Millisecond)).State; s != "idle" {
		t.Errorf("after a counter reset: %s, want idle", s)
	}
}

// TestLateSample: a sample 300 ms after the previous one (the sampler was late) that carried a transfer's
// packets keeps LTE in continuous reception through the gap; one that carried a single packet counts it at the
// sample's time, after the radio has demoted.
func TestLateSample(t *testing.T) {
	lte := load(t, radio.LTE)
	cases := []struct {
		name  string
		pkts  uint64
		state string
		since time.Duration
	}{
		{"transfer through the gap", 200, "continuous", ms(260)},
		{"lone packet after the gap", 1, "continuous", ms(1300)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, err := New(lte, "wwan0", t0)
			if err != nil {
				t.Fatal(err)
			}
			var cnt Counters
			x.Observe(t0.Add(-50*time.Millisecond), cnt)
			for at := ms(0); at <= ms(1000); at += ms(50) {
				cnt.RxPackets, cnt.RxBytes = cnt.RxPackets+10, cnt.RxBytes+15000
				x.Observe(t0.Add(at), cnt)
			}
			cnt.RxPackets, cnt.RxBytes = cnt.RxPackets+c.pkts, cnt.RxBytes+1500*c.pkts
			x.Observe(t0.Add(ms(1300)), cnt)
			got := x.State(t0.Add(ms(1300)))
			if got.State != c.state || got.SinceMS != t0.Add(c.since).UnixMilli() {
				t.Errorf("%s since %v; want %s since %v", got.State, time.Duration(got.SinceMS-t0.UnixMilli())*time.Millisecond, c.state, c.since)
			}
			if !x.LastSample().Equal(t0.Add(ms(1300))) {
				t.Errorf("LastSample %v", x.LastSample())
			}
		})
	}
}

// TestResume: a machine that goes on from an earlier one's mark. The earlier LTE machine saw a transfer end at
// 1 s (continuous until 1.1 s, then DRX, idle at 12.576 s) and kept its mark at 2 s.
func TestResume(t *testing.T) {
	lte := load(t, radio.LTE)
	earlier, err := New(lte, "wwan0", t0)
	if err != nil {
		t.Fatal(err)
	}
	const step = 50 * time.Millisecond
	var c Counters
	for at := time.Duration(0); at <= 2*time.Second; at += step {
		if at > 0 && at <= time.Second {
			c.RxPackets, c.TxPackets = c.RxPackets+10, c.TxPackets+5
		}
		earlier.Observe(t0.Add(at), c)
	}
	mark, ok := earlier.Mark()
	if !ok {
		t.Fatal("no mark after samples")
	}
	if _, ok := (&Machine{model: lte}).Mark(); ok {
		t.Error("a machine without samples gave a mark")
	}
	more := Counters{RxPackets: c.RxPackets + 3, TxPackets: c.TxPackets + 1}
	cases := []struct {
		name  string
		mark  Mark
		c     Counters
		at    time.Duration // the new machine's first sample
		ok    bool
		state string
		// awake is the spread's probability of a state other than idle; -1: no spread (the state is sure).
		awake float64
	}{
		{"no packet since, inside the tail", mark, c, 3 * time.Second, true, "long_drx", -1},
		{"no packet since, tail over", mark, c, 13 * time.Second, true, "idle", -1},
		// Packets at any instant of a 2..13 s gap leave the radio awake: in long DRX, or just connected.
		{"packets since: awake at least from the mark's sample", mark, more, 13 * time.Second, true, "long_drx", 1},
		// A 2..30 s gap: the radio is awake if the last packet came in the last tail (~11.8 s with the
		// promotion) of it, 11.8/28 of the gap.
		{"packets since, long ago: idle at least, awake as likely as the tail is long", mark, more, 30 * time.Second, true, "idle", 11.8 / 28},
		{"packets since, very long ago", mark, more, 120 * time.Second, true, "idle", 11.8 / 118},
		{"counters went backwards", mark, Counters{RxPackets: 1}, 3 * time.Second, false, "idle", -1},
		{"mark from the future", mark, c, time.Second, false, "idle", -1},
		{"no sample in the mark", Mark{Kind: mark.Kind, AtMS: mark.AtMS}, c, 3 * time.Second, false, "idle", -1},
		{"a state the model lacks", Mark{Kind: radio.KindTail, Phase: 7, AtMS: mark.AtMS, SampleMS: mark.SampleMS}, c, 3 * time.Second, false, "idle", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, err := New(lte, "wwan0", t0.Add(tc.at))
			if err != nil {
				t.Fatal(err)
			}
			if got := x.Resume(tc.mark, tc.c, t0.Add(tc.at)); got != tc.ok {
				t.Fatalf("Resume = %v, want %v", got, tc.ok)
			}
			x.Observe(t0.Add(tc.at), tc.c)
			info := x.State(t0.Add(tc.at))
			if info.State != tc.state {
				t.Errorf("state %s, want %s", info.State, tc.state)
			}
			awake, total := 0.0, 0.0
			for _, sh := range info.Spread {
				total += sh.P
				if sh.State != "idle" {
					awake += sh.P
				}
			}
			switch {
			case tc.awake < 0 && info.Spread != nil:
				t.Errorf("spread %+v for a sure state", info.Spread)
			case tc.awake >= 0 && (math.Abs(awake-tc.awake) > 1.0/spreadPoints || math.Abs(total-1) > 1e-9):
				t.Errorf("spread %+v: awake %.3f of %.3f, want %.3f of 1", info.Spread, awake, total, tc.awake)
			}
			// A packet the machine sees itself ends the doubt: the radio is awake from then on, whatever came before.
			x.Observe(t0.Add(tc.at+50*time.Millisecond), Counters{RxPackets: tc.c.RxPackets + 10, TxPackets: tc.c.TxPackets + 10, RxBytes: 15000})
			if sp := x.State(t0.Add(tc.at + 50*time.Millisecond)).Spread; sp != nil {
				t.Errorf("spread %+v after a packet seen", sp)
			}
		})
	}
}
