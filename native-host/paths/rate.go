package paths

import (
	"math"
	"slices"
	"time"
)

// Rate estimates a link's capacity in one direction from its cumulative byte counter: the maximum, over the
// last Horizon, of the mean rate over any Span of consecutive samples in which every sample interval carried
// traffic (a busy period). Idle stretches say nothing about capacity, so they neither lower the estimate nor
// count; a short stretch of traffic (a few ACKs) gives a rate below capacity and loses to any saturated Span.
// With no busy Span in the Horizon the last estimate stands: capacity does not vanish when nobody uses it.
// Using the samples' own times, not fixed bins, keeps timer jitter out of the rate.
//
// A busy period survives a pause of up to Stall with no bytes: a cellular link delivers in bursts, and a 3G link
// under a bulk transfer goes quiet for 100-250 ms at a time (RateStall), so without the tolerance no Span of such
// a link is ever busy throughout and it is never measured at all. A window counts only when it ends on a sample
// that carried bytes, so the idle end of a transfer does not dilute it. But a window with a pause in it may be a
// page's requests and responses, not a saturated link: such a window sets the estimate only while no window
// without a pause has ever been seen, or when it is faster than the estimate; it never lowers an estimate that a
// window without a pause made (browsing small pages would otherwise pull a 7 Mbit/s WiFi down to 0.7).
//
// A window during which another path also carried data (Shared) is treated the same way: a multipath transfer
// may have held this path back. MPTCP delivers in order, so beside a slow or bursty cellular subflow the WiFi
// subflow waits on the connection's receive window and runs far below its link: in the held-out EVDO runs such
// windows, busy throughout, pulled a 7 Mbit/s WiFi's estimate to 0.5-1.2 Mbit/s, and the model then sent 5 MB
// pages over both paths from the first byte, 30-60 % slower than single path.
//
// A busy period that ends before it fills a Span (a page over a fast WiFi is delivered in a few hundred ms) still
// shows the link is at least as fast as its bytes over its length. With Short set, such a period from ShortMin on
// counts as a window with a pause (a lower bound): without it a 100 Mbit/s WiFi that only ever carries pages is never
// measured, and the model weighs it at the WiFi prior's 7 Mbit/s and sends large pages over a slower LTE as well.
// The model takes a bound only where it is above the prior (model.Path.DownBound), so a slow page's short burst
// lowers nothing. Cellular paths leave Short off: their bounds count as measurements (a subflow's slow start
// would read as a slow link).
//
// A bound is remembered for BoundHorizon, longer than the Horizon: until a window without a pause has been seen, the
// estimate is the fastest bound of that memory. A bound says the link was at least that fast, and a later, slower
// one (a small page's burst) does not say it has become slower. With only the Horizon, a 100 Mbit/s WiFi that had
// carried a 2.4 MB page at 62 Mbit/s fell back to the 7 Mbit/s prior 30 s later, once small pages' bursts were all
// the horizon held, and the model then sent the next large page over both paths for a cellular tail and no gain.
// A cellular path's windows are shared with the WiFi in nearly every multipath load, so its estimate is the fastest
// of them over BoundHorizon too, and any newer window renews its time (At): the model's aging of a cellular rate
// (model.RateMemory) then ages that fastest window only from the newest one. Whether to limit the memory to paths
// with Short set is open: it would change cellular decisions, which only a testbed grid can weigh.
type Rate struct {
	Span, Horizon, Stall time.Duration
	BoundHorizon         time.Duration
	Short                bool
	samples              []rateSample // the last Span of samples, oldest first
	peaks                []ratePeak   // the window rates of the last Horizon
	bounds               []ratePeak   // the loose windows of the last BoundHorizon, each faster than every later one
	busySince            time.Time    // first sample of the current run of busy intervals
	lastByte             time.Time    // the last sample that carried bytes
	lastIdle             time.Time    // the end of the last sample interval that carried nothing
	lastShared           time.Time    // the end of the last sample interval in which another path carried data
	strictSeen           bool         // a window without a pause has been seen
	bound                bool         // the estimate rests on a window with a pause alone: a lower bound (Bound)
	busy                 bool
	last                 float64 // bits/s; valid when have
	have                 bool
	at                   time.Time // when the window that made last ended (a seed's own time)
	// The path's own long-run level: the mean of ln(estimate) over its measurements (at most one per Span, each
	// a new or confirmed estimate), the newest MeanWindow weighing most. An old estimate says little of the rate
	// now, but the measurements together say where this link's rate tends to be (Mean).
	lnMean float64
	meanN  int
	meanAt time.Time
	// slot: the last measurement (the one made at meanAt) is this estimator's own, and lnBefore the mean before
	// it: a later estimate within the same Span replaces it (fold).
	slot     bool
	lnBefore float64
	// Sustain: the path's held rate (Sustained) is measured, from busy periods with losses in them (MarkLoss).
	Sustain bool
	lossAt  time.Time // the last time the path's sockets had a segment arrive out of order
	// run are the rates of the current busy period's windows without a pause, unshared, since runFrom (the start of
	// the first of them; zero: none yet); sustained is the median of the last such run to have lasted
	// SustainMin with a loss in it, measured at sustainedAt.
	run         []float64
	runFrom     time.Time
	runOf       time.Time // the busy period run belongs to (its busySince)
	sustained   float64
	sustainedAt time.Time
	lastT       time.Time // the newest sample's time
}

// SustainMin is how long a busy period's windows without a pause must cover before their median says what the
// link holds under loss. A flow's slow start runs at the link's rate until its losses catch up with it: on the
// held-out 2 % loss WiFi (7.04 Mbit/s) a 5 MB single-path load ran at 7 Mbit/s for its first 1.2-1.4 s and at
// 1.3-4.7 Mbit/s (200 ms bins) after that, 2.9-3.2 Mbit/s over its 13-15 s (e2e/cmd/report's timelines of the
// decisions-quick grid). Three spans hold two or more windows past that first burst for each in it.
const SustainMin = 3 * time.Second

// MeanWindow bounds the long-run mean's memory: each measurement weighs at least 1/MeanWindow, so after a move
// to another network the mean follows the new one within MeanWindow Spans of its traffic (one measurement per
// busy Span at most: 20 s of a WiFi path's, 10 s of a cellular one's).
const MeanWindow = 20

type rateSample struct {
	t   time.Time
	cum uint64
}

type ratePeak struct {
	t      time.Time
	bps    float64
	strict bool // the window had no pause and was not shared
	paused bool // the window had a pause
}

// BoundHorizon is how long a lower bound on a link's rate is remembered: as long as a host trusts a kept path
// estimate (decide.EstimateMaxAge) and as long as the rate probe waits before it measures a path again
// (RateProbeEvery). Over that time a device is on the same WiFi network far more often than not; a move to a
// slower one shows in its first window without a pause, which replaces every bound.
const BoundHorizon = 10 * time.Minute

// NewRate returns an estimator over windows of span, remembered for horizon, whose busy periods survive pauses
// of up to stall; its bounds are remembered for BoundHorizon.
func NewRate(span, horizon, stall time.Duration) *Rate {
	return &Rate{Span: span, Horizon: horizon, Stall: stall, BoundHorizon: BoundHorizon}
}

// Add takes one cumulative counter sample at t (in time order). A counter going backwards starts over.
func (r *Rate) Add(t time.Time, cum uint64) { r.AddShared(t, cum, false) }

// AddShared is Add for a sample interval in which another path carried data too (shared): a window that holds
// such an interval may raise the estimate but never lower it.
func (r *Rate) AddShared(t time.Time, cum uint64, shared bool) {
	carried := false
	if n := len(r.samples); n > 0 {
		prev := r.samples[n-1]
		if !t.After(prev.t) {
			return
		}
		switch {
		case cum < prev.cum:
			r.samples, r.busy = r.samples[:0], false
		case cum == prev.cum:
			r.lastIdle = t
			if t.Sub(r.lastByte) > r.Stall {
				r.busy = false
			}
		default:
			if !r.busy {
				r.busy, r.busySince = true, prev.t
			}
			r.lastByte, carried = t, true
		}
	}
	if shared {
		r.lastShared = t
	}
	r.lastT = t
	r.samples = append(r.samples, rateSample{t, cum})
	// Keep the newest sample at least Span old as the window's start.
	for len(r.samples) > 2 && t.Sub(r.samples[1].t) >= r.Span {
		r.samples = r.samples[1:]
	}
	if r.busy && carried && len(r.samples) >= 2 {
		first := r.samples[0]
		if !first.t.Before(r.busySince) && t.Sub(first.t) >= r.Span {
			bps := float64(cum-first.cum) * 8 / t.Sub(first.t).Seconds()
			paused := r.lastIdle.After(first.t)
			strict := !paused && !r.lastShared.After(first.t)
			r.strictSeen = r.strictSeen || strict
			r.addPeak(ratePeak{t, bps, strict, paused})
			if strict && r.Sustain {
				r.sustain(first.t, t, bps)
			}
		} else if d := t.Sub(r.busySince); r.Short && d >= r.Span/shortMinShare && d < r.Span {
			for _, s := range r.samples {
				if s.t.Equal(r.busySince) {
					r.addPeak(ratePeak{t, float64(cum-s.cum) * 8 / d.Seconds(), false, true})
					break
				}
			}
		}
	}
	for len(r.peaks) > 0 && t.Sub(r.peaks[0].t) > r.Horizon {
		r.peaks = r.peaks[1:]
	}
	for len(r.bounds) > 0 && t.Sub(r.bounds[0].t) > r.BoundHorizon {
		r.bounds = r.bounds[1:]
	}
	// Trim without keeping the old backing arrays' heads alive forever.
	if cap(r.samples) > 4*len(r.samples)+64 {
		r.samples = append([]rateSample(nil), r.samples...)
	}
	if cap(r.peaks) > 4*len(r.peaks)+64 {
		r.peaks = append([]ratePeak(nil), r.peaks...)
	}
	if cap(r.bounds) > 4*len(r.bounds)+64 {
		r.bounds = append([]ratePeak(nil), r.bounds...)
	}
	// The strict peaks in the horizon (all of them until a strict one was seen) make the estimate; when none is
	// left, the last estimate stands; a faster loose peak raises it.
	m, ok, loose, paused := 0.0, false, 0.0, false
	for _, p := range r.peaks {
		if p.strict || !r.strictSeen {
			if !ok || p.bps > m {
				m, paused = p.bps, p.paused
			}
			ok = true
		} else {
			loose = max(loose, p.bps)
		}
	}
	// Before any window without a pause, the remembered bounds count as the horizon's own do.
	if b := r.bounds; !r.strictSeen && len(b) > 0 && (!ok || b[0].bps > m) {
		m, paused, ok = b[0].bps, b[0].paused, true
	}
	if ok {
		r.last, r.have, r.bound = m, true, paused && !r.strictSeen
	}
	if r.have && loose > r.last {
		r.last, r.bound = loose, false // above a window without a pause: a measurement, whatever its own pauses
	}
	// The estimate's time is the newest window that counts towards it, or a loose one about as fast (a link
	// still carrying traffic at its estimate is measured now, even when the horizon's peak is older).
	for _, p := range r.peaks {
		if (p.strict || !r.strictSeen || p.bps >= confirmShare*r.last) && p.t.After(r.at) {
			r.at = p.t
		}
	}
	if r.have && r.at.After(r.meanAt) {
		r.fold(r.last, r.at)
	}
}

// addPeak adds a window's rate to the horizon's, and a loose one (a pause in it, or shared) to the remembered
// bounds, which keep only windows faster than every later one: the first is the fastest of the BoundHorizon.
func (r *Rate) addPeak(p ratePeak) {
	r.peaks = append(r.peaks, p)
	if p.strict {
		return
	}
	for len(r.bounds) > 0 && r.bounds[len(r.bounds)-1].bps <= p.bps {
		r.bounds = r.bounds[:len(r.bounds)-1]
	}
	r.bounds = append(r.bounds, p)
}

// fold adds the estimate made at at to the long-run mean: as a new measurement once a Span has passed since the
// last one, else in place of the last (slot), which keeps its time. So each Span of traffic counts once, with the
// estimate it ended on: the first window of a busy period holds its slow start, and a short transfer (a page's
// cellular subflow, one page per host beside a slow WiFi) would otherwise leave only that in the mean. Beside a
// 1.5 Mbit/s hotspot the kept level of a 50 Mbit/s LTE path was 1.8-3.7 Mbit/s that way, while the same loads'
// fastest windows read 6-39 Mbit/s, and battery saver's θ2 stayed on a 5 MB page that took 20-23 s.
func (r *Rate) fold(bps float64, at time.Time) {
	if bps <= 0 {
		return
	}
	if r.slot && at.Sub(r.meanAt) < r.Span {
		r.lnMean = r.lnBefore + (math.Log(bps)-r.lnBefore)/float64(r.meanN)
		return
	}
	r.lnBefore = r.lnMean
	r.meanN = min(r.meanN+1, MeanWindow)
	r.lnMean += (math.Log(bps) - r.lnMean) / float64(r.meanN)
	r.meanAt, r.slot = at, true
}

// Mean is the path's long-run rate in bits per second (the geometric mean of its measurements) and how many
// measurements it rests on, at most MeanWindow; n is 0 before the first.
func (r *Rate) Mean() (bps float64, n int) {
	if r.meanN == 0 {
		return 0, 0
	}
	return math.Exp(r.lnMean), r.meanN
}

// SeedMean starts the long-run mean from one kept elsewhere, as n measurements, before this estimator's own.
func (r *Rate) SeedMean(bps float64, n int) {
	if bps > 0 && n > 0 && r.meanN == 0 {
		r.lnMean, r.meanN, r.slot = math.Log(bps), min(n, MeanWindow), false
	}
}

// sustain adds a window without a pause, from..t at bps, to the current busy period's run, and measures the run
// once it covers SustainMin with a loss seen since the period began.
//
// The fastest window (the estimate) is what the link carries while a flow's window is open; under random loss a
// bulk flow holds far less for most of its time. On the 2 % loss WiFi above, the fastest windows read 4.9-7.0
// Mbit/s and the median 2.5-3.3, and a 5 MB page's single-path load took 13.5-16.2 s where the model, taking the
// link at 7 Mbit/s, put it at 6.2 s. On the baseline WiFi without loss, a 2.77 MB page's windows all read 7.0:
// median and fastest agree. The loss is the evidence that the run is the link's and not the sender's pace: a video
// call's steady stream is just as free of pauses, and says nothing of what a page would get. One run is one load,
// and loads of the same lossy link vary twice over, so the model does not weigh it (docs/model.md).
func (r *Rate) sustain(from, t time.Time, bps float64) {
	if !r.runOf.Equal(r.busySince) {
		r.run, r.runFrom, r.runOf = r.run[:0], time.Time{}, r.busySince
	}
	if r.runFrom.IsZero() {
		r.runFrom = from
	}
	r.run = append(r.run, bps)
	if len(r.run) > maxRun {
		r.run = append(r.run[:0], r.run[len(r.run)-maxRun:]...)
	}
	if t.Sub(r.runFrom) < SustainMin || r.lossAt.Before(r.busySince) {
		return
	}
	r.sustained, r.sustainedAt = median(r.run), t
}

// maxRun bounds a run's memory: the last ten minutes of 200 ms samples' windows.
const maxRun = 3000

// median of v (not empty).
func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MarkLoss says that the path's sockets had a segment arrive out of order at t: a loss on the way in.
func (r *Rate) MarkLoss(t time.Time) {
	if t.After(r.lossAt) {
		r.lossAt = t
	}
}

// Sustained is the rate a bulk flow held on the path in its last long busy period with losses (SustainMin, MarkLoss):
// the median of that period's windows without a pause, in bits per second, and when it was measured. ok is false
// when there is none, or it is older than BoundHorizon at the newest sample.
func (r *Rate) Sustained() (bps float64, at time.Time, ok bool) {
	if r.sustained <= 0 || r.lastT.Sub(r.sustainedAt) > r.BoundHorizon {
		return 0, time.Time{}, false
	}
	return r.sustained, r.sustainedAt, true
}

// SeedSustained starts the held rate from one kept elsewhere, measured at at, before this estimator's own.
func (r *Rate) SeedSustained(bps float64, at time.Time) {
	if bps > 0 && r.sustainedAt.IsZero() {
		r.sustained, r.sustainedAt = bps, at
		if at.After(r.lastT) {
			r.lastT = at
		}
	}
}

// shortMinShare: a busy period shorter than the Span counts (Short) once it lasts a tenth of it (two of the
// counter's 50 ms samples beside a cellular path, one of its 200 ms ones otherwise), so that a sample's timing
// error of a few ms moves the bound by a few per cent at most.
const shortMinShare = 10

// confirmShare: a window shared with another path confirms the estimate (renews its time) when it ran at least
// this share of it; one slower says nothing of the link, only of the connection's own pace.
const confirmShare = 0.9

// Seed starts the estimator from an estimate made elsewhere (an earlier host's, kept in the store), as if a window
// without a pause had made it: windows with a pause or shared with another path may raise it but not lower it,
// a window of this path alone may. A host that lives for one multipath load sees only shared windows, and would
// otherwise keep their rate for the next host.
// at is when that estimate was measured: a seed is as old as the measurement it came from.
func (r *Rate) Seed(bps float64, at time.Time) {
	if bps > 0 && !r.have {
		r.last, r.have, r.strictSeen, r.bound, r.at = bps, true, true, false, at
		r.meanAt, r.slot = at, false // a seed is no measurement of this estimator's: the kept mean (SeedMean) has it already
	}
}

// At is when the estimate was last measured (zero before the first): the end of the newest window that set or
// confirmed it, or the seed's time.
func (r *Rate) At() time.Time { return r.at }

// Bound says whether the estimate is only a lower bound on the link: the fastest window behind it had a pause in
// it, and no window of this path alone without a pause was ever seen. A small page's requests and responses make such windows: on the
// AT&T profile's 7 Mbit/s WiFi the first page measured 0.74 Mbit/s, and a 65.7 kB page then went multipath.
func (r *Rate) Bound() bool { return r.have && r.bound }

// BPS is the estimate in bits per second, or nil before the first busy Span.
func (r *Rate) BPS() *float64 {
	if !r.have {
		return nil
	}
	v := r.last
	return &v
}
