package model

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/radio"
)

// Evaluate decides for one origin, now. It reads nothing but its input, and refuses an input that fails Validate
// rather than decide from it. A user's site rule (Input.Override) has the last word, but the terms still show what
// the model would have weighed.
func Evaluate(in Input) (Output, error) {
	if err := in.Validate(); err != nil {
		return Output{}, err
	}
	out := evaluate(in)
	switch in.Override {
	case OverrideAlways:
		if out.Protocol == H3 {
			out.Reason = "your site rule says always, but " + out.Reason
			break
		}
		out.Multipath, out.Theta1, out.Rule = true, protocol.Bytes(0), true
		out.Reason = "your site rule: always multipath on this site"
	case OverrideNever:
		out.Multipath, out.Theta1, out.Rule, out.PreferCellular = false, nil, true, false
		out.Reason = "your site rule: never multipath on this site"
	}
	if len(out.Reason) > protocol.MaxReasonLen {
		out.Reason = strings.ToValidUTF8(out.Reason[:protocol.MaxReasonLen-3], "") + "..."
	}
	return out, nil
}

func evaluate(in Input) Output {
	p := in.Params
	prefs := protocol.Prefs{Mode: p.Defaults.Mode, DeadlineMS: p.Defaults.DeadlineMS,
		BatteryFloorPercent: p.Defaults.BatteryFloorPercent, ChargingUnlimited: p.Defaults.ChargingUnlimited}
	if in.Prefs != nil {
		prefs = *in.Prefs
	}
	if prefs.DeadlineMS <= 0 {
		prefs.DeadlineMS = p.Defaults.DeadlineMS
	}
	w, ok := p.Modes[prefs.Mode]
	if !ok {
		prefs.Mode = p.Defaults.Mode
		w = p.Modes[prefs.Mode]
	}
	out := Output{DeadlineMS: prefs.DeadlineMS, Size: in.Size, Mode: prefs.Mode}
	var notes []string
	switch in.Protocol {
	case H2, HTTP1, H3:
		out.Protocol = in.Protocol
	default:
		out.Protocol = Unknown
		notes = append(notes, "protocol unknown, assumed h2")
	}
	rule := func(reason string, t Term) Output {
		out.Rule, out.Reason, out.Terms = true, reason, []Term{t}
		return out
	}
	if out.Protocol == H3 {
		return rule("h3: QUIC runs over UDP, not TCP, so MPTCP does not apply; single path",
			Term{Name: "protocol", Note: "h3 (QUIC): MPTCP is a TCP extension; nothing to decide"})
	}

	// θ2 and the weight of a cellular megabyte, from the quota. modeCap: θ2 is battery-saver mode's own cap, not
	// the user's bill, and the model may lift it.
	modeCap := false
	if prefs.QuotaBytes != nil {
		used, days := int64(0), int64(1)
		if in.Usage != nil {
			used = in.Usage.UsedBytes
			days = max(in.Usage.DaysLeft, 1)
		}
		remaining := max(*prefs.QuotaBytes-used, 0)
		cap := int64(float64(remaining) / float64(days) / p.Quota.PagesPerDay)
		out.Theta2 = &cap
		scarcity := p.Quota.ScarcityMax
		if remaining > 0 {
			scarcity = math.Min(scarcity, float64(*prefs.QuotaBytes)/float64(remaining))
		}
		w.CellPerMB *= math.Max(1, scarcity)
	} else if prefs.Mode == BatterySaver {
		cap := p.Quota.BatterySaverCapBytes
		out.Theta2, modeCap = &cap, true
	}
	charging := in.Battery != nil && in.Battery.Present && in.Battery.Charging
	if charging && prefs.ChargingUnlimited {
		w.EnergyPerJ = 0
	}
	if b := in.Battery; b != nil && b.Present && !b.Charging && b.Percent < float64(prefs.BatteryFloorPercent) {
		return rule("on battery at "+strconv.FormatFloat(b.Percent, 'f', 0, 64)+" %, below the floor of "+
			strconv.FormatInt(prefs.BatteryFloorPercent, 10)+" %: single path",
			term("battery_percent", b.Percent, "%", "below the user's floor: no multipath"))
	}
	if out.Theta2 != nil && *out.Theta2 == 0 {
		return rule("cellular quota used up: single path", term("theta2", 0, "B", "no cellular bytes left this cycle"))
	}
	if s := in.Secondary; s != nil && !s.Up {
		return rule("no cellular path is up: single path", Term{Name: "secondary", Note: s.Name + " is down"})
	}

	if prefs.Mode == BatterySaver && !p.BaselineMultipath {
		return rule("battery saver: the network-wide policy takes no multipath, and this mode spends no more than it",
			Term{Name: "mode", Note: "battery saver keeps within the network-wide policy " + p.BaselineID})
	}
	e := newEvaluation(in, w, prefs, out.Theta2, modeCap, &notes)
	if e.capLifted {
		out.Theta2 = nil
		notes = append(notes, "no cellular cap: over this slow primary each cellular MB saves more than it costs")
	}
	out.Prior = e.prior
	best, bestU := e.choose()
	out.PreferCellular = e.preferCellular(&best, &bestU, out.Theta2)
	trial := false
	if best == nil {
		if u, ok := e.trial(in.Learned); ok {
			zero := 0.0
			best, bestU, trial = &zero, u, true
		}
	}
	if best == nil {
		out.Expected = 0
	} else {
		out.Theta1, out.Expected = protocol.Bytes(int64(math.Ceil(*best))), bestU
	}
	if e.promised && best != nil && *best <= p.BaselineTheta1 {
		notes = append(notes, "battery saver: no earlier than the network-wide θ1")
	}
	e.explain(&out, best, bestU)
	if trial {
		out.Trial = true
		what := "a loss"
		if bestU > 0 {
			what = "a saving"
		}
		out.Reason = "multipath to learn: " + out.Reason + "; the model predicted " + what + " smaller than its own error, and " +
			"this site's measured multipath loads will settle it"
	}
	if len(notes) > 0 {
		out.Reason += "; " + strings.Join(notes, "; ")
	}
	return out
}

// evaluation is one decision's fixed parts: the link scenarios, the size distribution, the weights.
type evaluation struct {
	p        *Params
	w        Weights
	deadline float64 // s
	scens    []scen
	sizes    dist
	typical  float64 // the page's typical size: the observed median, or the prior's
	observed bool    // typical is an observation of this page or origin
	seen     bool    // this page's own path class has loads (or its size is exact): only then may θ1 be 0
	conns    float64 // parallel connections the page's bytes spread over, each with its own θ2 cap (θ1 counts them together)
	process  float64 // the browser's processing time of this page, s
	rSP, rMP float64 // learned corrections: single-path page-load times stay as predicted (1), multipath ones by rMP
	prior    bool
	// cellFirst: the primary subflow becomes a backup once the secondary is up (Output.PreferCellular), so the
	// curves have the secondary carry every byte from then on.
	cellFirst bool
	states    []weightedState // the cellular radio's states, each with its probability (one when it is sure)
	wifiW     float64
	// grp are the scenarios grouped by shared curves and wSuffix[k] the probability of the sizes from k on
	// (expect.go).
	grp     []group
	wSuffix []float64
	ptsN    points
	// capLifted: battery-saver mode's θ2 was lifted (capYields: the cellular path alone outruns both, and a
	// cellular byte past the cap pays for itself).
	capLifted bool
	// cands are the θ1 choose weighs; us, ub and bnd utilities' buffers.
	cands []float64
	us    []float64
	ub    []float64
	bnd   []groupBound
	// backup: the groups' bounds with WiFi as backup are made (backupBounds).
	backup bool
	// promised: battery-saver mode, which promises the user no more cellular data and radio energy than the
	// network-wide policy (Params.BaselineTheta1): θ1 is never below that policy's, and WiFi is never made a
	// backup (floor, preferCellular).
	promised bool
}

// scen is one link scenario: both paths' numbers, with its probability.
type scen struct {
	w         float64
	prim, sec link
	primSP    plf // the page's connections over the primary alone
	// secBase is the secondary subflows' raw bytes from their first data, capped at θ2: with WiFi as backup
	// (cellFirst) every byte the secondary's link delivers is the page's. Beside a primary that keeps carrying its
	// share (the merged curve) only hol of them are (below), and secMP is the raw curve capped where those reach
	// θ2: the helper caps the bytes the subflow carries, not the link's.
	secBase, secMP plf
	tEst           float64
	tJoin          float64 // request to the secondary's first data byte: promotion, join, first data
	secUseful      float64 // head-of-line: the secondary's bytes count towards completion this much later
	// hol is the share of the secondary's raw bytes (its link's curve) that shorten the transfer
	// (MultipathParams.HOL). It is also the share the subflow carries: the primary runs at its own rate, the page
	// is complete when primary + hol × raw bytes reach its size, and the bytes add up, so the subflow carries
	// hol × raw of them; the rest of its link's time it waits on the in-order stream. The testbed's multipath
	// loads of a 5 MB page beside a 1.5 Mbit/s hotspot carried 4.5-5.3 MB over the cellular path, where a
	// battery-saver decision that counted raw bytes (hol 0.29 there) put 12.4 MB on it. The radio is active all
	// that time: energy counts raw bytes.
	hol     float64
	fixedJ  float64   // cellular energy every join costs: promotion, the join itself, the tail it adds
	activeW float64   // cellular radio power while the subflow carries data
	tSP     []float64 // single-path transfer time of each size of the distribution
	rrc     string    // the radio's state in this scenario
	// pi and si are the indices of its primary's and secondary's link points: the scenarios of one link point
	// share its curve (primSP, secBase and tSP are the same slices), whatever the other link and the radio.
	// mi indexes secMP's curve: si where it is secBase (no θ2, or hol 1), else one of the pair (pi, si).
	pi, si, mi int
}

func newEvaluation(in Input, w Weights, prefs protocol.Prefs, theta2 *int64, modeCap bool, notes *[]string) *evaluation {
	p := in.Params
	tr := &p.Transport
	e := &evaluation{p: p, w: w, deadline: float64(prefs.DeadlineMS) / 1000, conns: 1, rSP: 1, rMP: 1,
		promised: prefs.Mode == BatterySaver}
	if in.Protocol == HTTP1 {
		e.conns = p.HTTP1.Connections
		if in.Conns > 0 {
			e.conns = math.Min(float64(in.Conns), p.HTTP1.Connections)
		}
	}
	tech := radio.LTE
	if in.Secondary != nil && in.Secondary.Kind == "cellular" && in.RRC != nil && in.RRC.Tech != "" {
		tech = in.RRC.Tech
	} else if in.RRC != nil && in.RRC.Tech != "" {
		tech = in.RRC.Tech
	}
	rm, ok := p.Radios[tech]
	if !ok {
		tech = radio.LTE
		rm = p.Radios[tech]
		*notes = append(*notes, "cellular technology unknown, assumed LTE")
	}
	e.states = radioStates(rm, in.RRC, notes)
	threeG := tech == radio.ThreeG
	if wm, ok := p.Radios[radio.WiFi]; ok && (in.Primary == nil || in.Primary.Kind != "ethernet") {
		e.wifiW = activeW(wm, 0)
	}
	primKind := "wifi"
	if in.Primary != nil && in.Primary.Kind == "ethernet" {
		primKind = "ethernet"
	}
	prims, pp := linkPoints(in.Primary, p.Priors[primKind], tr, nil)
	secs, sp := linkPoints(in.Secondary, p.Priors[tech], tr, &p.RateMemory)
	e.prior = pp || sp
	if s := in.Secondary; s != nil && s.DownBps != nil && s.DownAgeS != nil {
		if rho := p.RateMemory.Rho(*s.DownAgeS); rho < 0.95 {
			against := "the prior"
			if s.DownMeanBps != nil && s.DownMeanN > 0 {
				against = "the link's level over " + strconv.FormatInt(s.DownMeanN, 10) + " measurements (" +
					strconv.FormatFloat(*s.DownMeanBps/1e6, 'f', 1, 64) + " Mbit/s)"
			}
			*notes = append(*notes, "cellular rate measured "+strconv.FormatFloat(*s.DownAgeS, 'f', 0, 64)+" s ago, "+
				strconv.FormatFloat(100*rho, 'f', 0, 64)+" % of it kept against "+against)
		}
	}
	cap := math.Inf(1)
	if theta2 != nil {
		cap = float64(*theta2) * e.conns
		if modeCap && !pp && e.capYields(prims, secs, rm, threeG) {
			cap, e.capLifted = math.Inf(1), true
		}
	}
	// Each link point's curve once: a scenario's primary curve depends on its primary alone, its secondary's on
	// its secondary alone.
	primSP, secRaw, secBase := make([]plf, len(prims)), make([]plf, len(secs)), make([]plf, len(secs))
	for i, a := range prims {
		primSP[i] = curve(a.l, firstByte(a.l.rtt, tr), tr, e.conns)
	}
	for i, b := range secs {
		secRaw[i] = curve(b.l, 0, tr, e.conns)
		secBase[i] = capped(secRaw[i], cap)
	}
	e.scens = make([]scen, 0, len(prims)*len(secs)*len(e.states))
	for ia, a := range prims {
		for ib, b := range secs {
			first := len(e.scens)
			for _, st := range e.states {
				sc := e.scenario(a, b, st.s, a.w*b.w*st.w, threeG, rm, primSP[ia], secBase[ib])
				sc.pi, sc.si, sc.mi = ia, ib, ib
				e.scens = append(e.scens, sc)
			}
			// θ2 counts the bytes the subflow carries, hol of its link's (scen.hol): the pair's own curve, capped
			// where those reach θ2. A 3G subflow's hol of 0 never reaches it.
			if h := e.scens[first].hol; !math.IsInf(cap, 1) && h < 1 {
				mp := secRaw[ib]
				if h > 0 {
					mp = capped(mp, cap/h)
				}
				for k := first; k < len(e.scens); k++ {
					e.scens[k].secMP, e.scens[k].mi = mp, len(secs)+ia*len(secs)+ib
				}
			}
		}
	}
	e.sizes, e.typical, e.observed = sizeDist(p, in.Size)
	e.seen = in.Size.ownLoads()
	n := len(e.sizes.s)
	tSP := make([]float64, len(prims)*n)
	for i := range prims {
		for j, s := range e.sizes.s {
			tSP[i*n+j] = primSP[i].inv(s)
		}
	}
	for i := range e.scens {
		sc := &e.scens[i]
		sc.tSP = tSP[sc.pi*n : (sc.pi+1)*n : (sc.pi+1)*n]
	}
	objects := max(float64(in.Size.Objects), 1)
	e.process = (p.Page.ProcessingMS + p.Page.ProcessingMSPerObject*(objects-1)) / 1000
	// What the origin's loads taught changes the decision only where multipath and single-path loads erred
	// differently: an error both share (a slow page, a busy machine) says nothing about multipath. So it takes
	// loads of both kinds, and moves the multipath time by the ratio of their corrections.
	if c := in.Learned; c != nil && float64(c.SPLoad) >= p.Learning.MinLoads && float64(c.MPLoad) >= p.Learning.MinLoads {
		e.rMP = math.Min(math.Max(c.MP/c.SP, 1/p.Learning.MaxFactor), p.Learning.MaxFactor)
	}
	return e
}

// scenario is one link scenario: links a and b with the radio in state rs, of probability w.
// primSP and secBase are the curves of a alone and of b alone (capped at θ2), which the scenario shares.
func (e *evaluation) scenario(a, b weighted, rs radioState, w float64, threeG bool, rm *radio.Model, primSP, secBase plf) scen {
	p := e.p
	tr := &p.Transport
	s := scen{w: w, prim: a.l, sec: b.l, rrc: rs.name, primSP: primSP, secBase: secBase, secMP: secBase}
	s.tEst = tr.EstablishedRTTs * a.l.rtt
	// The join's SYN waits for the radio; the server may send on the subflow once the join's last ACK has
	// reached it, and that data needs the other half of a round trip.
	s.tJoin = rs.delay + (tr.JoinRTTs+1)*b.l.rtt
	// Bytes on the slower path arrive that much later than the same bytes would have on the primary, and
	// in-order delivery waits for them.
	s.secUseful = math.Max(0, b.l.rtt-a.l.rtt) / 2
	s.hol = p.Multipath.HOL(b.l.rate / a.l.rate)
	if threeG {
		s.hol = p.Multipath.HOLDiscount3G
	}
	s.activeW = activeW(rm, b.l.rate*8)
	s.fixedJ = rs.promotionJ + s.activeW*tr.JoinRTTs*b.l.rtt + rs.tailExtensionJ()
	return s
}

// capYields says whether battery-saver mode's θ2 should yield: where the cellular path alone outruns both
// paths together (its rate r times the primary's, r·(1 − HOL(r)) > 1, the case preferCellular weighs: about 3x the
// WiFi's rate), a cap sends the rest of a large page back over a path several times slower; the held-out decisions
// runs measured battery-saver loads of a 5 MB page beside a 1.5 Mbit/s hotspot at 18-20 s capped against 3-4.5 s for
// always-multipath (e2e/RESULTS.md, Decisions). There it yields if a cellular byte past the cap is worth more than
// it costs, in expectation over the link points: a byte the capped secondary no longer carries is carried by the
// primary alone, 1/rate_primary seconds (and the WiFi radio's power over them), of which the head-of-line share
// counts; carried over cellular it costs the radio's active power for 1/rate_secondary seconds and the megabyte's
// weight for the share of it the subflow carries (scen.hol; linear in the byte, so no cap in between is better than
// one of the two). Beside a primary nearly as fast
// as the cellular path the cap stays: it is battery saver's hedge against joins whose energy the model counts at
// the margin of a radio it believes awake, and lifting it there took 4 of the seeds' 13 pages onto cellular at a
// loss under battery saver's weights. Only a measured primary counts: the WiFi prior's spread puts a sixth of its
// weight on a 1.5 Mbit/s link.
func (e *evaluation) capYields(prims, secs []weighted, rm *radio.Model, threeG bool) bool {
	if threeG {
		return false // HOLDiscount3G: a 3G subflow's bytes do not shorten a load
	}
	w, mp := e.w, &e.p.Multipath
	sum, pa, pb := 0.0, weighted{}, weighted{}
	for _, a := range prims {
		if a.w > pa.w {
			pa = a
		}
		for _, b := range secs {
			if b.w > pb.w {
				pb = b
			}
			hol := mp.HOL(b.l.rate / a.l.rate)
			saved := (w.TimePerS + w.EnergyPerJ*e.wifiW) * hol / a.l.rate
			cost := w.EnergyPerJ*activeW(rm, b.l.rate*8)/b.l.rate + hol*w.CellPerMB/1e6
			sum += a.w * b.w * (saved - cost)
		}
	}
	r := pb.l.rate / pa.l.rate
	return r*(1-mp.HOL(r)) > 1 && sum > 0
}

// weighted is a link and its probability.
type weighted struct {
	l link
	w float64
}

// ghNodes are the 3-point Gauss-Hermite nodes and weights for a standard normal: exact for polynomials up to
// degree 5, the smallest rule that sees both tails of an uncertain rate.
var ghNodes = []struct{ z, w float64 }{{-math.Sqrt(3), 1.0 / 6}, {0, 2.0 / 3}, {math.Sqrt(3), 1.0 / 6}}

// linkPoints is a path as the scenarios see it: its measured numbers (one point, or three when its rate has a
// spread), or the prior's where a number is missing. prior says whether the prior supplied the rate: so it does
// when the measurement is so old (mem) that less than half of it is kept and the link has too few measurements
// for a level of its own (Path.DownMeanN). A measured loss caps only a prior rate
// (the Mathis et al. bound): a measured rate already is what the loss left, and the losses a flow causes itself
// in a drop-tail queue would make the bound a gross underestimate of the link.
func linkPoints(p *Path, pr LinkPrior, tr *Transport, mem *RateMemory) ([]weighted, bool) {
	rtt, rate, loss, spread := pr.RTTMS/1000, pr.DownMbit*1e6/8, pr.Loss, pr.Spread
	prior := true
	if p != nil {
		if p.RTTMS != nil {
			rtt = *p.RTTMS / 1000
		}
		if p.Loss != nil {
			loss = *p.Loss
		}
		if p.DownBps != nil && !(p.DownBound && *p.DownBps < pr.DownMbit*1e6) {
			rate, spread, prior, loss = *p.DownBps/8, p.Spread, false, 0
			if mem != nil && p.DownAgeS != nil {
				// A cellular rate measured a while ago: the log-normal's conditional given that measurement, around
				// the link's own level where its measurements give one (they weigh n/(n+mean_pseudo_count) against
				// the prior's median), else around the prior's.
				rho := mem.Rho(*p.DownAgeS)
				mu, own := math.Log(pr.DownMbit*1e6/8), 0.0
				if p.DownMeanBps != nil && p.DownMeanN > 0 && mem.MeanPseudoCount > 0 {
					n := float64(p.DownMeanN)
					own = n / (n + mem.MeanPseudoCount)
					mu = own*math.Log(*p.DownMeanBps/8) + (1-own)*mu
				}
				rate = math.Exp(mu + rho*(math.Log(rate)-mu))
				spread = math.Sqrt(rho*rho*spread*spread + (1-rho*rho)*pr.Spread*pr.Spread)
				prior = rho < 0.5 && own < 0.5
			}
		}
	}
	mk := func(r float64) link {
		l := link{rtt: rtt, rate: r}
		if loss > 0 {
			if m := tr.MSSBytes / rtt * tr.MathisC / math.Sqrt(loss); m < l.rate {
				l.rate = m
			}
		}
		return l
	}
	if spread <= 0 {
		return []weighted{{mk(rate), 1}}, prior
	}
	out := make([]weighted, 0, len(ghNodes))
	for _, n := range ghNodes {
		out = append(out, weighted{mk(rate * math.Exp(spread*n.z)), n.w})
	}
	return out, prior
}

// dist is a discrete size distribution: sizes in bytes, ascending, and their probabilities.
type dist struct {
	s, w []float64
}

// sizeDist makes the page's size distribution from the observed levels and the prior: the path class's loads
// weigh n/(n+k), the origin's other loads take that share of the rest (k: pseudo_count), the user's loads on
// other origins n/(n+others_pseudo_count) of what is left, the prior what remains. The prior is a mixture: cold
// loads like the landing pages (1 - warm_share) and warm-cache loads around warm_p50_bytes (warm_share).
// typical is the observed median of the nearest level with loads, else the prior's median.
func sizeDist(p *Params, sz Size) (d dist, typical float64, observed bool) {
	if sz.Exact && sz.Median != nil {
		v := float64(*sz.Median)
		return dist{s: []float64{v}, w: []float64{1}}, v, true
	}
	k := p.Sizes.PseudoCount
	rest := 1.0
	// Every size's share, in the order they are added: a size that comes twice sums its shares in that order
	// (merged), as adding them up one by one would.
	m := make([]point, 0, len(sz.Points)+len(sz.Origin)+len(sz.Others)+1+2*p.Sizes.PriorPoints)
	add := func(pts []int64, share float64) {
		for _, v := range pts {
			m = append(m, point{s: float64(v), w: share / float64(len(pts))})
		}
	}
	for i, level := range [][]int64{sz.Points, sz.Origin} {
		if len(level) == 0 {
			continue
		}
		n, k := float64(len(level)), k
		if i == 0 {
			k = p.Sizes.ClassPseudoCount
		}
		share := rest * n / (n + k)
		add(level, share)
		rest -= share
		if !observed {
			typical, observed = medianOf(level), true
		}
	}
	// A size known only as a median (an older log, the decide command's --size) is one observation.
	if len(sz.Points) == 0 && len(sz.Origin) == 0 && sz.Known && sz.Median != nil {
		share := rest * 1 / (1 + k)
		m = append(m, point{s: float64(*sz.Median), w: share})
		rest -= share
		typical, observed = float64(*sz.Median), true
	}
	// The user's pages elsewhere stand between the site and the landing-page prior: a page never seen is drawn
	// from what this user loads (article lists as well as galleries), which the prior of landing pages is not.
	if n := float64(len(sz.Others)); n > 0 {
		share := rest * n / (n + p.Sizes.OthersPseudoCount)
		add(sz.Others, share)
		rest -= share
		if !observed {
			typical = medianOf(sz.Others)
		}
	}
	pr := priorPoints(p)
	ws := p.Sizes.WarmShare
	prior := make([]point, 0, 2*len(pr))
	for _, v := range pr {
		prior = append(prior, point{s: v, w: (1 - ws) / float64(len(pr))})
		if ws > 0 {
			prior = append(prior, point{s: math.Round(v * p.Sizes.WarmP50 / p.Sizes.PriorP50), w: ws / float64(len(pr))})
		}
	}
	prior = merged(prior)
	for _, pt := range prior {
		m = append(m, point{s: pt.s, w: rest * pt.w})
	}
	if !observed && len(sz.Others) == 0 {
		typical = p.Sizes.PriorP50
		if ws > 0 {
			typical = weightedMedian(prior)
		}
	}
	m = merged(m)
	d.s, d.w = make([]float64, len(m)), make([]float64, len(m))
	for i, pt := range m {
		d.s[i], d.w[i] = pt.s, pt.w
	}
	return d, typical, observed
}

// point is a size and its probability; i is its place among the points merged sorts.
type point struct {
	s, w float64
	i    int
}

// merged sorts pts by size and sums the probabilities of each size in the order they come in pts: a map of
// sizes added to one by one in that order, without its hashing. They are sorted by size and place, the order a
// stable sort gives, with an unstable sort: for the 90 points of a page with 40 loads and the user's other sites,
// a stable sort took about 65,000 instructions and this one 30,000 (valgrind --tool=callgrind).
func merged(pts []point) []point {
	for k := range pts {
		pts[k].i = k
	}
	slices.SortFunc(pts, func(a, b point) int {
		switch {
		case a.s < b.s:
			return -1
		case a.s > b.s:
			return 1
		}
		return a.i - b.i
	})
	out := pts[:0]
	for _, pt := range pts {
		if n := len(out); n > 0 && out[n-1].s == pt.s {
			out[n-1].w += pt.w
			continue
		}
		out = append(out, point{s: pt.s, w: 0 + pt.w})
	}
	return out
}

// ownLoads says whether the size rests on loads of this page's own path class (or is exact, a download): a median
// given without levels (an older log, the decide command's --size) counts as one such load.
func (sz Size) ownLoads() bool {
	return len(sz.Points) > 0 || (sz.Exact && sz.Median != nil) || (len(sz.Origin) == 0 && sz.Known && sz.Median != nil)
}

// priorPoints are the prior's equal-weight quantiles: a log-normal through p10, p50 and p90, with its own spread
// on each side of the median.
func priorPoints(p *Params) []float64 {
	sz := &p.Sizes
	const z90 = 1.2815515655446004
	lo, hi := math.Log(sz.PriorP50/sz.PriorP10)/z90, math.Log(sz.PriorP90/sz.PriorP50)/z90
	n := sz.PriorPoints
	out := make([]float64, n)
	for i := range out {
		z := normQuantile((float64(i) + 0.5) / float64(n))
		sigma := hi
		if z < 0 {
			sigma = lo
		}
		out[i] = math.Round(sz.PriorP50 * math.Exp(sigma*z))
	}
	return out
}

// normQuantile is the standard normal's quantile function.
func normQuantile(q float64) float64 { return math.Sqrt2 * math.Erfinv(2*q-1) }

// weightedMedian is the smallest size at which the cumulative probability of pts (ascending, summing to 1)
// reaches one half.
func weightedMedian(pts []point) float64 {
	cum := 0.0
	for _, pt := range pts {
		if cum += pt.w; cum >= 0.5-1e-9 {
			return pt.s
		}
	}
	return pts[len(pts)-1].s
}

func medianOf(v []int64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return float64(s[n/2])
	}
	return (float64(s[n/2-1]) + float64(s[n/2])) / 2
}

// candidates are the θ1 worth trying: 0, just above each likely size, and a grid between. θ1 counts the page's
// connections to the origin together (the helper sums them), so it is a page size, whatever the protocol.
// A page whose own path class was never loaded gets no θ1 = 0: its size is a guess from the site's other pages,
// the user's other sites or the prior, and a wrong guess of "large" puts a small page on cellular from its first
// byte (held-out check, 2 Mbit/s WiFi beside 50 Mbit/s LTE: three of four small first visits, each predicted large
// from the site's or the user's other pages, put 9-62 kB on cellular). Waiting for θ1 costs a large page only the
// time its first θ1 bytes take. Nor a θ1 below floor (200 kB, seed 001 §4.2's example policy) for such a page or a
// small one: multipath hardly speeds a small page (seed 001 Fig. 2), and a guess of "large" would otherwise put
// small pages on cellular after a few kB.
func (e *evaluation) candidates() []float64 {
	th := &e.p.Theta
	floor := math.Inf(-1)
	if f := e.floor(); f > 0 {
		floor = f
	}
	out := make([]float64, 0, len(e.sizes.s)+16)
	if f := floor; f > 0 {
		out = append(out, f)
	}
	// Those above the floor, sorted, each once.
	set := out[len(out):]
	if e.seen && 0 > floor {
		set = append(set, 0)
	}
	lo, hi := math.Inf(1), 0.0
	for _, s := range e.sizes.s {
		c := math.Ceil(s*(1+th.SizeMargin) + th.OverheadBytes)
		if c >= th.MinBytes && c <= th.MaxBytes && c > floor {
			set = append(set, c)
		}
		lo, hi = math.Min(lo, c), math.Max(hi, c)
	}
	for g := th.MinBytes; g <= th.MaxBytes; g *= th.GridRatio {
		if c := math.Ceil(g); g >= lo/th.GridRatio && g <= hi*th.GridRatio && c > floor {
			set = append(set, c)
		}
	}
	slices.Sort(set)
	return append(out, slices.Compact(set)...)
}

// at is the model for one scenario, one θ1 and one size: every term and the utility.
type at struct {
	s, tSP, tMP, pltSP, pltMP, saved, late, cellBytes, cellJ, wifiJ, u float64
	rawBytes                                                           float64 // the secondary's raw bytes (scen.hol): cellBytes is their share
	joined                                                             bool
}

// mpCurve is the page's bytes over MPTCP when the secondary subflows are asked for once each connection has
// received theta bytes; also the time of their first useful byte.
func (e *evaluation) mpCurve(sc *scen, theta float64) (plf, float64) {
	tReq := math.Max(sc.tEst, sc.primSP.inv(theta)) + e.p.Multipath.ReactMS/1000
	t0 := tReq + sc.tJoin
	if e.cellFirst {
		// WiFi as backup once the cellular subflow is up: the primary keeps what it carried until then, and every
		// later byte comes over the secondary alone, with no slower path to hold the in-order stream up.
		prim := capped(sc.primSP, sc.primSP.at(t0))
		sec := shifted(&sc.secBase, t0)
		return sum(&prim, &sec, 1), t0
	}
	sec := shifted(&sc.secMP, t0+sc.secUseful)
	return sum(&sc.primSP, &sec, sc.hol), t0
}

// secCurve is the secondary's raw curve with WiFi as backup (cellFirst) or not, and the share of its bytes the
// subflow carries (scen.hol).
func (sc *scen) secCurve(cellFirst bool) (*plf, float64) {
	if cellFirst {
		return &sc.secBase, 1
	}
	return &sc.secMP, sc.hol
}

// eval is the utility of size s under scenario sc with the multipath curve mp (secondary data from t0); tSP is
// its single-path transfer time.
func (e *evaluation) eval(sc *scen, mp *plf, t0, s, tSP float64) at {
	a := at{s: s, joined: true}
	a.tSP = tSP
	a.tMP = math.Min(mp.inv(s), a.tSP)
	// The secondary's raw bytes by completion: the radio is active while its link could have carried them; the
	// subflow carries their share (scen.hol).
	sec, share := sc.secCurve(e.cellFirst)
	raw := sec.at(a.tMP - t0)
	a.cellBytes, a.rawBytes = share*raw, raw
	rMP := e.rMP
	if raw <= 0 {
		rMP = e.rSP // the subflow carried nothing: the load was a single-path one
	}
	a.pltSP = (a.tSP + e.process) * e.rSP
	a.pltMP = (a.tMP + e.process) * rMP
	a.saved = a.pltSP - a.pltMP
	a.late = math.Max(0, a.pltSP-e.deadline) - math.Max(0, a.pltMP-e.deadline)
	// The join wakes the radio even when no data follows; then it is active while it carries its share, and runs
	// its tail.
	a.cellJ = sc.fixedJ + sc.activeW*raw/sc.sec.rate
	a.wifiJ = -e.wifiW * math.Max(0, a.tSP-a.tMP)
	w := e.w
	a.u = w.TimePerS*a.saved + w.LatePerS*a.late - w.EnergyPerJ*(a.cellJ+a.wifiJ) - w.CellPerMB*a.cellBytes/1e6
	return a
}

// choose is the θ1 of highest expected utility among those whose saving exceeds the model's error
// (expectedSaving), nil (never) when none is above zero. Expected utilities within
// theta.indifference_s of the best are ties, won by the largest θ1 (never included): it risks the fewest cellular
// joins for a difference no measurement could tell apart.
//
// Where θ1 has a floor (floor), utilities are compared per load that passes it: no θ1 is below it, so smaller loads
// are the same under every choice, never included, and a guess that most loads are small must not make a clear
// gain on the large ones a tie with never. A page guessed small from its site's other pages then can still turn
// multipath once it proves large: otherwise a 5 MB page first seen after its site's 142 kB page went single path to
// the end beside 20 Mbit/s WiFi and 20 Mbit/s LTE. Where the links are still partly priors the gain can stay too
// small even so, and such a page's first visit gets never (e2e/results/ARCHIVE-2026.md, Decisions).
func (e *evaluation) choose() (*float64, float64) { return e.chooseAbove(math.Inf(-1)) }

// chooseAbove is choose, except that a θ1 whose E[U] is bounded below floorU may be left unweighed (preferCellular).
func (e *evaluation) chooseAbove(floorU float64) (*float64, float64) {
	if e.cands == nil {
		e.cands = e.candidates()
	}
	cs := e.cands
	ind := e.p.Theta.IndifferenceS
	if f := e.floor(); f > 0 {
		ind *= e.sizes.above(f)
	}
	// Every θ1's E[U] (−Inf where its saving is not clear); those that cannot come within ind of the best are
	// bounded rather than weighed, and are −Inf too (utilities).
	us := e.utilities(ind, floorU)
	top := 0.0 // never
	for _, u := range us {
		top = math.Max(top, u)
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

// preferCellular weighs the same choice once more with the primary as the backup subflow (mpCurve's cellFirst) and
// keeps that weighing when it is better by more than theta.indifference_s. Multipath.hol_discount says what
// lowest-RTT-first scheduling costs: only that share of the secondary's bytes shortens a load, so once the
// secondary alone is faster than the primary plus that share (cellular above about 5x the WiFi's rate at 0.81),
// the primary only holds the stream up. Measured here (e2e/RESULTS.md, "WiFi as backup"): beside a 2 Mbit/s WiFi
// and a 33.9 Mbit/s LTE, cellular alone loaded shop-product-1 in 1.1 s and mp-always in 2.2-2.4 s. Not with a θ2
// cap: once the helper closes a capped subflow, the backup WiFi carries the rest, which the curves do not model.
func (e *evaluation) preferCellular(best **float64, bestU *float64, theta2 *int64) bool {
	if theta2 != nil || e.promised {
		return false
	}
	e.cellFirst = true
	// Only a weighing better than the first by more than ind changes the choice, so no θ1 below the first's
	// utility (below 0 when the first is never: then any pick above ind does) needs weighing exactly: whatever this
	// choose picks among the rest, the answer below is the same.
	floorU := 0.0
	if *best != nil {
		floorU = *bestU
	}
	cf, cfU := e.chooseAbove(floorU)
	ind := e.p.Theta.IndifferenceS
	if f := e.floor(); f > 0 {
		ind *= e.sizes.above(f)
	}
	if cf == nil || (*best != nil && cfU <= *bestU+ind) {
		e.cellFirst = false
		return false
	}
	*best, *bestU = cf, cfU
	return true
}

// floor is the smallest θ1 allowed (0: any): theta.small_page_bytes for a page never seen, whose size is a guess,
// and for a page seen smaller than that. Seed 001 §3.2 found pages up to 100 KB hardly faster over MPTCP for 5.5x
// to 7.3x the radio energy, and its §4.2 example policy takes multipath only for at least 200 KB. Beside a 2 Mbit/s
// WiFi and a 33.9 Mbit/s LTE, performance mode's weights took a 150 kB article multipath from its first byte (0.14 s
// saved for 13 J), a third of mp-always's cellular bytes on the testbed's small pages; MPSurf keeps small pages off
// cellular in every mode.
//
// In battery-saver mode the floor is at least the network-wide policy's θ1 (Params.BaselineTheta1): the user chose
// that mode to spend less, and a cellular subflow that joins earlier than that policy's carries more bytes than its
// would on the same load. Beside a 2 Mbit/s WiFi and 33.9 Mbit/s LTE the weighing alone sent large pages over LTE
// from their first bytes, 1.6 MB more cellular data over 13 pages than seed 001's 200 kB rule
// (e2e/RESULTS.md, Decisions).
func (e *evaluation) floor() float64 {
	f := e.p.Theta.SmallPageBytes
	if f <= 0 || (e.seen && e.typical >= f) {
		f = 0
	}
	if e.promised {
		f = math.Max(f, e.p.BaselineTheta1)
	}
	return f
}

// above is the probability of a size larger than b.
func (d dist) above(b float64) float64 {
	p := 0.0
	for i, s := range d.s {
		if s > b {
			p += d.w[i]
		}
	}
	return p
}

// trial says whether multipath is worth trying though the weighing came out against it, and its utility: on
// measured links, for an observed page whose multipath from the first byte the model cannot tell from single path
// within its measured error on the page's load time, while the origin's path class has fewer than MinLoads
// multipath loads to learn from. Two such near misses: a time saving the model can see whose utility, once its
// energy and cellular bytes are paid, is within that error of zero (a loss it cannot see, or a gain the weighing
// over the link scenarios does not take: a central utility just above zero must be tried as one just below it
// is); and a utility gain whose time saving is
// within the error, which the weighing refuses (expectedSaving), beside a secondary at least GainTrialMinRatio as
// fast as the primary. The second is a blind spot of the curves, which hold a flow at its link's rate once slow
// start ends: beside 20/20 Mbit/s WiFi and LTE, single-path loads of a 5 MB page ran at the link's rate for a second
// and then at a fifth of it (losses once slow start overran a queue shorter than the path's bandwidth-delay
// product), and at those links' own numbers the curves put the multipath saving on 1.3-2.4 MB pages at 0.16-0.36 s
// where the testbed measured 0.42-0.49 s. A wrong "no" is otherwise never corrected: single-path loads alone teach
// the model nothing about multipath (Learned needs both kinds). The cost is bounded: at most MinLoads loads per
// origin and class, each within the error margin of its single-path time.
func (e *evaluation) trial(c *Correction) (float64, bool) {
	te := e.p.Learning.TrialError
	if te <= 0 || e.prior || !e.seen || e.floor() > 0 || (c != nil && float64(c.MPLoad) >= e.p.Learning.MinLoads) {
		return 0, false
	}
	sc := e.central()
	mp, t0 := e.mpCurve(sc, 0)
	a := e.eval(sc, &mp, t0, e.typical, sc.primSP.inv(e.typical))
	margin := te * a.pltSP
	loss := a.saved > margin && math.Abs(a.u) <= margin
	gain := a.saved > 0 && a.saved <= margin && a.u > 0 && sc.sec.rate >= e.p.Learning.GainTrialMinRatio*sc.prim.rate
	if !loss && !gain {
		return 0, false
	}
	return a.u, true
}

// central is the scenario closest to the links' medians: the one the terms and predictions describe.
func (e *evaluation) central() *scen {
	best := 0
	for i := range e.scens {
		if e.scens[i].w > e.scens[best].w {
			best = i
		}
	}
	return &e.scens[best]
}

// predict is the page-load time of size s, single path and with θ1 carried out (never: nil), in the central
// scenario, uncorrected.
func (e *evaluation) predict(theta *float64, s float64) (spMS, mpMS float64, used bool) {
	sc := e.central()
	tSP := sc.primSP.inv(s)
	spMS = (tSP + e.process) * 1000
	if theta == nil || s <= *theta {
		return spMS, spMS, false
	}
	mp, t0 := e.mpCurve(sc, *theta)
	a := e.eval(sc, &mp, t0, s, tSP)
	return spMS, (a.tMP + e.process) * 1000, a.rawBytes > 0
}
