package paths

import (
	"math"
	"testing"
	"time"
)

func TestRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type seg struct {
		dur time.Duration
		bps float64 // offered rate during the segment; 0 = idle
	}
	cases := []struct {
		name string
		segs []seg
		want float64 // 0 = nil
		tol  float64 // relative; 0 means 1 %
	}{
		{"idle only", []seg{{5 * time.Second, 0}}, 0, 0},
		{"too short to fill a span", []seg{{700 * time.Millisecond, 7e6}, {2 * time.Second, 0}}, 0, 0},
		{"one saturated transfer", []seg{{3 * time.Second, 7.04e6}}, 7.04e6, 0},
		{"idle gaps do not lower it", []seg{{2 * time.Second, 9.185e6}, {5 * time.Second, 0}, {2 * time.Second, 1e5}}, 9.185e6, 0},
		{"the faster period wins", []seg{{2 * time.Second, 2e6}, {time.Second, 0}, {2 * time.Second, 5e6}}, 5e6, 0},
		{"old peaks leave the horizon but the estimate stays", []seg{{2 * time.Second, 8e6}, {40 * time.Second, 0}}, 8e6, 0},
		{"past the horizon a newer busy period replaces it", []seg{{2 * time.Second, 8e6}, {40 * time.Second, 0}, {2 * time.Second, 3e6}}, 3e6, 0},
		// A 3G link under a bulk transfer: 100 ms bursts at 1.5 Mbit/s, 200 ms pauses, 0.5 Mbit/s on average. A 1 s
		// window ending on a burst holds four or five bursts of the 300 ms cycle: 0.50-0.67 Mbit/s.
		{"a bursty link is measured through its pauses", repeat(12, seg{100 * time.Millisecond, 1.5e6}, seg{200 * time.Millisecond, 0}), 0.5e6, 0.34},
		// Browsing small pages after a saturated transfer: bursts with pauses, far below the link's rate.
		{"a page's bursts do not lower a saturated estimate", append([]seg{{2 * time.Second, 7.04e6}, {time.Second, 0}}, repeat(150, seg{100 * time.Millisecond, 1e6}, seg{200 * time.Millisecond, 0})...), 7.04e6, 0},
		{"a pause longer than the stall ends the period", []seg{{600 * time.Millisecond, 8e6}, {400 * time.Millisecond, 0}, {600 * time.Millisecond, 8e6}, {time.Second, 0}}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
			now, cum := t0, 0.0
			r.Add(now, 0)
			for _, s := range c.segs {
				now, cum = feed(r, now, cum, s.dur, s.bps, false)
			}
			checkRate(t, r.BPS(), c.want, c.tol)
		})
	}
}

// feed gives r samples every 50 ms with ±10 ms jitter, as a ticker under load gives, for dur at bps (0: idle).
func feed(r *Rate, now time.Time, cum float64, dur time.Duration, bps float64, shared bool) (time.Time, float64) {
	for el, i := time.Duration(0), 0; el < dur; i++ {
		dt := 50*time.Millisecond + time.Duration((i%3)-1)*10*time.Millisecond
		el += dt
		now = now.Add(dt)
		cum += bps / 8 * dt.Seconds()
		r.AddShared(now, uint64(cum), shared)
	}
	return now, cum
}

func checkRate(t *testing.T, got *float64, want, tol float64) {
	t.Helper()
	switch {
	case want == 0 && got != nil:
		t.Errorf("got %.0f, want nil", *got)
	case want != 0 && got == nil:
		t.Errorf("got nil, want %.0f", want)
	case want != 0 && math.Abs(*got-want)/want > max(tol, 0.01):
		t.Errorf("got %.0f, want %.0f", *got, want)
	}
}

// TestRateBound: an estimate that windows with pauses alone made is only a lower bound; a window without a pause,
// a shared window without one, or a seed makes it a measurement.
func TestRateBound(t *testing.T) {
	type seg struct {
		dur    time.Duration
		bps    float64
		shared bool
	}
	pages := repeat(12, seg{100 * time.Millisecond, 1.5e6, false}, seg{200 * time.Millisecond, 0, false})
	cases := []struct {
		name  string
		seed  bool
		segs  []seg
		bound bool
	}{
		{"nothing measured", false, []seg{{3 * time.Second, 0, false}}, false},
		{"a small page's bursts", false, pages, true},
		{"a saturated window", false, []seg{{3 * time.Second, 7e6, false}}, false},
		{"bursts after a saturated window", false, append([]seg{{2 * time.Second, 7e6, false}, {time.Second, 0, false}}, pages...), false},
		{"a saturated window after bursts", false, append(pages, seg{2 * time.Second, 0.5e6, false}), false},
		{"a shared window without a pause", false, []seg{{3 * time.Second, 2e6, true}}, false},
		{"bursts after a seed", true, pages, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
			if c.seed {
				r.Seed(7e6, time.Unix(990, 0))
			}
			now, cum := time.Unix(1000, 0), 0.0
			r.Add(now, 0)
			for _, s := range c.segs {
				now, cum = feed(r, now, cum, s.dur, s.bps, s.shared)
			}
			if got := r.Bound(); got != c.bound {
				t.Errorf("Bound() = %v, want %v (estimate %v)", got, c.bound, r.BPS())
			}
		})
	}
}

// TestRateShort: with Short, a busy period too short to fill a Span bounds the rate from below by its bytes over
// its length; without it (cellular paths) it says nothing.
func TestRateShort(t *testing.T) {
	type seg struct {
		dur time.Duration
		bps float64
	}
	cases := []struct {
		name  string
		short bool
		segs  []seg
		want  float64 // 0 = nil
		bound bool
	}{
		{"a page over a fast WiFi", true, []seg{{700 * time.Millisecond, 50e6}, {2 * time.Second, 0}}, 50e6, true},
		{"the same without Short", false, []seg{{700 * time.Millisecond, 50e6}, {2 * time.Second, 0}}, 0, false},
		{"shorter than a tenth of the span", true, []seg{{60 * time.Millisecond, 50e6}, {2 * time.Second, 0}}, 0, false},
		{"the fastest of several pages", true, []seg{{300 * time.Millisecond, 20e6}, {time.Second, 0}, {400 * time.Millisecond, 60e6}, {time.Second, 0}}, 60e6, true},
		{"a short burst above a saturated window raises it", true, []seg{{2 * time.Second, 7e6}, {time.Second, 0}, {400 * time.Millisecond, 40e6}, {time.Second, 0}}, 40e6, false},
		{"a short slow burst does not lower a saturated window", true, []seg{{2 * time.Second, 40e6}, {time.Second, 0}, {400 * time.Millisecond, 2e6}, {time.Second, 0}}, 40e6, false},
		// A bound outlives the horizon: a later page's slower burst says nothing of the link having slowed.
		{"a slower burst past the horizon does not lower a bound", true, []seg{{400 * time.Millisecond, 60e6}, {40 * time.Second, 0}, {300 * time.Millisecond, 5e6}, {time.Second, 0}}, 60e6, true},
		{"nor does a burst between two faster ones", true, []seg{{400 * time.Millisecond, 60e6}, {40 * time.Second, 0}, {300 * time.Millisecond, 5e6}, {40 * time.Second, 0}, {300 * time.Millisecond, 30e6}, {40 * time.Second, 0}, {300 * time.Millisecond, 4e6}, {time.Second, 0}}, 60e6, true},
		{"past the bound horizon a slower bound replaces it", true, []seg{{400 * time.Millisecond, 60e6}, {BoundHorizon + time.Minute, 0}, {300 * time.Millisecond, 5e6}, {time.Second, 0}}, 5e6, true},
		{"a remembered bound gives way to a window without a pause", true, []seg{{400 * time.Millisecond, 60e6}, {40 * time.Second, 0}, {2 * time.Second, 8e6}, {time.Second, 0}}, 8e6, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
			r.Short = c.short
			now, cum := time.Unix(1000, 0), 0.0
			r.Add(now, 0)
			for _, s := range c.segs {
				now, cum = feed(r, now, cum, s.dur, s.bps, false)
			}
			checkRate(t, r.BPS(), c.want, 0.1)
			if got := r.Bound(); got != c.bound {
				t.Errorf("Bound() = %v, want %v", got, c.bound)
			}
		})
	}
}

// TestRateShared: windows in which another path carried data too (a multipath transfer) raise the estimate but
// never lower one that a window of this path alone made.
func TestRateShared(t *testing.T) {
	type seg struct {
		dur    time.Duration
		bps    float64
		shared bool
	}
	cases := []struct {
		name string
		segs []seg
		want float64
	}{
		// Beside a bursty 3G subflow the WiFi subflow waits on the receive window: busy throughout, at a seventh of
		// its link, for longer than the horizon.
		{"a shared window does not lower an estimate", []seg{{2 * time.Second, 7.04e6, false}, {time.Second, 0, false}, {40 * time.Second, 1e6, true}}, 7.04e6},
		{"the same window alone does", []seg{{2 * time.Second, 7.04e6, false}, {time.Second, 0, false}, {40 * time.Second, 1e6, false}}, 1e6},
		{"a faster shared window raises it", []seg{{2 * time.Second, 3e6, false}, {time.Second, 0, false}, {2 * time.Second, 6e6, true}}, 6e6},
		{"a path only ever used beside another is measured", []seg{{3 * time.Second, 2e6, true}}, 2e6},
	}
	// An estimate an earlier host kept (Seed) counts as one from a window of this path alone.
	seeded := []struct {
		name string
		segs []seg
		want float64
	}{
		{"a seed stands through shared windows", []seg{{40 * time.Second, 1e6, true}}, 7.04e6},
		{"a faster shared window raises a seed", []seg{{2 * time.Second, 9e6, true}}, 9e6},
		{"a window of the path alone replaces a seed", []seg{{40 * time.Second, 1e6, false}}, 1e6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
			now, cum := time.Unix(1000, 0), 0.0
			r.Add(now, 0)
			for _, s := range c.segs {
				now, cum = feed(r, now, cum, s.dur, s.bps, s.shared)
			}
			checkRate(t, r.BPS(), c.want, 0)
		})
	}
	for _, c := range seeded {
		t.Run(c.name, func(t *testing.T) {
			r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
			r.Seed(7.04e6, time.Unix(990, 0))
			now, cum := time.Unix(1000, 0), 0.0
			r.Add(now, 0)
			for _, s := range c.segs {
				now, cum = feed(r, now, cum, s.dur, s.bps, s.shared)
			}
			checkRate(t, r.BPS(), c.want, 0)
		})
	}
}

func TestWindowedMin(t *testing.T) {
	t0 := time.Unix(1000, 0)
	floor := 70.0
	cases := []struct {
		name  string
		floor *float64
		v     float64
		after time.Duration
		want  float64
	}{
		{"the first sample sets it", nil, 80, 0, 80},
		{"a lower sample replaces it", &floor, 60, time.Second, 60},
		{"a sample from a full queue does not raise it", &floor, 872, 10 * time.Second, 70},
		{"after the hold a higher sample does", &floor, 120, RTTHold, 120},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := windowedMin(c.floor, t0, c.v, t0.Add(c.after))
			if *got != c.want {
				t.Errorf("got %g, want %g", *got, c.want)
			}
		})
	}
}

func TestRateCounterReset(t *testing.T) {
	r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
	t0 := time.Unix(0, 0)
	r.Add(t0, 1e9)
	r.Add(t0.Add(100*time.Millisecond), 10) // interface re-created
	for i := 2; i < 40; i++ {
		r.Add(t0.Add(time.Duration(i)*100*time.Millisecond), uint64(10+(i-1)*12500)) // 1 Mbit/s
	}
	if got := r.BPS(); got == nil || math.Abs(*got-1e6) > 1e4 {
		t.Errorf("after a reset: %v, want 1e6", got)
	}
}

// repeat is n copies of segs in a row.
func repeat[T any](n int, segs ...T) []T {
	var out []T
	for range n {
		out = append(out, segs...)
	}
	return out
}

func TestRTTProbeDue(t *testing.T) {
	now := time.Unix(10_000, 0)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	never := time.Time{}
	for _, c := range []struct {
		name                   string
		cellular, idle         bool
		lastPassive, lastProbe time.Time
		want                   bool
	}{
		{"wifi without passive samples", false, false, ago(ProbeAfter), ago(ProbeEvery), true},
		{"wifi with a recent passive sample", false, false, ago(ProbeAfter - time.Second), never, false},
		{"wifi probed a moment ago", false, false, never, ago(ProbeEvery - time.Second), false},
		{"cellular radio asleep", true, true, never, never, false},
		{"cellular radio awake, never probed", true, false, never, never, true},
		// The probe 6 s ago restarted an 11.6 s tail: probing again now would keep the radio awake for good.
		{"cellular radio awake because of the last probe", true, false, never, ago(6 * time.Second), false},
		{"cellular, last probe 10 minutes ago", true, false, never, ago(CellProbeEvery), true},
	} {
		if got := rttProbeDue(c.cellular, c.idle, now, c.lastPassive, c.lastProbe); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A rate probe waits until every path has been quiet, not only its own: a page loading over WiFi keeps the
// cellular probe back.
func TestAllQuiet(t *testing.T) {
	now := time.Unix(10_000, 0)
	since := now.Add(-RateProbeQuiet)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, c := range []struct {
		name   string
		active []time.Time
		want   bool
	}{
		{"no paths", nil, true},
		{"never active", []time.Time{{}, {}}, true},
		{"both quiet for longer", []time.Time{ago(3 * time.Second), ago(10 * time.Second)}, true},
		{"WiFi carrying a page, cellular quiet", []time.Time{ago(100 * time.Millisecond), ago(time.Minute)}, false},
		{"quiet exactly RateProbeQuiet", []time.Time{since}, true},
	} {
		if got := allQuiet(c.active, since); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// At is when the estimate was last measured: a busy window sets it, idle time and slower shared windows do not,
// and a seed brings its own measurement's time.
func TestRateAt(t *testing.T) {
	r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
	if !r.At().IsZero() {
		t.Fatalf("At before any window: %v", r.At())
	}
	now, cum := time.Unix(1000, 0), 0.0
	r.Add(now, 0)
	now, cum = feed(r, now, cum, 3*time.Second, 8e6, false)
	if !r.At().Equal(now) {
		t.Errorf("after a busy stretch At = %v, want its end %v", r.At(), now)
	}
	busyEnd := now
	now, cum = feed(r, now, cum, 5*time.Second, 0, false)
	now, _ = feed(r, now, cum, 3*time.Second, 2e6, true)
	checkRate(t, r.BPS(), 8e6, 0.05)
	if !r.At().Equal(busyEnd) {
		t.Errorf("idle and a slower shared stretch moved At to %v, want %v", r.At(), busyEnd)
	}

	seeded := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
	seeded.Seed(0.51e6, time.Unix(900, 0))
	if !seeded.At().Equal(time.Unix(900, 0)) {
		t.Errorf("seeded At = %v", seeded.At())
	}
	now, cum = time.Unix(1000, 0), 0
	seeded.Add(now, 0)
	now, _ = feed(seeded, now, cum, 3*time.Second, 9e6, true)
	checkRate(t, seeded.BPS(), 9e6, 0.05)
	if !seeded.At().Equal(now) {
		t.Errorf("a faster shared window raised the seed but At = %v, want %v", seeded.At(), now)
	}
}

// Mean is the path's long-run level: one measurement per busy second at most, none from idle time or a seed,
// the newest MeanWindow weighing most, and a kept mean to start from.
func TestRateMean(t *testing.T) {
	r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
	if _, n := r.Mean(); n != 0 {
		t.Fatalf("mean before any window rests on %d", n)
	}
	now, cum := time.Unix(1000, 0), 0.0
	r.Add(now, 0)
	now, cum = feed(r, now, cum, 5*time.Second, 8e6, false)
	bps, n := r.Mean()
	if n < 3 || n > 5 {
		t.Errorf("5 busy seconds gave %d measurements, want 3-5 (one per second at most)", n)
	}
	checkRate(t, &bps, 8e6, 0.05)
	// Idle time adds nothing.
	now, cum = feed(r, now, cum, 60*time.Second, 0, false)
	if _, n2 := r.Mean(); n2 != n {
		t.Errorf("a minute of idle moved the count from %d to %d", n, n2)
	}
	// A long stretch at another rate: the mean follows within MeanWindow measurements. The estimate is the
	// horizon's maximum, so the old rate has to leave the horizon first.
	_, _ = feed(r, now, cum, 80*time.Second, 2e6, false)
	bps, n = r.Mean()
	if n != MeanWindow {
		t.Errorf("count %d, want at most %d", n, MeanWindow)
	}
	checkRate(t, &bps, 2e6, 0.1)

	kept := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
	kept.Seed(20e6, time.Unix(900, 0))
	kept.SeedMean(20e6, 7)
	now, cum = time.Unix(1000, 0), 0
	kept.Add(now, 0)
	if bps, n := kept.Mean(); n != 7 || math.Abs(bps-20e6) > 1 {
		t.Errorf("kept mean %g over %d, want 20e6 over 7 (the seed is not counted again)", bps, n)
	}
	_, _ = feed(kept, now, cum, 3*time.Second, 30e6, false)
	bps, n = kept.Mean()
	if n < 8 || bps <= 20e6 || bps >= 30e6 {
		t.Errorf("mean %g over %d after 3 s at 30 Mbit/s on top of 7 at 20", bps, n)
	}
}

// A multipath subflow on a 20 Mbit/s cellular link, as a held-out check recorded one (a 3.4 MB
// page, wwan0's bytes per 250 ms: 44, 424, 624 and 93 kB), beside WiFi (shared). The cellular span sees the link
// at 17 Mbit/s; a 1 s span averages the slow start and the tail in, 9.5-11 Mbit/s as the samples fall, or has no window at all.
func TestCellRateSpan(t *testing.T) {
	perQuarter := []float64{44, 424, 624, 93, 0, 0, 0, 0, 0, 0, 0, 0} // kB per 250 ms
	for _, tc := range []struct {
		span     time.Duration
		min, max float64 // -1: no estimate is as good
	}{{CellRateSpan, 15e6, 18e6}, {RateSpan, -1, 12e6}} {
		r := NewRate(tc.span, RateHorizon, RateStall)
		now, cum := time.Unix(1000, 0), 0.0
		r.Add(now, 0)
		for _, kB := range perQuarter {
			bps := kB * 1000 * 8 / 0.25
			now, cum = feed(r, now, cum, 250*time.Millisecond, bps, bps > 0)
		}
		v := -1.0
		if got := r.BPS(); got != nil {
			v = *got
		}
		if v < tc.min || v > tc.max {
			t.Errorf("span %v: rate %.0f bit/s (-1: none), want %.0f-%.0f", tc.span, v, tc.min, tc.max)
		}
	}
}

// Each Span of traffic enters the mean with the estimate it ended on, not its first window: a page's cellular
// subflow beside a slow WiFi is busy for about a second, its first window mostly slow start, and one host sees one
// page. Here a host kept 2.3 Mbit/s (over 2 measurements) for its cellular path, and the page's subflow runs 1 s at
// 2.5 Mbit/s and then 0.4 s at 40 Mbit/s before the page ends (shared with the WiFi): the estimate ends on a window
// of 17-20 Mbit/s (the samples' timing), and the mean takes it as its third measurement.
func TestRateMeanSlot(t *testing.T) {
	r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
	r.Seed(2.3e6, time.Unix(900, 0))
	r.SeedMean(2.3e6, 2)
	now, cum := time.Unix(1000, 0), 0.0
	r.Add(now, 0)
	now, cum = feed(r, now, cum, time.Second, 2.5e6, true)
	_, _ = feed(r, now, cum, 400*time.Millisecond, 40e6, true)
	est := r.BPS()
	if est == nil || *est < 15e6 {
		t.Fatalf("estimate %v, want the last window's 17.5 Mbit/s", est)
	}
	bps, n := r.Mean()
	want := math.Exp((2*math.Log(2.3e6) + math.Log(*est)) / 3)
	if n != 3 || math.Abs(bps-want)/want > 0.01 {
		t.Errorf("mean %.0f over %d, want %.0f over 3 (the kept 2.3 Mbit/s twice, the estimate %.0f once)", bps, n, want, *est)
	}
}

// TestRateSustained: a long busy period with losses in it is measured by the median of its windows without a pause
// (Sustained), which the fastest window (BPS) is not; without the losses, too short, or on a path without Sustain,
// there is none. The lossy flow is the shape of a 5 MB single-path load on the held-out 2 % loss WiFi: its first
// 1.4 s at the link's 7 Mbit/s, then 2-3.5 Mbit/s.
func TestRateSustained(t *testing.T) {
	type seg struct {
		dur  time.Duration
		bps  float64
		loss bool // the path's sockets see segments out of order during it
	}
	lossy := append([]seg{{1400 * time.Millisecond, 7e6, true}}, repeat(10, seg{600 * time.Millisecond, 2e6, true}, seg{600 * time.Millisecond, 3.5e6, true})...)
	cases := []struct {
		name    string
		sustain bool
		segs    []seg
		want    float64 // 0: none
		tol     float64
	}{
		{"a lossy bulk flow", true, lossy, 2.75e6, 0.15},
		{"a saturated link with a slow start's drop", true, []seg{{300 * time.Millisecond, 7e6, true}, {4 * time.Second, 7.04e6, false}}, 7.04e6, 0.02},
		{"a steady stream without losses (a call)", true, []seg{{10 * time.Second, 2e6, false}}, 0, 0},
		{"too short", true, []seg{{1400 * time.Millisecond, 7e6, true}, {1200 * time.Millisecond, 2e6, true}, {2 * time.Second, 0, false}}, 0, 0},
		{"without Sustain (a cellular path)", false, lossy, 0, 0},
		{"pages after it keep it", true, append(append([]seg{}, lossy...), append([]seg{{2 * time.Second, 0, false}}, repeat(5, seg{300 * time.Millisecond, 7e6, true}, seg{time.Second, 0, false})...)...), 2.75e6, 0.15},
		{"forgotten after the bound horizon", true, append(append([]seg{}, lossy...), seg{BoundHorizon + time.Minute, 0, false}, seg{300 * time.Millisecond, 7e6, false}), 0, 0},
		{"a later long period replaces it", true, append(append([]seg{}, lossy...), seg{2 * time.Second, 0, false}, seg{4 * time.Second, 6e6, true}), 6e6, 0.02},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
			r.Short, r.Sustain = true, c.sustain
			now, cum := time.Unix(1000, 0), 0.0
			r.Add(now, 0)
			for _, s := range c.segs {
				if s.loss {
					r.MarkLoss(now.Add(100 * time.Millisecond))
				}
				now, cum = feed(r, now, cum, s.dur, s.bps, false)
			}
			got, _, ok := r.Sustained()
			switch {
			case c.want == 0 && ok:
				t.Errorf("sustained %.0f, want none", got)
			case c.want != 0 && !ok:
				t.Errorf("no sustained rate, want %.0f (estimate %v)", c.want, r.BPS())
			case c.want != 0 && math.Abs(got-c.want)/c.want > c.tol:
				t.Errorf("sustained %.0f, want %.0f", got, c.want)
			}
			if c.name == "a lossy bulk flow" {
				checkRate(t, r.BPS(), 7e6, 0.05) // the fastest window is the link's, as before
			}
		})
	}
	// A seed is as old as its measurement and gives way to the path's own.
	r := NewRate(time.Second, 30*time.Second, 250*time.Millisecond)
	r.Short, r.Sustain = true, true
	r.SeedSustained(3e6, time.Unix(900, 0))
	r.Add(time.Unix(1000, 0), 0)
	if got, at, ok := r.Sustained(); !ok || got != 3e6 || !at.Equal(time.Unix(900, 0)) {
		t.Errorf("seeded: %v %v %v", got, at, ok)
	}
	r.SeedSustained(5e6, time.Unix(950, 0))
	if got, _, _ := r.Sustained(); got != 3e6 {
		t.Errorf("a second seed replaced the first: %v", got)
	}
}
