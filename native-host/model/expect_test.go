package model

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// expectedSavingRef is expectedSaving as its definition reads: every scenario, its own multipath curve, every size
// above theta through eval.
func (e *evaluation) expectedSavingRef(theta float64) (float64, bool) {
	first, _ := slices.BinarySearch(e.sizes.s, math.Nextafter(theta, math.Inf(1)))
	if first == len(e.sizes.s) {
		return 0, false
	}
	var eu, saved, plt float64
	for i := range e.scens {
		sc := &e.scens[i]
		mp, t0 := e.mpCurve(sc, theta)
		for j := first; j < len(e.sizes.s); j++ {
			a := e.eval(sc, &mp, t0, e.sizes.s[j], sc.tSP[j])
			w := sc.w * e.sizes.w[j]
			eu += w * a.u
			saved += w * a.saved
			plt += w * a.pltSP
		}
	}
	return eu, saved > e.p.Learning.TrialError*plt
}

// The hot loop (grouped scenarios, cursors, buffers) gives what the definition gives, for every candidate θ1 and
// both ways of carrying multipath out, over the recorded inputs and a few by hand: an unsure radio whose states
// share a delay, a 3G radio, WiFi as backup, a θ2 cap, learned corrections.
func TestExpectedSavingAgreesWithDefinition(t *testing.T) {
	p := params(t)
	ins := recordedInputs(150)
	ins = append(ins,
		Input{Protocol: H2, Primary: wifi(), Secondary: lte(), Size: seen(2e6, 20), RRC: &RRC{Tech: "lte", State: "idle", Spread: []RRCShare{
			{State: "idle", SinceMS: 9000, P: 0.4}, {State: "long_drx", SinceMS: 3000, P: 0.55}, {State: "continuous", SinceMS: 50, P: 0.05}}}},
		Input{Protocol: HTTP1, Primary: wifi(), Secondary: g3(), Size: seen(3e6, 5), RRC: g3DCH},
		Input{Protocol: H2, Primary: mk("wifi", 30, 2), Secondary: mk("cellular", 50, 34), Size: seen(1.5e6, 3), RRC: lteConnected},
		Input{Protocol: H2, Primary: wifi(), Secondary: lte(), Size: seen(2e6, 4), RRC: lteIdle, Learned: &Correction{SP: 1, MP: 1.4, SPLoad: 3, MPLoad: 3}},
	)
	pairs := 0
	for n, in := range ins {
		in.Params = p
		if in.Validate() != nil {
			continue
		}
		prefs := protocol.Prefs{Mode: p.Defaults.Mode, DeadlineMS: p.Defaults.DeadlineMS}
		if in.Prefs != nil {
			prefs = *in.Prefs
			if prefs.DeadlineMS <= 0 {
				prefs.DeadlineMS = p.Defaults.DeadlineMS
			}
		}
		w, ok := p.Modes[prefs.Mode]
		if !ok {
			w = p.Modes[p.Defaults.Mode]
		}
		var notes []string
		var theta2 *int64
		if n%4 == 1 {
			theta2 = i64(300_000)
		}
		e := newEvaluation(in, w, prefs, theta2, false, &notes)
		for _, cf := range []bool{false, true} {
			e.cellFirst = cf
			for _, c := range e.candidates() {
				got, gotClear := e.expectedSaving(c)
				want, wantClear := e.expectedSavingRef(c)
				pairs++
				if !closeTo(got, want) || gotClear != wantClear {
					t.Fatalf("input %d θ1 %v cellFirst %v: E[U] %v clear %v, definition %v clear %v", n, c, cf, got, gotClear, want, wantClear)
				}
			}
		}
	}
	if pairs < 5000 {
		t.Errorf("only %d θ1 compared", pairs)
	}
}

// chooseRef is choose from every θ1's E[U], none bounded.
func (e *evaluation) chooseRef() (*float64, float64) {
	cs := e.candidates()
	top := 0.0
	us := make([]float64, len(cs))
	for i, c := range cs {
		u, ok := e.expectedSavingRef(c)
		if !ok {
			u = math.Inf(-1)
		}
		us[i] = u
		top = math.Max(top, u)
	}
	ind := e.p.Theta.IndifferenceS
	if f := e.floor(); f > 0 {
		ind *= e.sizes.above(f)
	}
	if top <= ind {
		return nil, 0
	}
	for i := len(cs) - 1; i >= 0; i-- {
		if us[i] >= top-ind {
			v := cs[i]
			return &v, us[i]
		}
	}
	return nil, 0
}

// The θ1 that choose picks, bounding the θ1 that cannot come within the margin of the best, is the one it picks
// from every θ1's E[U] by definition, both ways of carrying multipath out, over the recorded inputs' kind.
func TestChooseBoundsPickTheSame(t *testing.T) {
	p := params(t)
	n, bounded := 0, 0
	for _, in := range recordedInputs(300) {
		e, ok := recordedEvaluation(p, in)
		if !ok {
			continue
		}
		for _, cf := range []bool{false, true} {
			e.cellFirst = cf
			got, gotU := e.choose()
			want, wantU := e.chooseRef()
			n++
			if (got == nil) != (want == nil) || (got != nil && (*got != *want || !closeTo(gotU, wantU))) {
				t.Fatalf("%s cellFirst %v: θ1 %v (E[U] %v), by definition %v (%v)", in.Origin, cf, showF(got), gotU, showF(want), wantU)
			}
			for _, u := range e.us {
				if math.IsInf(u, -1) {
					bounded++
				}
			}
		}
		// WiFi as backup weighed against the first choice, its θ1 below the first's utility left unweighed: the same
		// answer as from every θ1's E[U].
		e.cellFirst = false
		best, bestU := e.choose()
		pb, pbU := best, bestU
		prefer := e.preferCellular(&pb, &pbU, nil)
		e.cellFirst = true
		cf, cfU := e.chooseRef()
		ind := e.p.Theta.IndifferenceS
		if f := e.floor(); f > 0 {
			ind *= e.sizes.above(f)
		}
		want := !e.promised && cf != nil && (best == nil || cfU > bestU+ind)
		if prefer != want || (want && (*pb != *cf || !closeTo(pbU, cfU))) {
			t.Fatalf("%s: WiFi as backup %v θ1 %v, by definition %v θ1 %v", in.Origin, prefer, showF(pb), want, showF(cf))
		}
	}
	t.Logf("%d choices; %d θ1 bounded or unclear", n, bounded)
}

func showF(p *float64) string {
	if p == nil {
		return "never"
	}
	return fmt.Sprint(*p)
}

// reachOf is max over 0 ≤ y ≤ x of s(y) + top·(x − y), read as groupSum reads it (the first x at which it reaches
// r bytes): on a slow-start curve whose pauses the primary's rate fills, below and above the secondary's rate, a
// curve that starts late, one with a step of no length and one that stops growing.
func TestReachOf(t *testing.T) {
	tr := &Transport{InitialWindow: 10, MSSBytes: 1448, MaxSlowStartRs: 8}
	slowStart := curve(link{rtt: 0.07, rate: 2.4e6}, 0, tr, 1)
	for _, c := range []struct {
		name string
		s    plf
		top  float64
	}{
		{"slow start, primary slower", slowStart, 1.8e5},
		{"slow start, primary nearly as fast", slowStart, 2e6},
		{"slow start, primary faster", slowStart, 4e6},
		{"starts late", curve(link{rtt: 0.05, rate: 1e6}, 0.2, tr, 1), 3e5},
		{"a step of no length", plf{t: []float64{0, 0.1, 0.1, 0.3}, b: []float64{0, 1e4, 6e4, 8e4}, tail: 5e5}, 2e5},
		{"capped", capped(slowStart, 3e5), 1e5},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := reachOf(&c.s, slopes(&c.s), c.top)
			// By definition: for a given x, s(y) − top·y is piecewise linear in y, so its greatest value over [0, x]
			// is at 0, x or a breakpoint of s (each point's own value: after a step, where it has one).
			def := func(x float64) float64 {
				best := math.Max(c.s.at(0)+c.top*x, c.s.at(x))
				for i, y := range c.s.t {
					if y <= x {
						best = math.Max(best, c.s.b[i]+c.top*(x-y))
					}
				}
				return best
			}
			k := 0
			for r := 1e3; r < 3e6; r *= 1.07 {
				for k < len(q.x)-1 && q.v[k+1] < r {
					k++
				}
				x := q.x[k]
				if r > q.v[k] {
					x += (r - q.v[k]) * q.pb[k]
				}
				// x is the first time the definition reaches r.
				if v := def(x); v < r*(1-1e-9) {
					t.Fatalf("r %g: read at %g s, where the definition has %g", r, x, v)
				}
				if x > 1e-6 {
					if v := def(x * (1 - 1e-6)); v >= r {
						t.Fatalf("r %g: read at %g s, but the definition reaches %g just before", r, x, v)
					}
				}
			}
		})
	}
}

// The bound a weighing at one θ1 leaves for larger θ1 (groupSum's ub, as weighBounded sums it) is at least each
// group's E[U] term at every larger θ1, both ways of carrying multipath out, over the recorded inputs' kind: the
// pruning can only give up θ1 that could not have been chosen.
func TestBoundsHold(t *testing.T) {
	p := params(t)
	checked := 0
	for n, in := range recordedInputs(120) {
		e, ok := recordedEvaluation(p, in)
		if !ok {
			continue
		}
		e.groups()
		cs := e.candidates()
		sz := len(e.sizes.s)
		for _, cf := range []bool{false, true} {
			e.cellFirst = cf
			if cf {
				e.backupBounds()
			}
			// term[i][k]: group k's E[U] term at θ1 cs[i]; bound[i][k]: its bound for larger θ1, per size.
			terms := make([][]float64, len(cs))
			bounds := make([][][]float64, len(cs))
			firsts := make([]int, len(cs))
			for i, theta := range cs {
				first, _ := slices.BinarySearch(e.sizes.s, math.Nextafter(theta, math.Inf(1)))
				firsts[i] = first
				if first == sz {
					continue
				}
				for k := range e.grp {
					g := &e.grp[k]
					ub := make([]float64, sz)
					v, _ := e.groupSum(g, theta, first, cf, ub)
					terms[i] = append(terms[i], g.w*v-e.w.EnergyPerJ*g.fixedJW*e.wSuffix[first])
					bounds[i] = append(bounds[i], ub)
				}
			}
			for a := range cs {
				for b := a + 1; b < len(cs); b++ {
					if terms[a] == nil || terms[b] == nil {
						continue
					}
					for k, g := range e.grp {
						bound := -e.w.EnergyPerJ * g.fixedJW * e.wSuffix[firsts[b]]
						for j := firsts[b]; j < sz; j++ {
							bound += e.sizes.w[j] * bounds[a][k][j]
						}
						checked++
						if want := terms[b][k]; bound < want-1e-9*math.Abs(want)-1e-12 {
							t.Fatalf("input %d cellFirst %v group %d: bound from θ1 %v is %v at θ1 %v, whose term is %v",
								n, cf, k, cs[a], bound, cs[b], want)
						}
					}
				}
			}
		}
	}
	if checked < 100000 {
		t.Errorf("only %d bounds checked", checked)
	}
	t.Logf("%d bounds checked", checked)
}

// recordedEvaluation is the evaluation of in (one of recordedInputs) under p, in its preferences' mode (the
// defaults' where it gives none), without a θ2; false where Validate refuses in.
func recordedEvaluation(p *Params, in Input) (*evaluation, bool) {
	in.Params = p
	if in.Validate() != nil {
		return nil, false
	}
	prefs := protocol.Prefs{Mode: p.Defaults.Mode, DeadlineMS: p.Defaults.DeadlineMS}
	if in.Prefs != nil && in.Prefs.Mode != "" {
		prefs = *in.Prefs
	}
	var notes []string
	return newEvaluation(in, p.Modes[prefs.Mode], prefs, nil, false, &notes), true
}
