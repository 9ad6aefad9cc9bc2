package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/mpsurf/mpsurf/e2e/energy"
)

// The decisions benchmark's measures (issue 11, issue 32): how much of mp-always's page-load-time reduction
// mp-adaptive keeps, how much of its cost it avoids, whether it beats each simple policy in utility (sp-wifi,
// mp-always and seed 001 §4.2's rule, mp-rule), and its utility regret against an oracle that takes the best of
// those per page; for each user preference, valued with that preference's own weights. The gain share, the
// small-page cellular share and the slower pages are defined as issue 11's reference script decision_metrics.py
// defines them (sums of per-page medians; Go's median of an even count is the mean of the middle two, as Python's
// statistics.median), so that both give the same numbers on the same runs.jsonl; the script is not part of the
// repository, and TestDecisionsAgreeWithTool compares the two where it is installed.
const (
	// LargePageBytes and DecisionSmallBytes split the pages: large >= 1 MB, small < 200 kB (1 MB = 10^6 bytes).
	LargePageBytes     = 1_000_000
	DecisionSmallBytes = 200_000
	// Targets on every profile (issue 11, "Done when"; issue 32 item 3).
	TargetGainShare = 0.9
	TargetCellShare = 0.1
	TargetRegret    = 0.05
	// TargetRegretWidth is the widest the regret's resampled 90 % interval may be for the run to settle the regret
	// target (issue 32 item 3: enough repetitions that it is at most 6 points wide).
	TargetRegretWidth = 0.06
	// A gain share needs a gain to share: below 5 % of single path's time, mp-adaptive is held to being at most
	// 5 % slower than single path instead.
	minGainFrac = 0.05
	// Slower: mp-adaptive's median PLT above 1.10 x the best other mode's + 100 ms.
	slowerFactor = 1.10
	slowerMS     = 100
	// MinReps is the fewest ok loads per (page, mode) the medians should rest on; pages with fewer are listed.
	MinReps = 3
)

// The user's preferences (the extension's options page; policy-models/model.json modes) whose promises the report
// checks: battery saver spends less radio energy and cellular data than the simple multipath policies, performance
// loses no page-load time to them.
const (
	PrefPerformance  = "performance"
	PrefBalanced     = "balanced"
	PrefBatterySaver = "battery_saver"
)

// Preferences in report order.
var Preferences = []string{PrefPerformance, PrefBalanced, PrefBatterySaver}

// Bases of a decision (the host's Decision.basis): from measured links, from priors per technology, or the
// baseline rule. Decisions without one are counted as "none given".
var Bases = []string{"measured", "prior", "rule"}

// Weights value a load's outcome in seconds: a second of page load time, a joule of radio energy, a cellular MB.
type Weights struct {
	TimePerS   float64 `json:"time_per_s"`
	EnergyPerJ float64 `json:"energy_per_j"`
	CellPerMB  float64 `json:"cell_per_mb"`
	Mode       string  `json:"-"` // the preference they are of
	Source     string  `json:"-"`
}

// Utility of one load in seconds-equivalent (higher is better): -(PLT s x time_per_s + radio energy J x
// energy_per_j + cellular MB (wwan0 rx + tx) x cell_per_mb). NaN without energy.
func (w Weights) Utility(l *Load) float64 {
	if !l.HasEnergy() {
		return math.NaN()
	}
	cell := l.LinkBytes[IfCell]
	return -(w.TimePerS*l.PLTms/1000 + w.EnergyPerJ*l.RadioJ() + w.CellPerMB*float64(cell.Rx+cell.Tx)/1e6)
}

// The benchmark's four modes, by index: the three simple policies and MPSurf's.
const (
	iSingle = iota
	iAlways
	iRule
	iAdaptive
	nModes
)

// sample is what one ok load gives the measures.
type sample struct {
	plt, cellRx, cellMB, cellJ, radioJ, u float64
}

// DecisionPage is one page's loads and medians under each mode.
type DecisionPage struct {
	Page, Proto string
	Bytes       int64
	N           map[string]int     // ok loads per mode
	PLT         map[string]float64 // median ms
	CellRx      map[string]float64 // median wwan0 rx bytes
	CellJ       map[string]float64 // median cellular radio J (NaN without energy)
	U           map[string]float64 // median utility (NaN without energy)
	Oracle      string             // the mode with the highest median utility among the simple policies, "" when unknown
	// samples are the loads per mode (by mode index) and reps their repetitions, for the resampled intervals.
	samples [nModes][]sample
	reps    [nModes][]int
}

// Interval is the middle 90 % of a measure over the run's repetitions drawn again (Decisions' resampling); NaN
// bounds when not defined.
type Interval struct{ Lo, Hi float64 }

func (iv Interval) ok() bool { return !math.IsNaN(iv.Lo) && !math.IsNaN(iv.Hi) }

// ProfileDecisions are one profile's measures.
type ProfileDecisions struct {
	Profile string
	History []string       // the mp-adaptive loads' history settings
	OK      map[string]int // ok loads per mode
	Failed  map[string]int // failed loads per mode
	Pages   []*DecisionPage
	// HasRule: the profile has mp-rule loads, so the oracle and the comparisons include the rule.
	HasRule bool

	Large, Small []string // page keys
	// Sums of median PLT over large pages, ms.
	SumSingle, SumAlways, SumRule, SumAdaptive float64
	// GainShare = (SumSingle - SumAdaptive) / (SumSingle - SumAlways); GainNA when mp-always gains < 5 %, or when
	// multipath does not pay under the preference (GainUnpaid: the utility oracle, which takes the best simple
	// policy per page by this preference's weights, keeps < 5 % of single path's time on the large pages: a user
	// who prices a joule and a megabyte this high wants none of that gain); then GainHeld means mp-adaptive is at
	// most 5 % slower than single path.
	GainShare  float64
	GainNA     bool
	GainUnpaid bool
	GainHeld   bool
	// CellShare: mp-adaptive's wwan0 rx bytes / mp-always's, small pages (sums of medians); CellJShare the same
	// for cellular radio energy. NaN when not defined.
	CellShare, CellJShare float64
	CellHeld              bool
	Slower                []string // pages where mp-adaptive is > 10 % (+ 100 ms) slower than the best other mode
	Compared              int      // pages with every mode
	Basis                 map[string]int
	Decided               int
	// OracleGainShare is the gain share the utility oracle itself would keep (NaN when the gain share is not
	// defined or a large page has no oracle), and OracleAlways on how many large pages it takes mp-always: where
	// the oracle keeps less than TargetGainShare, meeting the gain share means taking mp-always where it costs
	// utility, which only the regret target's margin allows.
	OracleGainShare float64
	OracleAlways    int
	// Regret = sum(U_oracle - U_adaptive) / sum |U_oracle| over pages with energy in every mode; RuleRegret the
	// same for mp-rule (NaN without it).
	Regret, RuleRegret float64
	RegretHeld         bool
	// RegretForced is the part of Regret that no decision could avoid while keeping the other targets: on pages
	// under DecisionSmallBytes where the oracle takes mp-always (the cellular-share target allows a tenth of its
	// cellular bytes), and under a preference that promises to spend less than mp-always (battery saver) wherever
	// the oracle takes it, the regret against the best of the other simple policies is what remains. NaN with the
	// regret.
	RegretForced float64
	// RegretLo and RegretHi bound the regret's resampled 90 % interval (RegretIv); NaN when not defined.
	RegretLo, RegretHi float64
	// SumU: Σ over the pages of the regret of each mode's median utility, s-equivalent (by mode name); UtilityHeld:
	// mp-adaptive's is at least each simple policy's.
	SumU        map[string]float64
	UtilityHeld map[string]bool
	// Promise sums over the compared pages with energy in every mode, of per-page medians: PLT s, radio energy J
	// (WiFi + cellular), cellular MB (wwan0 rx + tx), by mode name.
	SumPLTAll, SumRadioJ, SumCellMB map[string]float64
	// Iv are the resampled 90 % intervals, by measure name (IvRegret, IvRuleRegret, IvGain, IvCell, and
	// IvUtility/IvPLT/IvRadioJ/IvCellMB + a simple policy's name: mp-adaptive's minus that policy's).
	Iv       map[string]Interval
	FewReps  []string // metric pages with fewer than MinReps ok loads in some mode
	MinLoads int      // fewest ok loads of any (compared page, mode): the repetitions the medians rest on
}

// Names of the resampled intervals (ProfileDecisions.Iv).
const (
	IvRegret     = "regret"
	IvRuleRegret = "rule regret"
	IvForced     = "regret forced"
	IvGain       = "gain share"
	IvCell       = "cell share"
	IvUtility    = "ΔU vs "
	IvPLT        = "ΔPLT vs "
	IvRadioJ     = "ΔJ vs "
	IvCellMB     = "ΔMB vs "
)

// Decisions is the benchmark's outcome per profile for one preference.
type Decisions struct {
	Single, Always, Rule, Adaptive string
	// Preference is the one mp-adaptive's loads decided under, and Weights its weights, which value every mode.
	Preference string
	Weights    Weights
	Profiles   []*ProfileDecisions
	// CellInitial is the energy accounting's cellular radio at each load's start (Options.CellInitial); "" when
	// the caller did not say.
	CellInitial energy.Initial
}

func (d *Decisions) modes() [nModes]string {
	return [nModes]string{d.Single, d.Always, d.Rule, d.Adaptive}
}

func pageKey(page, proto string) string { return page + " " + proto }

// Label is how a page is named in the report: its name, with the protocol when it was loaded under two.
func (d *ProfileDecisions) label(key string) string {
	page, proto, _ := strings.Cut(key, " ")
	n := 0
	for _, p := range d.Pages {
		if p.Page == page {
			n++
		}
	}
	if n > 1 {
		return page + " (" + proto + ")"
	}
	return page
}

func median(xs []float64) float64 {
	s := Summarize(xs)
	if s.N == 0 {
		return math.NaN()
	}
	return s.Median
}

// PreferencesOf lists the preferences mp-adaptive's loads decided under, in report order; a load that does not
// say (runs from before the grid set preferences) counts as def, the mode a fresh install decides with.
func PreferencesOf(loads []*Load, def string) []string {
	seen := map[string]bool{}
	for _, l := range loads {
		if l.Mode == ModeMPAdaptive {
			seen[cmp.Or(l.Preference, def)] = true
		}
	}
	var out []string
	for _, p := range Preferences {
		if seen[p] {
			out = append(out, p)
			delete(seen, p)
		}
	}
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out[len(out)-len(seen):])
	return out
}

// AnalyzeAll runs AnalyzeDecisions once per preference of the adaptive loads, each with its own weights (by
// preference; def names the mode a fresh install decides with). A preference without weights is valued with
// NaN weights (no utility).
func AnalyzeAll(loads []*Load, weights map[string]Weights, def string) []*Decisions {
	var out []*Decisions
	for _, pref := range PreferencesOf(loads, def) {
		w, ok := weights[pref]
		if !ok {
			w = Weights{TimePerS: math.NaN(), Mode: pref}
		}
		var ls []*Load
		for _, l := range loads {
			if l.Mode != ModeMPAdaptive || cmp.Or(l.Preference, def) == pref {
				ls = append(ls, l)
			}
		}
		d := AnalyzeDecisions(ls, w)
		d.Preference = pref
		out = append(out, d)
	}
	return out
}

// AnalyzeDecisions computes the measures for every profile whose runs have sp-wifi, mp-always and mp-adaptive
// (mp-rule too where the profile has it), valuing every load with w. Failed loads are counted per mode and left out
// of every median. The caller gives the adaptive loads of one preference (AnalyzeAll).
func AnalyzeDecisions(loads []*Load, w Weights) *Decisions {
	d := &Decisions{Single: ModeSPWiFi, Always: ModeMPAlways, Rule: ModeMPRule, Adaptive: ModeMPAdaptive, Weights: w, Preference: w.Mode}
	modes := d.modes()
	type key struct{ profile, page string }
	byProfile := map[string]*ProfileDecisions{}
	perPage := map[key]map[string][]*Load{}
	bytesOf := map[key]int64{}
	var order []string
	for _, l := range loads {
		if !oneOf(l.Mode, modes[:]...) {
			continue
		}
		pd := byProfile[l.Profile]
		if pd == nil {
			pd = &ProfileDecisions{Profile: l.Profile, OK: map[string]int{}, Failed: map[string]int{}, Basis: map[string]int{}}
			byProfile[l.Profile] = pd
			order = append(order, l.Profile)
		}
		if !l.OK {
			pd.Failed[l.Mode]++
			continue
		}
		pd.OK[l.Mode]++
		if l.Mode == d.Rule {
			pd.HasRule = true
		}
		if l.Mode == d.Adaptive {
			if l.History != "" && !contains(pd.History, l.History) {
				pd.History = append(pd.History, l.History)
			}
			if l.Decision != nil {
				pd.Decided++
				b := l.Decision.Basis
				if !oneOf(b, Bases...) {
					b = "none given"
				}
				pd.Basis[b]++
			}
		}
		k := key{l.Profile, pageKey(l.Page, l.Proto)}
		if perPage[k] == nil {
			perPage[k] = map[string][]*Load{}
		}
		perPage[k][l.Mode] = append(perPage[k][l.Mode], l)
		// As decision_metrics.py: the page's size is its first single-path load's.
		if _, ok := bytesOf[k]; !ok || (l.Mode == d.Single && len(perPage[k][d.Single]) == 1) {
			bytesOf[k] = l.PageBytes
		}
	}
	sort.Strings(order)
	for _, name := range order {
		pd := byProfile[name]
		var keys []string
		for k := range perPage {
			if k.profile == name {
				keys = append(keys, k.page)
			}
		}
		sort.Strings(keys)
		for _, pk := range keys {
			ls := perPage[key{name, pk}]
			page, proto, _ := strings.Cut(pk, " ")
			p := &DecisionPage{Page: page, Proto: proto, Bytes: bytesOf[key{name, pk}], N: map[string]int{},
				PLT: map[string]float64{}, CellRx: map[string]float64{}, CellJ: map[string]float64{}, U: map[string]float64{}}
			for i, m := range modes {
				for _, l := range ls[m] {
					s := sample{plt: l.PLTms, cellRx: float64(l.LinkBytes[IfCell].Rx), cellJ: math.NaN(), radioJ: l.RadioJ(), u: w.Utility(l)}
					s.cellMB = float64(l.LinkBytes[IfCell].Rx+l.LinkBytes[IfCell].Tx) / 1e6
					if l.HasEnergy() {
						s.cellJ = l.Cell.TotalJ
					}
					p.samples[i] = append(p.samples[i], s)
					p.reps[i] = append(p.reps[i], l.Rep)
				}
				med := medians(p.samples[i])
				p.N[m] = len(ls[m])
				p.PLT[m], p.CellRx[m], p.CellJ[m], p.U[m] = med.plt, med.cellRx, med.cellJ, med.u
			}
			if o := oracleOf(pageMedians(p), pd.HasRule); o >= 0 {
				p.Oracle = modes[o]
			}
			pd.Pages = append(pd.Pages, p)
		}
		pd.compute(d)
		d.Profiles = append(d.Profiles, pd)
	}
	return d
}

func contains(xs []string, x string) bool { return slices.Contains(xs, x) }

// medians are the per-field medians of samples (NaN fields left out of their own median).
func medians(ss []sample) sample {
	var plt, rx, mb, cj, rj, u []float64
	for _, s := range ss {
		plt, rx, mb = append(plt, s.plt), append(rx, s.cellRx), append(mb, s.cellMB)
		if !math.IsNaN(s.cellJ) {
			cj = append(cj, s.cellJ)
		}
		if !math.IsNaN(s.radioJ) {
			rj = append(rj, s.radioJ)
		}
		u = append(u, s.u)
	}
	uMed := median(u)
	if slices.ContainsFunc(u, math.IsNaN) {
		uMed = math.NaN() // a load without energy has no utility: the page's median is not known
	}
	return sample{plt: median(plt), cellRx: median(rx), cellMB: median(mb), cellJ: median(cj), radioJ: median(rj), u: uMed}
}

// pageMed is one page's medians per mode, what the measures are computed from.
type pageMed struct {
	key   string
	bytes int64
	n     [nModes]int
	m     [nModes]sample
}

func pageMedians(p *DecisionPage) pageMed {
	pm := pageMed{key: pageKey(p.Page, p.Proto), bytes: p.Bytes}
	for i := range pm.m {
		pm.n[i] = len(p.samples[i])
		pm.m[i] = medians(p.samples[i])
	}
	return pm
}

// oracleOf is the simple policy (sp-wifi, mp-always and, with the rule, mp-rule) with the highest median utility,
// -1 when one of them has none.
func oracleOf(pm pageMed, rule bool) int {
	cands := []int{iSingle, iAlways}
	if rule {
		cands = append(cands, iRule)
	}
	best := -1
	for _, i := range cands {
		if pm.n[i] == 0 || math.IsNaN(pm.m[i].u) {
			return -1
		}
		if best < 0 || pm.m[i].u > pm.m[best].u {
			best = i
		}
	}
	return best
}

// measures are a profile's numbers from its pages' medians: computed once from every load, and again for each
// resample of the repetitions.
type measures struct {
	sumLarge                   [nModes]float64 // Σ median PLT over large pages, ms
	large, small               []string
	gainShare                  float64
	gainNA, gainUnpaid         bool
	gainHeld                   bool
	cellShare, cellJShare      float64
	regret                     [nModes]float64
	forced                     float64 // regret forced by the targets (ProfileDecisions.RegretForced)
	sumU                       [nModes]float64
	sumPLT, sumRadioJ, sumCell [nModes]float64 // over pages with energy in every mode
	oracleGainShare            float64
	oracleAlways               int
	slower                     []string
	compared                   int
	few                        []string
	minLoads                   int
}

// compute derives the measures from per-page medians; rule says whether mp-rule is one of the modes, spendLess
// whether the preference promises to spend less than mp-always (RegretForced).
func compute(pms []pageMed, rule, spendLess bool) measures {
	var m measures
	present := []int{iSingle, iAlways, iAdaptive}
	simple := []int{iSingle, iAlways}
	if rule {
		present = append(present, iRule)
		simple = append(simple, iRule)
	}
	var cm, ca, jm, ja float64
	var rNum [nModes]float64
	var rDen, forced float64
	jOK, oracleOK, sumOracle := true, true, 0.0
	m.minLoads = math.MaxInt
	for _, pm := range pms {
		if slices.ContainsFunc(present, func(i int) bool { return pm.n[i] == 0 }) {
			continue
		}
		m.compared++
		for _, i := range present {
			m.minLoads = min(m.minLoads, pm.n[i])
		}
		metric := pm.bytes >= LargePageBytes || pm.bytes < DecisionSmallBytes
		if metric && slices.ContainsFunc(present, func(i int) bool { return pm.n[i] < MinReps }) {
			m.few = append(m.few, pm.key)
		}
		o := oracleOf(pm, rule)
		if pm.bytes >= LargePageBytes {
			m.large = append(m.large, pm.key)
			for _, i := range present {
				m.sumLarge[i] += pm.m[i].plt
			}
			if o < 0 {
				oracleOK = false
			} else {
				sumOracle += pm.m[o].plt
				if o == iAlways {
					m.oracleAlways++
				}
			}
		}
		if pm.bytes < DecisionSmallBytes {
			m.small = append(m.small, pm.key)
			cm += pm.m[iAlways].cellRx
			ca += pm.m[iAdaptive].cellRx
			if math.IsNaN(pm.m[iAlways].cellJ) || math.IsNaN(pm.m[iAdaptive].cellJ) {
				jOK = false
			} else {
				jm += pm.m[iAlways].cellJ
				ja += pm.m[iAdaptive].cellJ
			}
		}
		best := math.Inf(1)
		for _, i := range simple {
			best = math.Min(best, pm.m[i].plt)
		}
		if pm.m[iAdaptive].plt > slowerFactor*best+slowerMS {
			m.slower = append(m.slower, pm.key)
		}
		// Utility, regret and the promises: pages where every mode's loads have energy.
		if o < 0 || math.IsNaN(pm.m[iAdaptive].u) {
			continue
		}
		uo := pm.m[o].u
		rDen += math.Abs(uo)
		if o == iAlways && (spendLess || pm.bytes < DecisionSmallBytes) {
			next := math.Inf(-1)
			for _, i := range simple {
				if i != iAlways {
					next = math.Max(next, pm.m[i].u)
				}
			}
			forced += uo - next
		}
		for _, i := range present {
			rNum[i] += uo - pm.m[i].u
			m.sumU[i] += pm.m[i].u
			m.sumPLT[i] += pm.m[i].plt / 1000
			m.sumRadioJ[i] += pm.m[i].radioJ
			m.sumCell[i] += pm.m[i].cellMB
		}
	}
	if m.minLoads == math.MaxInt {
		m.minLoads = 0
	}
	sS, sA, sD := m.sumLarge[iSingle], m.sumLarge[iAlways], m.sumLarge[iAdaptive]
	switch {
	case len(m.large) == 0:
		m.gainShare = math.NaN()
	case sS-sA < minGainFrac*sS, oracleOK && sS-sumOracle < minGainFrac*sS:
		m.gainShare, m.gainNA, m.gainUnpaid = math.NaN(), true, sS-sA >= minGainFrac*sS
		m.gainHeld = sD <= (1+minGainFrac)*sS
	default:
		m.gainShare = (sS - sD) / (sS - sA)
		m.gainHeld = m.gainShare >= TargetGainShare
	}
	m.oracleGainShare = math.NaN()
	if !math.IsNaN(m.gainShare) && oracleOK {
		m.oracleGainShare = (sS - sumOracle) / (sS - sA)
	}
	m.cellShare, m.cellJShare = math.NaN(), math.NaN()
	if len(m.small) > 0 && cm > 0 {
		m.cellShare = ca / cm
	}
	if len(m.small) > 0 && jOK && jm > 0 {
		m.cellJShare = ja / jm
	}
	for i := range m.regret {
		m.regret[i] = math.NaN()
	}
	m.forced = math.NaN()
	if rDen > 0 {
		m.forced = forced / rDen
		for _, i := range present {
			m.regret[i] = rNum[i] / rDen
		}
	}
	return m
}

func (pd *ProfileDecisions) compute(d *Decisions) {
	modes := d.modes()
	pms := make([]pageMed, len(pd.Pages))
	for i, p := range pd.Pages {
		pms[i] = pageMedians(p)
	}
	m := compute(pms, pd.HasRule, d.Preference == PrefBatterySaver)
	label := func(keys []string) []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = pd.label(k)
		}
		return out
	}
	pd.Large, pd.Small, pd.Slower, pd.FewReps = m.large, m.small, label(m.slower), label(m.few)
	pd.Compared, pd.MinLoads = m.compared, m.minLoads
	pd.SumSingle, pd.SumAlways, pd.SumRule, pd.SumAdaptive = m.sumLarge[iSingle], m.sumLarge[iAlways], m.sumLarge[iRule], m.sumLarge[iAdaptive]
	pd.GainShare, pd.GainNA, pd.GainUnpaid, pd.GainHeld = m.gainShare, m.gainNA, m.gainUnpaid, m.gainHeld
	pd.OracleGainShare, pd.OracleAlways = m.oracleGainShare, m.oracleAlways
	pd.CellShare, pd.CellJShare = m.cellShare, m.cellJShare
	pd.CellHeld = !math.IsNaN(m.cellShare) && m.cellShare <= TargetCellShare
	pd.Regret, pd.RuleRegret = m.regret[iAdaptive], m.regret[iRule]
	pd.RegretHeld = !math.IsNaN(pd.Regret) && pd.Regret <= TargetRegret
	pd.RegretForced = m.forced
	pd.SumU, pd.UtilityHeld = map[string]float64{}, map[string]bool{}
	pd.SumPLTAll, pd.SumRadioJ, pd.SumCellMB = map[string]float64{}, map[string]float64{}, map[string]float64{}
	for i, name := range modes {
		if i == iRule && !pd.HasRule {
			continue
		}
		pd.SumU[name], pd.SumPLTAll[name], pd.SumRadioJ[name], pd.SumCellMB[name] = m.sumU[i], m.sumPLT[i], m.sumRadioJ[i], m.sumCell[i]
		if i != iAdaptive && !math.IsNaN(pd.Regret) {
			pd.UtilityHeld[name] = m.sumU[iAdaptive] >= m.sumU[i]
		}
	}
	pd.Iv = pd.intervals(d)
	pd.RegretLo, pd.RegretHi = pd.Iv[IvRegret].Lo, pd.Iv[IvRegret].Hi
}

// Resamples of the intervals, and their fixed seed: the same runs give the same report.
const (
	resamples    = 2000
	resampleSeed = 11
)

// intervals are the measures' 5th and 95th percentiles when each page's repetitions are drawn again, with
// replacement, as many as there were, and the medians, the oracle and the measures taken again (a percentile
// bootstrap). A repetition's modes are drawn together: the grid loads them on the same trace offset and with the
// same random losses, and mp-adaptive's load of that repetition under this preference with them. It says how far
// one run's few repetitions per page can move each measure. A page whose modes share no repetition is drawn per
// mode.
func (pd *ProfileDecisions) intervals(d *Decisions) map[string]Interval {
	modes := d.modes()
	present := []int{iSingle, iAlways, iAdaptive}
	if pd.HasRule {
		present = append(present, iRule)
	}
	type pageDraw struct {
		pm     pageMed
		paired [][nModes]sample
	}
	draws := make([]pageDraw, len(pd.Pages))
	for k, p := range pd.Pages {
		pm := pageMedians(p)
		draws[k].pm = pm
		byRep := [nModes]map[int]sample{}
		distinct := true
		for _, i := range present {
			byRep[i] = map[int]sample{}
			for j, r := range p.reps[i] {
				byRep[i][r] = p.samples[i][j]
			}
			if len(byRep[i]) != len(p.samples[i]) {
				distinct = false // repetitions not told apart: drawn per mode
			}
		}
		if !distinct {
			continue
		}
		var reps []int
		for r := range byRep[iSingle] {
			if !slices.ContainsFunc(present, func(i int) bool { _, ok := byRep[i][r]; return !ok }) {
				reps = append(reps, r)
			}
		}
		slices.Sort(reps) // map order is random
		for _, r := range reps {
			var t [nModes]sample
			for _, i := range present {
				t[i] = byRep[i][r]
			}
			draws[k].paired = append(draws[k].paired, t)
		}
	}
	rng := rand.New(rand.NewPCG(resampleSeed, uint64(len(draws))))
	series := map[string][]float64{}
	put := func(name string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			series[name] = append(series[name], v)
		}
	}
	pms := make([]pageMed, len(draws))
	var buf [nModes][]sample
	for range resamples {
		for k, dr := range draws {
			pm := dr.pm
			for i := range buf {
				buf[i] = buf[i][:0]
			}
			if n := len(dr.paired); n > 0 {
				for range n {
					t := dr.paired[rng.IntN(n)]
					for _, i := range present {
						buf[i] = append(buf[i], t[i])
					}
				}
			} else {
				for _, i := range present {
					ss := pd.Pages[k].samples[i]
					for range ss {
						buf[i] = append(buf[i], ss[rng.IntN(len(ss))])
					}
				}
			}
			for _, i := range present {
				if len(buf[i]) > 0 {
					pm.m[i] = medians(buf[i])
					// A mode with a load without energy has no utility on this page, whichever loads a draw takes:
					// the page stays out of the utility measures, as in the point estimate.
					if math.IsNaN(dr.pm.m[i].u) {
						pm.m[i].u = math.NaN()
					}
				}
			}
			pms[k] = pm
		}
		m := compute(pms, pd.HasRule, d.Preference == PrefBatterySaver)
		put(IvRegret, m.regret[iAdaptive])
		put(IvRuleRegret, m.regret[iRule])
		put(IvForced, m.forced)
		put(IvGain, m.gainShare)
		put(IvCell, m.cellShare)
		for _, i := range present {
			if i == iAdaptive {
				continue
			}
			put(IvUtility+modes[i], m.sumU[iAdaptive]-m.sumU[i])
			put(IvPLT+modes[i], m.sumPLT[iAdaptive]-m.sumPLT[i])
			put(IvRadioJ+modes[i], m.sumRadioJ[iAdaptive]-m.sumRadioJ[i])
			put(IvCellMB+modes[i], m.sumCell[iAdaptive]-m.sumCell[i])
		}
	}
	out := map[string]Interval{}
	for _, name := range []string{IvRegret, IvRuleRegret, IvForced, IvGain, IvCell} {
		out[name] = percentiles(series[name])
	}
	for _, i := range present {
		if i != iAdaptive {
			for _, pre := range []string{IvUtility, IvPLT, IvRadioJ, IvCellMB} {
				out[pre+modes[i]] = percentiles(series[pre+modes[i]])
			}
		}
	}
	return out
}

// percentiles is the 5th and 95th percentile of xs, NaN when fewer than half the resamples gave a value.
func percentiles(xs []float64) Interval {
	if len(xs) < resamples/2 {
		return Interval{math.NaN(), math.NaN()}
	}
	sort.Float64s(xs)
	return Interval{xs[int(0.05*float64(len(xs)-1))], xs[int(math.Ceil(0.95*float64(len(xs)-1)))]}
}

func heldWord(held bool) string {
	if held {
		return "held"
	}
	return "missed"
}

// GainText is the gain share as the report prints it.
func (pd *ProfileDecisions) GainText() string {
	switch {
	case len(pd.Large) == 0:
		return "no large pages"
	case pd.GainUnpaid:
		return "n/a (MP does not pay) " + heldWord(pd.GainHeld)
	case pd.GainNA:
		return "n/a (MP gains < 5 %) " + heldWord(pd.GainHeld)
	}
	return fmt.Sprintf("%.2f %s", pd.GainShare, heldWord(pd.GainHeld))
}

// CellText is the small-page cellular share as the report prints it.
func (pd *ProfileDecisions) CellText() string {
	if math.IsNaN(pd.CellShare) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f %s", pd.CellShare, heldWord(pd.CellHeld))
}

// RegretText is the regret as the report prints it.
func (pd *ProfileDecisions) RegretText() string {
	if math.IsNaN(pd.Regret) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f %% %s", 100*pd.Regret, heldWord(pd.RegretHeld))
}

// ivText is an interval in brackets, scaled and with its unit; "" when not defined.
func ivText(iv Interval, scale float64, format, unit string) string {
	if !iv.ok() {
		return ""
	}
	return fmt.Sprintf(" ("+format+" to "+format+"%s)", scale*iv.Lo, scale*iv.Hi, unit)
}

// regretCell is the report.md table's regret: the regret, then its resampled interval in brackets and, where it
// is wider than TargetRegretWidth, the interval's width and the repetitions that would narrow it to that.
func regretCell(pd *ProfileDecisions) string {
	s := pd.RegretText() + ivText(pd.Iv[IvRegret], 100, "%.1f", " %")
	if iv := pd.Iv[IvRegret]; iv.ok() && iv.Hi-iv.Lo > TargetRegretWidth+1e-9 {
		s += fmt.Sprintf(", %.1f points wide", 100*(iv.Hi-iv.Lo))
		if n := repsForWidth(pd.MinLoads, iv.Hi-iv.Lo); n > 0 {
			s += fmt.Sprintf(" (about %d repetitions for %.0f)", n, 100*TargetRegretWidth)
		}
	}
	if f := pd.RegretForced; !math.IsNaN(f) && (f > 5e-4 || pd.Iv[IvForced].Hi > 5e-4) {
		s += fmt.Sprintf("; %.1f points of it forced by the targets", 100*f) + ivText(pd.Iv[IvForced], 100, "%.1f", "")
	}
	return s
}

// repsForWidth is how many repetitions would narrow an interval of width w, measured at n, to TargetRegretWidth,
// taking its width to shrink as 1/√n (the resampled medians' spread): a rough count to plan a run by, not a promise
// (a trace's outage stretches or a decision that changes with the history can keep it wide). 0 when n is unknown.
func repsForWidth(n int, w float64) int {
	if n <= 0 || w <= 0 {
		return 0
	}
	return int(math.Ceil(float64(n) * (w / TargetRegretWidth) * (w / TargetRegretWidth)))
}

// RegretIntervalText is the regret's resampled 90 % interval, "" when not defined.
func (pd *ProfileDecisions) RegretIntervalText() string {
	if math.IsNaN(pd.RegretLo) || math.IsNaN(pd.RegretHi) {
		return ""
	}
	return fmt.Sprintf("%.1f to %.1f %%", 100*pd.RegretLo, 100*pd.RegretHi)
}

// BasisText gives the shares of decisions by basis.
func (pd *ProfileDecisions) BasisText() string {
	if pd.Decided == 0 {
		return "no decisions"
	}
	var parts []string
	for _, b := range append(append([]string{}, Bases...), "none given") {
		if n := pd.Basis[b]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", b, float64(n)/float64(pd.Decided)))
		}
	}
	return strings.Join(parts, ", ")
}

func ratioText(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

// simple are the simple policies the profile compares mp-adaptive with.
func (pd *ProfileDecisions) simple(d *Decisions) []string {
	if pd.HasRule {
		return []string{d.Single, d.Always, d.Rule}
	}
	return []string{d.Single, d.Always}
}

// UtilityText is mp-adaptive's Σ utility against each simple policy's: the difference (s-equivalent, positive
// where mp-adaptive is better), its interval, held or missed.
func (pd *ProfileDecisions) UtilityText(d *Decisions) string {
	if len(pd.UtilityHeld) == 0 {
		return "n/a"
	}
	var parts []string
	for _, m := range pd.simple(d) {
		parts = append(parts, fmt.Sprintf("%s %+.2f s%s %s", m, pd.SumU[d.Adaptive]-pd.SumU[m], ivText(pd.Iv[IvUtility+m], 1, "%+.2f", ""), heldWord(pd.UtilityHeld[m])))
	}
	return strings.Join(parts, "; ")
}

// Promise is what a preference promises the user against the simple multipath policies (mp-always and mp-rule):
// battery saver less radio energy and fewer cellular bytes, performance no page-load time lost. Other preferences
// promise nothing of this kind ("").
func Promise(pref string) string {
	switch pref {
	case PrefBatterySaver:
		return "less radio energy and cellular data than mp-always and mp-rule"
	case PrefPerformance:
		return "no page-load time lost to mp-always and mp-rule"
	}
	return ""
}

// PromiseHeld checks the preference's promise on the profile's sums of per-page medians (point estimates), and
// says each comparison with its interval.
func (pd *ProfileDecisions) PromiseHeld(d *Decisions) (held bool, text string) {
	if Promise(d.Preference) == "" || len(pd.SumPLTAll) == 0 {
		return true, "n/a"
	}
	held = true
	var parts []string
	for _, m := range []string{d.Always, d.Rule} {
		if _, ok := pd.SumPLTAll[m]; !ok {
			continue
		}
		if d.Preference == PrefBatterySaver {
			dj := pd.SumRadioJ[d.Adaptive] - pd.SumRadioJ[m]
			dc := pd.SumCellMB[d.Adaptive] - pd.SumCellMB[m]
			ok := dj < 0 && dc < 0
			held = held && ok
			parts = append(parts, fmt.Sprintf("vs %s: %+.1f J%s, %+.2f MB%s %s", m, dj, ivText(pd.Iv[IvRadioJ+m], 1, "%+.1f", ""), dc, ivText(pd.Iv[IvCellMB+m], 1, "%+.2f", ""), heldWord(ok)))
		} else {
			dt := pd.SumPLTAll[d.Adaptive] - pd.SumPLTAll[m]
			ok := dt <= 0
			held = held && ok
			parts = append(parts, fmt.Sprintf("vs %s: %+.2f s%s %s", m, dt, ivText(pd.Iv[IvPLT+m], 1, "%+.2f", ""), heldWord(ok)))
		}
	}
	return held, strings.Join(parts, "; ")
}

// WriteSummary prints the one-screen summary: a line per profile and the targets.
func (d *Decisions) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "Decisions, preference %s: %s against %s, %s and %s (targets per profile: gain share >= %.1f on pages >= 1 MB, cellular share <= %.1f on pages < 200 kB, regret <= %.0f %%, utility >= each)\n",
		cmp.Or(d.Preference, "not given"), d.Adaptive, d.Single, d.Always, d.Rule, TargetGainShare, TargetCellShare, 100*TargetRegret)
	var hist []string
	for _, pd := range d.Profiles {
		for _, h := range pd.History {
			if !contains(hist, h) {
				hist = append(hist, h)
			}
		}
	}
	if len(hist) == 0 {
		hist = []string{"not recorded"}
	}
	fmt.Fprintf(w, "%s's host history: %s\n", d.Adaptive, strings.Join(hist, ", "))
	fmt.Fprintf(w, "%-20s %-24s %-12s %-7s %-30s %-14s %s\n", "profile", "gain share", "cell share", "cell J", "regret (90 % interval)", "slower >10 %", "decisions by basis; loads ok/failed; fewest loads per page and mode")
	for _, pd := range d.Profiles {
		failed, ok := 0, 0
		for _, n := range pd.Failed {
			failed += n
		}
		for _, n := range pd.OK {
			ok += n
		}
		reg := pd.RegretText()
		if iv := pd.RegretIntervalText(); iv != "" {
			reg += " (" + iv + ")"
		}
		fmt.Fprintf(w, "%-20s %-24s %-12s %-7s %-30s %-14s %s; %d/%d; %d\n", pd.Profile, pd.GainText(), pd.CellText(), ratioText(pd.CellJShare),
			reg, fmt.Sprintf("%d of %d", len(pd.Slower), pd.Compared), pd.BasisText(), ok, failed, pd.MinLoads)
		if len(pd.UtilityHeld) > 0 {
			fmt.Fprintf(w, "%-20s   utility vs %s\n", "", pd.UtilityText(d))
		}
		if pd.HasRule && !math.IsNaN(pd.RuleRegret) {
			fmt.Fprintf(w, "%-20s   %s's regret %.1f %%%s\n", "", d.Rule, 100*pd.RuleRegret, ivText(pd.Iv[IvRuleRegret], 100, "%.1f", " %"))
		}
		if Promise(d.Preference) != "" {
			_, t := pd.PromiseHeld(d)
			fmt.Fprintf(w, "%-20s   promise (%s): %s\n", "", Promise(d.Preference), t)
		}
		if len(pd.Slower) > 0 {
			fmt.Fprintf(w, "%-20s   slower: %s\n", "", strings.Join(pd.Slower, ", "))
		}
	}
	fmt.Fprintf(w, "gain share = sum over large pages of (median PLT %s - %s) / (%s - %s); cell share = %s's wwan0 rx bytes / %s's; regret and utility: see report.md\n",
		d.Single, d.Adaptive, d.Single, d.Always, d.Adaptive, d.Always)
	if d.CellInitial != "" {
		fmt.Fprintf(w, "radio energy: %s\n", cellInitialBrief(d.CellInitial))
	}
}

// hasModes reports whether some ok load ran under each of modes.
func (a *Analysis) hasModes(modes ...string) bool {
	seen := map[string]bool{}
	for _, l := range a.OK {
		seen[l.Mode] = true
	}
	for _, m := range modes {
		if !seen[m] {
			return false
		}
	}
	return true
}

func msText(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.0f", v)
}

func uText(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2f", v)
}

// markdown is the report's Decisions section for this preference.
func (d *Decisions) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## Decisions, preference %s: %s against %s, %s and %s\n\n", cmp.Or(d.Preference, "not given"), d.Adaptive, d.Single, d.Always, d.Rule)
	p("Does the adaptive mode, under the preference the user set (on the extension's options page, before each load), beat each simple policy: single path, always multipath, and seed 001 §4.2's rule (%s: multipath once 200 kB have come, carried out by the same host and helper)? ", d.Rule)
	p("Each number is a sum or ratio of **per-page medians** over ok loads; failed loads are counted below and left out. ")
	p("The loads of %s, %s and %s do not depend on the preference: each preference's section compares its own %s loads with the same loads of those three, paired by page and repetition. ", d.Single, d.Always, d.Rule, d.Adaptive)
	p("Pages of at least 1 MB are large, pages under 200 kB small (1 MB = 10^6 bytes, 1 kB = 1000 bytes).\n\n")
	p("- **Gain share** = Σ_large (PLT %s − PLT %s) / Σ_large (PLT %s − PLT %s). Where %s gains less than 5 %% of %s's time (\"MP gains < 5 %%\"), or where multipath does not pay under this preference (\"MP does not pay\": the utility oracle below, by this preference's weights, keeps less than 5 %% of %s's time on the large pages), it reads n/a, and the target becomes %s at most 5 %% slower than %s. Target ≥ %.1f.\n", d.Single, d.Adaptive, d.Single, d.Always, d.Always, d.Single, d.Single, d.Adaptive, d.Single, TargetGainShare)
	p("- **Cell share** = Σ_small wwan0 received bytes of %s / those of %s. Target ≤ %.1f. **Cell J share**: the same for the cellular radio's energy (tail included).\n", d.Adaptive, d.Always, TargetCellShare)
	p("- **Slower pages**: %s's median PLT above 1.10 × the best of the simple policies' + 100 ms.\n", d.Adaptive)
	if math.IsNaN(d.Weights.TimePerS) {
		p("- **Utility and regret**: not computed (no weights for this preference).\n\n")
	} else {
		p("- **Utility** of a load, in seconds-equivalent: U = −(%g × PLT s + %g × radio energy J + %g × cellular MB), the weights of preference %s (`%s`). Radio energy is WiFi + cellular from the packet timelines (tail included); cellular MB is wwan0 received + sent. ",
			d.Weights.TimePerS, d.Weights.EnergyPerJ, d.Weights.CellPerMB, cmp.Or(d.Weights.Mode, "unnamed"), d.Weights.Source)
		if d.CellInitial != "" {
			p("Cellular energy: %s. ", cellInitialBrief(d.CellInitial))
		}
		p("**ΣU**: the sum over the pages of each mode's median utility; target: %s's at least each simple policy's. ", d.Adaptive)
		p("The **oracle** takes, per page, the best simple policy by median utility (%s, %s and, where the profile ran it, %s). **Regret** = Σ_pages (U_oracle − U_mode) / Σ_pages |U_oracle|, over pages with energy under every mode; negative where the mode beats every simple policy. Target ≤ %.0f %% for %s; %s's is shown beside it. **Forced by the targets**: the points of the regret that no decision could avoid while keeping the other targets, where the oracle takes %s on a small page (the cell share allows a tenth of its cellular bytes) or, under a preference that promises to spend less than %s, on any page; the best of the other simple policies stands in for it there.\n", d.Single, d.Always, d.Rule, 100*TargetRegret, d.Adaptive, d.Rule, d.Always, d.Always)
		if pr := Promise(d.Preference); pr != "" {
			p("- **Promise** of this preference: %s, over the sums of per-page medians (radio energy J, cellular MB, PLT s).\n", pr)
		}
		p("- In brackets, the middle 90 %% of each measure over %d resamples of the run's repetitions (each page's repetitions drawn again with replacement, a repetition's modes together, the medians, the oracle and the measure taken again). The regret's interval should be at most %.0f points wide for the run to settle its target; wider ones say so.\n\n", resamples, 100*TargetRegretWidth)
	}
	p("| profile | ΣU s: %s / %s / %s / %s | %s − each (90 %% interval) | regret | %s's regret | gain share | cell share | cell J share | promise | slower pages | decisions by basis | ok loads (failed): %s, %s, %s, %s; fewest per page |\n",
		d.Single, d.Always, d.Rule, d.Adaptive, d.Adaptive, d.Rule, d.Single, d.Always, d.Rule, d.Adaptive)
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, pd := range d.Profiles {
		sums := "—"
		if len(pd.SumU) > 0 {
			var xs []string
			for _, m := range d.modes() {
				if v, ok := pd.SumU[m]; ok {
					xs = append(xs, uText(v))
				} else {
					xs = append(xs, "—")
				}
			}
			sums = strings.Join(xs, " / ")
		}
		rule := "—"
		if pd.HasRule && !math.IsNaN(pd.RuleRegret) {
			rule = fmt.Sprintf("%.1f %%%s", 100*pd.RuleRegret, ivText(pd.Iv[IvRuleRegret], 100, "%.1f", " %"))
		}
		gain := pd.GainText() + ivText(pd.Iv[IvGain], 1, "%.2f", "")
		if len(pd.Large) > 0 {
			rule := "—"
			if pd.HasRule {
				rule = fmt.Sprintf("%.1f", pd.SumRule/1000)
			}
			gain += fmt.Sprintf("; Σ large PLT s %.1f / %.1f / %s / %.1f", pd.SumSingle/1000, pd.SumAlways/1000, rule, pd.SumAdaptive/1000)
		}
		slower := fmt.Sprintf("%d of %d", len(pd.Slower), pd.Compared)
		if len(pd.Slower) > 0 {
			slower += ": " + strings.Join(pd.Slower, ", ")
		}
		_, promise := pd.PromiseHeld(d)
		var loads []string
		for _, m := range d.modes() {
			loads = append(loads, fmt.Sprintf("%d (%d)", pd.OK[m], pd.Failed[m]))
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s; %d |\n", mdCell(pd.Profile), sums, pd.UtilityText(d), regretCell(pd), rule, gain,
			pd.CellText()+ivText(pd.Iv[IvCell], 1, "%.2f", ""), ratioText(pd.CellJShare), promise, mdCell(slower), pd.BasisText(), strings.Join(loads, ", "), pd.MinLoads)
	}
	p("\n")
	for _, pd := range d.Profiles {
		if !math.IsNaN(pd.OracleGainShare) && pd.OracleGainShare < TargetGainShare {
			p("- `%s`: the utility oracle itself keeps %.2f of %s's gain (it takes %s on %d of %d large pages): keeping %.1f of the gain means taking %s where it costs utility, within the regret target's %.0f %%.\n",
				pd.Profile, pd.OracleGainShare, d.Always, d.Always, pd.OracleAlways, len(pd.Large), TargetGainShare, d.Always, 100*TargetRegret)
		}
	}
	for _, pd := range d.Profiles {
		if len(pd.FewReps) > 0 {
			p("- `%s`: fewer than %d ok loads in some mode on %s: their medians rest on few loads.\n", pd.Profile, MinReps, strings.Join(pd.FewReps, ", "))
		}
	}
	p("\n")
	for _, pd := range d.Profiles {
		p("### Decisions per page, preference %s: profile `%s`\n\n", cmp.Or(d.Preference, "not given"), pd.Profile)
		p("| page | proto | size | median PLT ms (n): %s | %s | %s | %s | median wwan0 rx kB: %s | %s | %s | median U s: %s | %s | %s | %s | oracle |\n",
			d.Single, d.Always, d.Rule, d.Adaptive, d.Always, d.Rule, d.Adaptive, d.Single, d.Always, d.Rule, d.Adaptive)
		p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, pg := range pd.Pages {
			plt := func(m string) string { return fmt.Sprintf("%s (%d)", msText(pg.PLT[m]), pg.N[m]) }
			kb := func(m string) string {
				if v, ok := pg.CellRx[m]; !ok || math.IsNaN(v) {
					return "—"
				}
				return fmt.Sprintf("%.1f", pg.CellRx[m]/1000)
			}
			u := func(m string) string {
				if v, ok := pg.U[m]; ok {
					return uText(v)
				}
				return "—"
			}
			oracle := cmp.Or(pg.Oracle, "—")
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(pg.Page), pg.Proto, humanBytes(pg.Bytes),
				plt(d.Single), plt(d.Always), plt(d.Rule), plt(d.Adaptive), kb(d.Always), kb(d.Rule), kb(d.Adaptive), u(d.Single), u(d.Always), u(d.Rule), u(d.Adaptive), oracle)
		}
		p("\n")
	}
	return b.String()
}
