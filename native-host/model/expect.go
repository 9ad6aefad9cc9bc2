package model

import (
	"math"
	"slices"
)

// The expected utility of a θ1 (expectedSaving) is the model's hot loop: every candidate θ1 (up to ~100), twice
// (WiFi as backup or not), over every link scenario and radio state (up to 27) and every likely size above θ1 (up
// to ~100). A navigation waits for it, on a laptop's battery, so it is computed here without allocating per θ1,
// once per group of scenarios that share a curve (below), walking each curve once per θ1 instead of searching it
// once per size, and only for the θ1 that can be chosen: the others are bounded (utilities), as a whole or after
// a few of their groups. eval stays the definition of one term; expect_test.go checks that the two agree, that the
// bounds hold and that both pick the same θ1, and the recorded decisions (recorded_test.go) that no decision moved:
// a model with 40 loads of history on links from priors took 20.0 million instructions per decision with eval
// alone, 3.1 million with the θ1 bounded as a whole, 1.0 million with the groups bounded one by one and the link
// points' curves shared, 0.58 million with WiFi as backup bounded as tightly (reachOf) (6.4, 1.9 and 1.0 million
// with the radio unsure; valgrind --tool=callgrind, modelbench -case, GOGC=off).

// group is a link scenario with the radio states whose promotion delay is the same: they share the multipath curve
// (the join waits only for the delay) and differ only in the energy every join costs (sc.fixedJ: the promotion and
// the tail it adds). So a group's sizes are evaluated once, its states' probabilities summed (w) and their fixed
// energy weighed apart (fixedJW = Σ w_state × fixedJ_state): E[U] = Σ_groups (w Σ_j w_j v_j − energy_per_j ×
// fixedJW × Σ_j w_j), where v_j is a size's utility without the fixed energy. Two states of the LTE tail (long and
// short DRX, continuous) all have no delay, so an unsure host's three states make two groups, not three.
type group struct {
	sc      *scen // the group's first scenario: curves, rates, the join's timing
	w       float64
	fixedJW float64
	// pltSP[j] and lateSP[j] are size j's single-path page-load time and its seconds past the deadline;
	// pltSuffix[k] = Σ_{j>=k} w_j pltSP[j], for the error check.
	pltSP, lateSP, pltSuffix []float64
	// primSlope and secSlope are the slopes of the scenario's primary and secondary curves, secPB the secondary's
	// time per byte on each segment (past the last point, at its tail; +Inf where it grows no more); mpSlope is
	// secMP's slopes (secSlope where it is secBase).
	primSlope, secSlope, secPB, mpSlope []float64
	// primTop is the primary curve's steepest slope (bytes per second), reach the secondary's curve with the
	// primary's pauses filled in at that rate (reachOf): what bounds the weighing with WiFi as backup at larger θ1.
	// Made by backupBounds, once WiFi as backup is weighed (evaluation.backup).
	primTop float64
	reach   points
}

// groups builds the groups of e.scens: those of one link scenario (consecutive in e.scens) with one delay. Only
// a weighing needs them (utilities, weighOne), not a prediction (PredictLoad, as every report of a load asks), so
// they are built at the first, once.
func (e *evaluation) groups() {
	if e.wSuffix != nil {
		return
	}
	e.grp = make([]group, 0, len(e.scens))
	for i := range e.scens {
		sc := &e.scens[i]
		found := false
		for k := len(e.grp) - 1; k >= 0; k-- {
			g := &e.grp[k]
			if g.sc.prim != sc.prim || g.sc.sec != sc.sec {
				break // another link scenario: groups never span two
			}
			if g.sc.tJoin == sc.tJoin {
				g.w += sc.w
				g.fixedJW += sc.w * sc.fixedJ
				found = true
				break
			}
		}
		if !found {
			e.grp = append(e.grp, group{sc: sc, w: sc.w, fixedJW: sc.w * sc.fixedJ})
		}
	}
	// The curves' slopes and the single-path terms belong to a link point (scen.pi, scen.si): each once, shared by
	// the groups of that point.
	n := len(e.sizes.s)
	type primTerms struct{ slope, pltSP, lateSP, pltSuffix []float64 }
	type secTerms struct{ slope, pb []float64 }
	var prim []*primTerms
	var sec []*secTerms
	var mp [][]float64 // secMP's slopes by scen.mi, where it is a pair's own curve
	for k := range e.grp {
		g := &e.grp[k]
		sc := g.sc
		for len(prim) <= sc.pi {
			prim = append(prim, nil)
		}
		for len(sec) <= sc.si {
			sec = append(sec, nil)
		}
		if prim[sc.pi] == nil {
			buf := make([]float64, 3*n+1)
			pt := &primTerms{slope: slopes(&sc.primSP), pltSP: buf[:n:n], lateSP: buf[n : 2*n : 2*n], pltSuffix: buf[2*n:]}
			for j := range n {
				pt.pltSP[j] = (sc.tSP[j] + e.process) * e.rSP
				pt.lateSP[j] = math.Max(0, pt.pltSP[j]-e.deadline)
			}
			for j := n - 1; j >= 0; j-- {
				pt.pltSuffix[j] = pt.pltSuffix[j+1] + e.sizes.w[j]*pt.pltSP[j]
			}
			prim[sc.pi] = pt
		}
		if sec[sc.si] == nil {
			sp := points{x: make([]float64, 0, len(sc.secBase.t)), v: make([]float64, 0, len(sc.secBase.t)),
				pb: make([]float64, 0, len(sc.secBase.t))}
			for i, t := range sc.secBase.t {
				sp.add(t, sc.secBase.b[i])
			}
			sp.end(sc.secBase.tail)
			sec[sc.si] = &secTerms{slope: slopes(&sc.secBase), pb: sp.pb}
		}
		pt, st := prim[sc.pi], sec[sc.si]
		g.primSlope, g.pltSP, g.lateSP, g.pltSuffix = pt.slope, pt.pltSP, pt.lateSP, pt.pltSuffix
		g.secSlope, g.secPB, g.mpSlope = st.slope, st.pb, st.slope
		if sc.mi != sc.si {
			for len(mp) <= sc.mi {
				mp = append(mp, nil)
			}
			if mp[sc.mi] == nil {
				mp[sc.mi] = slopes(&sc.secMP)
			}
			g.mpSlope = mp[sc.mi]
		}
	}
	e.wSuffix = make([]float64, n+1)
	for j := n - 1; j >= 0; j-- {
		e.wSuffix[j] = e.wSuffix[j+1] + e.sizes.w[j]
	}
}

// backupBounds makes each group's primTop and reach, for the bounds of the weighing with WiFi as backup
// (groupSum). They belong to a scenario's pair of link points: each pair's once, shared by its groups.
func (e *evaluation) backupBounds() {
	nSec := 0
	for k := range e.grp {
		nSec = max(nSec, e.grp[k].sc.si+1)
	}
	type pair struct {
		top   float64
		reach points
		ok    bool
	}
	made := make([]pair, 0, len(e.scens))
	for k := range e.grp {
		g := &e.grp[k]
		i := g.sc.pi*nSec + g.sc.si
		for len(made) <= i {
			made = append(made, pair{})
		}
		if m := &made[i]; !m.ok {
			m.top = g.sc.primSP.tail
			for _, v := range g.primSlope {
				m.top = math.Max(m.top, v)
			}
			m.reach, m.ok = reachOf(&g.sc.secBase, g.secSlope, m.top), true
		}
		g.primTop, g.reach = made[i].top, made[i].reach
	}
}

// reachOf is R(x) = max over 0 ≤ y ≤ x of s(y) + top·(x − y): the most bytes a curve that follows s for y seconds
// and then grows at no more than top can have brought by x. With WiFi as backup, a switch to the secondary at t0'
// brings P(t0') + s(T − t0') by T, and for any t0' ≥ t0, with P no steeper than top, that is at most
// P(t0) + top·(t0' − t0) + s(T − t0') ≤ P(t0) + R(T − t0) (a switch after T: P(T) ≤ P(t0) + top·(T − t0) ≤
// P(t0) + R(T − t0)). So no larger θ1 completes a size s_j earlier than t0 + R⁻¹(s_j − P(t0)). Where the
// secondary outruns the primary, R is the secondary's curve with its slow-start pauses filled in at the
// primary's rate; where it does not, R grows at top from the start. s starts at time 0 (curve), slope are its
// segments' slopes (slopes).
func reachOf(s *plf, slope []float64, top float64) points {
	c := 2*len(s.t) + 2 // the start, two per segment at most (where s catches up, its end), one past the last
	buf := make([]float64, 3*c)
	q := points{x: buf[:0:c], v: buf[c : c : 2*c], pb: buf[2*c : 2*c : 3*c]}
	x, sv := 0.0, s.b[0] // where the walk is, and s there
	rv, on := sv, true   // R there, and whether R = s there (else R is above s, growing at top)
	q.add(x, rv)
	// step walks to x1 over a segment on which s grows at sigma from sv to s1.
	step := func(x1, sigma, s1 float64) {
		switch {
		case x1 == x: // a step of s of no length
			if s1 >= rv {
				rv, on = s1, true
			}
		case on && sigma >= top:
			rv = s1
		case on:
			rv, on = rv+top*(x1-x), false
		case sigma > top && x+(rv-sv)/(sigma-top) < x1:
			// s catches up with R inside the segment, and R follows it from there.
			xc := x + (rv-sv)/(sigma-top)
			q.add(xc, rv+top*(xc-x))
			rv, on = s1, true
		default:
			rv += top * (x1 - x)
		}
		x, sv = x1, s1
		q.add(x, rv)
	}
	if s.t[0] > 0 {
		step(s.t[0], 0, s.b[0])
	}
	for i := range slope {
		step(s.t[i+1], slope[i], s.b[i+1])
	}
	switch tail := s.tail; {
	case on:
		q.end(math.Max(tail, top))
	case tail > top:
		xc := x + (rv-sv)/(tail-top)
		q.add(xc, rv+top*(xc-x))
		q.end(tail)
	default:
		q.end(top)
	}
	return q
}

// utilities are expectedSaving's E[U] of every candidate θ1 (e.cands, ascending), one way of carrying multipath
// out (e.cellFirst), −Inf where the saving is not clear, and −Inf too where E[U] cannot come within ind of the
// best (choose's margin), so that choose picks what it would pick from every E[U]: those are bounded, not weighed.
//
// The bound: without WiFi as backup a later join (a larger θ1: t0 grows with it) never completes a size sooner
// (the secondary's bytes only come later); with it, a later switch completes a size no sooner than the earlier
// t0 plus the group's reach (reachOf), which is the secondary's own curve from t0 wherever the secondary outruns
// the primary (the primary's curve plus the secondary's from t0 bounds it too, but so loosely that nearly every
// θ1 with WiFi as backup would be weighed). A size's terms at any larger θ1 are then at most its time terms at that earliest
// completion (its cellular bytes' cost, at least 0, left out), and at least 0 once it completes by t0 on the
// primary alone. Each group weighed exactly at a θ1 gives that bound
// for the group, summed over the sizes above any larger θ1. A θ1 whose groups' bounds sum short of the best so far
// less ind is not weighed; nor is the rest of one whose groups weighed so far and the bounds of the others do:
// a θ1 is weighed group by group, each group's E[U] replacing its bound, until it cannot come within ind.
//
// A θ1 bounded below floorU is not weighed either (preferCellular: only a weighing better than the first one
// matters).
func (e *evaluation) utilities(ind, floorU float64) []float64 {
	e.groups()
	n := len(e.sizes.s)
	e.us = grow(e.us, len(e.cands))
	e.ub = grow(e.ub, n)
	if len(e.bnd) < len(e.grp) {
		e.bnd = make([]groupBound, len(e.grp))
	}
	for k := range e.grp {
		b := &e.bnd[k]
		b.suffix, b.ok = grow(b.suffix, n+1), false
	}
	if e.cellFirst && !e.backup {
		e.backupBounds()
		e.backup = true
	}
	top := 0.0 // never
	for i, theta := range e.cands {
		first, _ := slices.BinarySearch(e.sizes.s, math.Nextafter(theta, math.Inf(1)))
		if first == n {
			e.us[i] = math.Inf(-1) // no size passes θ1: a zero saving is not clear
			continue
		}
		u, ok := e.weighBounded(theta, first, math.Max(top-ind, floorU))
		if !ok {
			u = math.Inf(-1)
		}
		e.us[i] = u
		top = math.Max(top, u)
	}
	return e.us
}

// groupBound is a group's bound for larger θ1 (utilities): suffix[k] = Σ_{j>=k} w_j ub[j], where ub[j] is the
// bound of size j times the group's probability (groupSum); ok once the group was weighed at some θ1. v and s are
// groupSum's at the θ1 weighed last, term the group's E[U] term there; bound and done are weighBounded's at the θ1
// it weighs.
type groupBound struct {
	suffix            []float64
	ok, done          bool
	v, s, term, bound float64
}

// at is the group's bound on its E[U] term at a θ1 whose first size above it is first.
func (b *groupBound) at(e *evaluation, g *group, first int) float64 {
	return b.suffix[first] - e.w.EnergyPerJ*g.fixedJW*e.wSuffix[first]
}

// weighBounded is weighOne at theta, with WiFi as backup as e.cellFirst says, stopped as soon as the groups
// weighed and the bounds of the rest (utilities) sum below below: then false, as for a saving that is not clear.
// Every group it weighs renews that group's bound. The groups are weighed in the order of how far their bound
// likely overstates their term (the bound less the term the group had where it was last weighed), so that a θ1
// that cannot come within the margin is found so after few groups; their terms are summed in the groups' own
// order once all are weighed, so that E[U] is the same sum whichever order they were weighed in.
func (e *evaluation) weighBounded(theta float64, first int, below float64) (float64, bool) {
	rest := 0.0 // the bounds of the groups not weighed yet; +Inf while one has none
	for k := range e.grp {
		b := &e.bnd[k]
		b.done = false
		if !b.ok {
			rest = inf
			continue
		}
		b.bound = b.at(e, &e.grp[k], first)
		rest += b.bound
	}
	ordered := rest < inf // else the first weighing: every group in its order
	above := e.wSuffix[first]
	n := len(e.sizes.s)
	partial := 0.0
	for i := range e.grp {
		if partial+rest < below {
			return 0, false
		}
		k := i
		if ordered {
			// The group whose bound most exceeds its last term (the first of equals): a θ1 is mostly given up
			// after a few, so picked one at a time rather than sorted.
			k = -1
			for j := range e.grp {
				if b := &e.bnd[j]; !b.done && (k < 0 || b.bound-b.term > e.bnd[k].bound-e.bnd[k].term) {
					k = j
				}
			}
		}
		g, b := &e.grp[k], &e.bnd[k]
		if b.ok {
			rest -= b.bound
		}
		// Later θ1 are larger, their first sizes no smaller: the bound below first is never read again. Each size's
		// bound goes straight into the group's suffix sums, so one buffer (e.ub) serves every group.
		ub := e.ub
		clear(ub[first:])
		b.v, b.s = e.groupSum(g, theta, first, e.cellFirst, ub)
		b.suffix[n] = 0
		for j := n - 1; j >= first; j-- {
			b.suffix[j] = b.suffix[j+1] + e.sizes.w[j]*ub[j]
		}
		b.ok, b.done = true, true
		b.term = g.w*b.v - e.w.EnergyPerJ*g.fixedJW*above
		partial += b.term
	}
	var eu, saved, plt float64
	for k := range e.grp {
		g, b := &e.grp[k], &e.bnd[k]
		eu += g.w*b.v - e.w.EnergyPerJ*g.fixedJW*above
		saved += g.w * b.s
		plt += g.w * g.pltSuffix[first]
	}
	return eu, saved > e.p.Learning.TrialError*plt
}

func grow(x []float64, n int) []float64 {
	if cap(x) < n {
		return make([]float64, n)
	}
	return x[:n]
}

// expectedSaving is E[U] at theta over scenarios and sizes (sizes a connection never takes past theta cost nothing)
// and whether the seconds multipath saves on the sizes that pass theta exceed the model's own error on their
// page-load time (learning.trial_error of the single-path time, in expectation): a smaller saving cannot be told
// from a loss, while the join's energy and bytes are sure. Beside a bursty 3G link the model predicted a 3.5 MB page
// 0.26 s faster of 5.2 s, and multipath made it twice as slow. WiFi as backup or not, as e.cellFirst says.
func (e *evaluation) expectedSaving(theta float64) (float64, bool) {
	first, _ := slices.BinarySearch(e.sizes.s, math.Nextafter(theta, math.Inf(1)))
	if first == len(e.sizes.s) {
		return 0, false
	}
	return e.weighOne(theta, first, e.cellFirst, nil)
}

// expected is E[U] at theta.
func (e *evaluation) expected(theta float64) float64 {
	eu, _ := e.expectedSaving(theta)
	return eu
}

// weighOne is expectedSaving at theta (first: its first size above theta), with WiFi as backup or not; ub, unless
// nil, receives each size's bound for larger θ1 (utilities), summed over the groups with their probabilities.
func (e *evaluation) weighOne(theta float64, first int, cellFirst bool, ub []float64) (float64, bool) {
	e.groups()
	above := e.wSuffix[first]
	var eu, saved, plt float64
	for k := range e.grp {
		g := &e.grp[k]
		v, s := e.groupSum(g, theta, first, cellFirst, ub)
		eu += g.w*v - e.w.EnergyPerJ*g.fixedJW*above
		saved += g.w * s
		plt += g.w * g.pltSuffix[first]
	}
	return eu, saved > e.p.Learning.TrialError*plt
}

// groupSum is Σ_j w_j v_j and Σ_j w_j saved_j over the sizes from first on, for g's curves at theta, WiFi as
// backup or not: eval's terms without the join's fixed energy. The multipath curve is built only as far as the
// largest size, as points (time, bytes, time per byte to the next): without WiFi as backup the points of the
// primary's curve and of the secondary's shifted one, merged as sum merges them; with it, past t0 the primary's
// bytes at t0 plus the secondary's own curve from t0 (mpCurve's capped primary never grows after t0). ub, unless
// nil, gets g.w times each size's bound for larger θ1 added (utilities).
func (e *evaluation) groupSum(g *group, theta float64, first int, cellFirst bool, ub []float64) (vSum, sSum float64) {
	sc := g.sc
	tReq := math.Max(sc.tEst, sc.primSP.inv(theta)) + e.p.Multipath.ReactMS/1000
	t0 := tReq + sc.tJoin
	s := e.sizes.s
	// A size the primary alone completes by t0 gains nothing and puts no byte on the secondary: its terms are 0.
	j := first
	c := sc.primSP.at(t0)
	if s[j] <= c {
		k, _ := slices.BinarySearch(s[j:], math.Nextafter(c, math.Inf(1)))
		j += k
		if j == len(s) {
			return 0, 0
		}
	}
	// The completion's curve: without WiFi as backup the merged one; with it, the secondary's own from t0 on top of
	// c, read through its time per byte (secPB); for the bound with WiFi as backup, c plus the group's reach from
	// t0 (reachOf), which no later switch to the secondary exceeds: px, pv, pb read size s_j at s_j − pOff, pT
	// later.
	var px, pv, pb []float64
	pOff, pT := 0.0, 0.0
	if !cellFirst {
		e.ptsN.merged(&sc.primSP, g.primSlope, &sc.secMP, g.mpSlope, t0+sc.secUseful, sc.hol, s[len(s)-1])
		px, pv, pb = e.ptsN.x, e.ptsN.v, e.ptsN.pb
	} else if ub != nil {
		px, pv, pb = g.reach.x, g.reach.v, g.reach.pb
		pOff, pT = c, t0
	}
	lastP, kp := len(px)-1, 0
	secT, secB, secPB := sc.secBase.t, sc.secBase.b, g.secPB
	lastC := len(secT) - 1
	// The raw bytes by completion are read off secMP without WiFi as backup, secBase with it (secCurve).
	raw, share := sc.secCurve(cellFirst)
	rawS := g.mpSlope
	if cellFirst {
		rawS = g.secSlope
	}
	rawT, rawB, rawTail := raw.t, raw.b, raw.tail
	lastS := len(rawT) - 1
	kc, si := 0, 0
	w := e.w
	// v = T saved + L late − E (activeW raw / rate + wifiJ) − C share raw / 1e6, with wifiJ = −wifiW
	// max(0, tSP − tMP): the secondary's raw bytes' price per byte and the WiFi time's per second.
	perByte := w.EnergyPerJ*sc.activeW/sc.sec.rate + share*w.CellPerMB/1e6
	perWiFiS := w.EnergyPerJ * e.wifiW
	sw, tSPs, pltSP, lateSP := e.sizes.w, sc.tSP, g.pltSP, g.lateSP
	process, deadline, rMP0, rSP := e.process, e.deadline, e.rMP, e.rSP
	rMin := math.Min(rMP0, rSP)
	timeW, lateW := w.TimePerS, w.LatePerS
	for ; j < len(s); j++ {
		sj, tSP := s[j], tSPs[j]
		// tCurve: the completion on the merged curve (without WiFi as backup: the completion itself; with it: the
		// bound's earliest completion).
		tCurve := tSP
		if px != nil {
			r := sj - pOff
			for kp < lastP && pv[kp+1] < r {
				kp++
			}
			tCurve = pT + px[kp]
			if r > pv[kp] {
				tCurve += (r - pv[kp]) * pb[kp]
			}
		}
		tMP := tCurve
		if cellFirst {
			r := sj - c
			for kc < lastC && secB[kc+1] < r {
				kc++
			}
			tMP = t0 + secT[kc]
			if r > secB[kc] {
				tMP += (r - secB[kc]) * secPB[kc]
			}
		}
		if tSP < tMP {
			tMP = tSP
		}
		// The secondary's raw bytes by tMP (its curve from t0).
		x := tMP - t0
		rawBytes := rawB[0]
		if x > rawT[0] {
			for si < lastS && rawT[si+1] <= x {
				si++
			}
			if si == lastS {
				rawBytes = rawB[lastS] + rawTail*(x-rawT[lastS])
			} else {
				rawBytes = rawB[si] + rawS[si]*(x-rawT[si])
			}
		}
		rMP := rMP0
		if rawBytes <= 0 {
			rMP = rSP
		}
		pltMP := (tMP + process) * rMP
		saved := pltSP[j] - pltMP
		lateMP := pltMP - deadline
		if lateMP < 0 {
			lateMP = 0
		}
		wifiS := tSP - tMP
		if wifiS < 0 {
			wifiS = 0
		}
		vSum += sw[j] * (timeW*saved + lateW*(lateSP[j]-lateMP) - perByte*rawBytes + perWiFiS*wifiS)
		sSum += sw[j] * saved
		if ub != nil {
			// The bound for any later t0: the time terms at the earliest completion tCurve, at the lower of the two
			// page-load corrections, no cellular cost; never below 0 (a size past t0 costs nothing).
			tb := tCurve // min(tCurve, tSP), neither NaN, without math.Min's call
			if tSP < tb {
				tb = tSP
			}
			pltB := (tb + process) * rMin
			lateB := pltB - deadline
			if lateB < 0 {
				lateB = 0
			}
			if bound := timeW*(pltSP[j]-pltB) + lateW*(lateSP[j]-lateB) + perWiFiS*(tSP-tb); bound > 0 {
				ub[j] += g.w * bound
			}
		}
	}
	return vSum, sSum
}

// slopes are a curve's segment slopes (bytes per second): slopes[i] on [t[i], t[i+1]], 0 on a segment of no length.
func slopes(f *plf) []float64 {
	out := make([]float64, max(len(f.t)-1, 0))
	for i := range out {
		if dt := f.t[i+1] - f.t[i]; dt > 0 {
			out[i] = (f.b[i+1] - f.b[i]) / dt
		}
	}
	return out
}

// points is a nondecreasing piecewise-linear curve as its inverse reads it: points (x[k], v[k]) and pb[k], the time
// per byte from point k to the next (past the last point, at the curve's tail; +Inf where it grows no more; 0 on a
// step of no length). The evaluation keeps one and rebuilds it for every group and θ1 without allocating.
type points struct {
	x, v, pb []float64
}

func (p *points) reset() { p.x, p.v, p.pb = p.x[:0], p.v[:0], p.pb[:0] }

// add appends a point; the previous point's time per byte is set from it.
func (p *points) add(x, v float64) {
	if n := len(p.x); n > 0 {
		p.pb[n-1] = 0
		if v > p.v[n-1] {
			p.pb[n-1] = (x - p.x[n-1]) / (v - p.v[n-1])
		}
	}
	p.x, p.v, p.pb = append(p.x, x), append(p.v, v), append(p.pb, 0)
}

// end sets the last point's time per byte from the tail's slope (bytes per second).
func (p *points) end(slope float64) {
	p.pb[len(p.pb)-1] = inf
	if slope > 0 {
		p.pb[len(p.pb)-1] = 1 / slope
	}
}

// merged is f(x) + h g(x − d) (g 0 before its start), on the union of the two curves' breakpoints, as far as the
// first point that reaches upTo: mpCurve's sum of the primary's curve and the secondary's shifted by d.
func (p *points) merged(f *plf, fs []float64, g *plf, gs []float64, d, h, upTo float64) {
	// Built in a local copy and stored once: each append to the evaluation's own slices would pass a write barrier
	// while the collector runs.
	q := *p
	q.reset()
	fi, gi := 0, 0 // the next breakpoint of each not yet added
	for fi < len(f.t) || gi < len(g.t) {
		var x, v float64
		if gi < len(g.t) && (fi == len(f.t) || g.t[gi]+d < f.t[fi]) {
			x = g.t[gi] + d
			v = seg(f, fs, fi, x) + h*g.b[gi]
			gi++
		} else {
			x = f.t[fi]
			gv := seg(g, gs, gi, x-d)
			if gi < len(g.t) && g.t[gi]+d == x {
				gv = g.b[gi]
				gi++
			}
			v = f.b[fi] + h*gv
			fi++
		}
		q.add(x, v)
		if v >= upTo {
			// Every size is reached by this point: the rest of the curve is never read.
			q.pb[len(q.pb)-1] = 0
			*p = q
			return
		}
	}
	q.end(f.tail + h*g.tail)
	*p = q
}

// seg is a curve's value at x on the segment that ends at breakpoint next (its tail past the last breakpoint),
// 0 before its first.
func seg(f *plf, fs []float64, next int, x float64) float64 {
	switch {
	case next == 0:
		return 0
	case next == len(f.t):
		return f.b[next-1] + f.tail*(x-f.t[next-1])
	}
	return f.b[next-1] + fs[next-1]*(x-f.t[next-1])
}
