package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
)

// The decisions benchmark's measures (issue 11): how much of mp-always's page-load-time reduction mp-adaptive
// keeps, how much of its cost it avoids, and its utility regret against an oracle. The gain share, the small-page
// cellular share and the slower pages are defined as issue 11's reference script decision_metrics.py defines them
// (sums of per-page medians; Go's median of an even count is the mean of the middle two, as Python's
// statistics.median), so that both give the same numbers on the same runs.jsonl; the script is not part of the
// repository, and TestDecisionsAgreeWithTool compares the two where it is installed.
const (
	// LargePageBytes and DecisionSmallBytes split the pages: large >= 1 MB, small < 200 kB (1 MB = 10^6 bytes).
	LargePageBytes     = 1_000_000
	DecisionSmallBytes = 200_000
	// Targets on every profile (issue 11, "Done when").
	TargetGainShare = 0.9
	TargetCellShare = 0.1
	TargetRegret    = 0.05
	// A gain share needs a gain to share: below 5 % of single path's time, mp-adaptive is held to being at most
	// 5 % slower than single path instead.
	minGainFrac = 0.05
	// Slower: mp-adaptive's median PLT above 1.10 x the better mode's + 100 ms.
	slowerFactor = 1.10
	slowerMS     = 100
	// MinReps is the fewest ok loads per (page, mode) the medians should rest on; pages with fewer are listed.
	MinReps = 3
)

// Bases of a decision (the host's Decision.basis): from measured links, from priors per technology, or the
// baseline rule. Decisions without one are counted as "none given".
var Bases = []string{"measured", "prior", "rule"}

// Weights value a load's outcome in seconds: a second of page load time, a joule of radio energy, a cellular MB.
type Weights struct {
	TimePerS   float64 `json:"time_per_s"`
	EnergyPerJ float64 `json:"energy_per_j"`
	CellPerMB  float64 `json:"cell_per_mb"`
	Mode       string  `json:"-"` // the mode they are of (defaults.mode)
	Source     string  `json:"-"`
}

// LoadWeights reads the weights of the mode a fresh install decides with (policy-models/model.json:
// defaults.mode, then modes.<mode>): the user the grid's mp-adaptive loads stand for.
// Its bytes_per_mb (a MB delivered within the deadline) is left out: a measured page load time already counts
// what arrived in time.
func LoadWeights(modelFile string) (Weights, error) {
	b, err := os.ReadFile(modelFile)
	if err != nil {
		return Weights{}, err
	}
	var f struct {
		Defaults struct {
			Mode string `json:"mode"`
		} `json:"defaults"`
		Modes map[string]*Weights `json:"modes"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return Weights{}, fmt.Errorf("%s: %w", modelFile, err)
	}
	mode := f.Defaults.Mode
	if mode == "" {
		return Weights{}, fmt.Errorf("%s: defaults.mode: missing", modelFile)
	}
	w := f.Modes[mode]
	if w == nil {
		return Weights{}, fmt.Errorf("%s: modes.%s: missing", modelFile, mode)
	}
	for name, v := range map[string]float64{"time_per_s": w.TimePerS, "energy_per_j": w.EnergyPerJ, "cell_per_mb": w.CellPerMB} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return Weights{}, fmt.Errorf("%s: modes.%s.%s: %v, want a number >= 0", modelFile, mode, name, v)
		}
	}
	if w.TimePerS <= 0 {
		return Weights{}, fmt.Errorf("%s: modes.%s.time_per_s: %v, want > 0", modelFile, mode, w.TimePerS)
	}
	w.Mode = mode
	w.Source = modelFile + " modes." + mode
	return *w, nil
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

// DecisionPage is one page's medians under each mode.
type DecisionPage struct {
	Page, Proto string
	Bytes       int64
	N           map[string]int     // ok loads per mode
	PLT         map[string]float64 // median ms
	CellRx      map[string]float64 // median wwan0 rx bytes
	CellJ       map[string]float64 // median cellular radio J (NaN without energy)
	U           map[string]float64 // median utility (NaN without energy)
	Oracle      string             // the mode with the higher median utility, "" when unknown
	// Us are the loads' utilities per mode and Reps their repetitions, for the regret's resampled interval.
	Us   map[string][]float64
	Reps map[string][]int
}

// ProfileDecisions are one profile's measures.
type ProfileDecisions struct {
	Profile string
	History []string       // the mp-adaptive loads' history settings
	OK      map[string]int // ok loads per mode
	Failed  map[string]int // failed loads per mode
	Pages   []*DecisionPage

	Large, Small []string // page keys
	// Sums of median PLT over large pages, ms.
	SumSingle, SumAlways, SumAdaptive float64
	// GainShare = (SumSingle - SumAdaptive) / (SumSingle - SumAlways); GainNA when mp-always gains < 5 %, then
	// GainHeld means mp-adaptive is at most 5 % slower than single path.
	GainShare float64
	GainNA    bool
	GainHeld  bool
	// CellShare: mp-adaptive's wwan0 rx bytes / mp-always's, small pages (sums of medians); CellJShare the same
	// for cellular radio energy. NaN when not defined.
	CellShare, CellJShare float64
	CellHeld              bool
	Slower                []string // pages where mp-adaptive is > 10 % (+ 100 ms) slower than the better mode
	Compared              int      // pages with all three modes
	Basis                 map[string]int
	Decided               int
	// OracleGainShare is the gain share the utility oracle itself would keep (NaN when the gain share is not
	// defined or a large page has no oracle), and OracleAlways on how many large pages it takes mp-always: where
	// the oracle keeps less than TargetGainShare, meeting the gain share means taking mp-always where it costs
	// utility, which only the regret target's margin allows.
	OracleGainShare float64
	OracleAlways    int
	// Regret = sum(U_oracle - U_adaptive) / sum |U_oracle| over pages with energy in all three modes.
	Regret     float64
	RegretHeld bool
	// RegretLo and RegretHi bound the middle 90 % of the regret over the run's loads resampled (regretInterval);
	// NaN when not defined.
	RegretLo, RegretHi float64
	FewReps            []string // metric pages with fewer than MinReps ok loads in some mode
}

// Decisions is the benchmark's outcome per profile.
type Decisions struct {
	Single, Always, Adaptive string
	Weights                  Weights
	Profiles                 []*ProfileDecisions
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

// AnalyzeDecisions computes the measures for every profile whose runs have the three modes. Failed loads are
// counted per mode and left out of every median.
func AnalyzeDecisions(loads []*Load, w Weights) *Decisions {
	d := &Decisions{Single: ModeSPWiFi, Always: ModeMPAlways, Adaptive: ModeMPAdaptive, Weights: w}
	modes := []string{d.Single, d.Always, d.Adaptive}
	type key struct{ profile, page string }
	byProfile := map[string]*ProfileDecisions{}
	perPage := map[key]map[string][]*Load{}
	bytesOf := map[key]int64{}
	var order []string
	for _, l := range loads {
		if !oneOf(l.Mode, modes...) {
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
			for _, m := range modes {
				var plt, rx, cj, u []float64
				var reps []int
				for _, l := range ls[m] {
					reps = append(reps, l.Rep)
					plt = append(plt, l.PLTms)
					rx = append(rx, float64(l.LinkBytes[IfCell].Rx))
					if l.HasEnergy() {
						cj = append(cj, l.Cell.TotalJ)
					}
					u = append(u, w.Utility(l))
				}
				p.N[m] = len(ls[m])
				p.PLT[m], p.CellRx[m], p.CellJ[m], p.U[m] = median(plt), median(rx), median(cj), median(u)
				if p.Us == nil {
					p.Us, p.Reps = map[string][]float64{}, map[string][]int{}
				}
				p.Us[m], p.Reps[m] = u, reps
			}
			if us, ua := p.U[d.Single], p.U[d.Always]; !math.IsNaN(us) && !math.IsNaN(ua) {
				p.Oracle = d.Single
				if ua > us {
					p.Oracle = d.Always
				}
			}
			pd.Pages = append(pd.Pages, p)
		}
		pd.compute(d)
		d.Profiles = append(d.Profiles, pd)
	}
	return d
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (pd *ProfileDecisions) compute(d *Decisions) {
	var cm, ca, jm, ja, regretNum, regretDen float64
	regretPages := 0
	jOK, oracleOK, sumOracle := true, true, 0.0
	for _, p := range pd.Pages {
		k := pageKey(p.Page, p.Proto)
		hasSingle, hasAlways, hasAdaptive := p.N[d.Single] > 0, p.N[d.Always] > 0, p.N[d.Adaptive] > 0
		if !hasSingle || !hasAlways || !hasAdaptive {
			continue
		}
		pd.Compared++
		metric := p.Bytes >= LargePageBytes || p.Bytes < DecisionSmallBytes
		if metric && (p.N[d.Single] < MinReps || p.N[d.Always] < MinReps || p.N[d.Adaptive] < MinReps) {
			pd.FewReps = append(pd.FewReps, pd.label(k))
		}
		if p.Bytes >= LargePageBytes {
			pd.Large = append(pd.Large, k)
			pd.SumSingle += p.PLT[d.Single]
			pd.SumAlways += p.PLT[d.Always]
			pd.SumAdaptive += p.PLT[d.Adaptive]
			if p.Oracle == "" {
				oracleOK = false
			} else {
				sumOracle += p.PLT[p.Oracle]
				if p.Oracle == d.Always {
					pd.OracleAlways++
				}
			}
		}
		if p.Bytes < DecisionSmallBytes {
			pd.Small = append(pd.Small, k)
			cm += p.CellRx[d.Always]
			ca += p.CellRx[d.Adaptive]
			if math.IsNaN(p.CellJ[d.Always]) || math.IsNaN(p.CellJ[d.Adaptive]) {
				jOK = false
			} else {
				jm += p.CellJ[d.Always]
				ja += p.CellJ[d.Adaptive]
			}
		}
		if p.PLT[d.Adaptive] > slowerFactor*math.Min(p.PLT[d.Single], p.PLT[d.Always])+slowerMS {
			pd.Slower = append(pd.Slower, pd.label(k))
		}
		if p.Oracle != "" && !math.IsNaN(p.U[d.Adaptive]) {
			uo := p.U[p.Oracle]
			regretNum += uo - p.U[d.Adaptive]
			regretDen += math.Abs(uo)
			regretPages++
		}
	}
	switch {
	case len(pd.Large) == 0:
		pd.GainShare, pd.GainHeld = math.NaN(), false
	case pd.SumSingle-pd.SumAlways < minGainFrac*pd.SumSingle:
		pd.GainShare, pd.GainNA = math.NaN(), true
		pd.GainHeld = pd.SumAdaptive <= (1+minGainFrac)*pd.SumSingle
	default:
		pd.GainShare = (pd.SumSingle - pd.SumAdaptive) / (pd.SumSingle - pd.SumAlways)
		pd.GainHeld = pd.GainShare >= TargetGainShare
	}
	pd.OracleGainShare = math.NaN()
	if !math.IsNaN(pd.GainShare) && oracleOK {
		pd.OracleGainShare = (pd.SumSingle - sumOracle) / (pd.SumSingle - pd.SumAlways)
	}
	pd.CellShare, pd.CellJShare = math.NaN(), math.NaN()
	if len(pd.Small) > 0 && cm > 0 {
		pd.CellShare = ca / cm
		pd.CellHeld = pd.CellShare <= TargetCellShare
	}
	if len(pd.Small) > 0 && jOK && jm > 0 {
		pd.CellJShare = ja / jm
	}
	pd.Regret = math.NaN()
	pd.RegretLo, pd.RegretHi = math.NaN(), math.NaN()
	if regretPages > 0 && regretDen > 0 {
		pd.Regret = regretNum / regretDen
		pd.RegretHeld = pd.Regret <= TargetRegret
		pd.RegretLo, pd.RegretHi = regretInterval(pd.Pages, d)
	}
}

// Resamples of regretInterval, and its fixed seed: the same runs give the same report.
const (
	regretResamples = 2000
	regretSeed      = 11
)

// regretInterval is the 5th and 95th percentile of the regret when each page's repetitions are drawn again, with
// replacement, as many as there were, and the medians and the oracle taken again (a percentile bootstrap). A
// repetition's three modes are drawn together: the grid loads them on the same trace offset and with the same
// random losses. It says how far one run's three to five repetitions per page can move the regret; with so few it
// is coarse. A page whose modes lack a common repetition is drawn per mode; pages the regret leaves out (no
// energy, a mode missing) are left out here too.
func regretInterval(pages []*DecisionPage, d *Decisions) (lo, hi float64) {
	modes := [3]string{d.Single, d.Always, d.Adaptive}
	type pageDraw struct {
		paired [][3]float64 // utilities of the repetitions all three modes have
		apart  [3][]float64 // else each mode's loads
	}
	var use []pageDraw
	for _, p := range pages {
		var pd pageDraw
		ok := true
		byRep := [3]map[int]float64{}
		for i, m := range modes {
			u := p.Us[m]
			if len(u) == 0 || slices.ContainsFunc(u, math.IsNaN) {
				ok = false
				break
			}
			pd.apart[i] = u
			byRep[i] = map[int]float64{}
			for j, r := range p.Reps[m] {
				byRep[i][r] = u[j]
			}
			if len(byRep[i]) != len(u) {
				byRep[0] = nil // repetitions not told apart (or not recorded): drawn per mode
			}
		}
		if !ok {
			continue
		}
		for r, u0 := range byRep[0] {
			u1, ok1 := byRep[1][r]
			u2, ok2 := byRep[2][r]
			if ok1 && ok2 {
				pd.paired = append(pd.paired, [3]float64{u0, u1, u2})
			}
		}
		sort.Slice(pd.paired, func(a, b int) bool { return pd.paired[a][0] < pd.paired[b][0] }) // map order is random
		use = append(use, pd)
	}
	if len(use) == 0 {
		return math.NaN(), math.NaN()
	}
	rng := rand.New(rand.NewPCG(regretSeed, uint64(len(use))))
	var x [3][]float64
	rs := make([]float64, 0, regretResamples)
	for range regretResamples {
		var num, den float64
		for _, pd := range use {
			for i := range x {
				x[i] = x[i][:0]
			}
			if n := len(pd.paired); n > 0 {
				for range n {
					t := pd.paired[rng.IntN(n)]
					for i := range x {
						x[i] = append(x[i], t[i])
					}
				}
			} else {
				for i, u := range pd.apart {
					for range u {
						x[i] = append(x[i], u[rng.IntN(len(u))])
					}
				}
			}
			uo := math.Max(median(x[0]), median(x[1]))
			num += uo - median(x[2])
			den += math.Abs(uo)
		}
		if den > 0 {
			rs = append(rs, num/den)
		}
	}
	if len(rs) == 0 {
		return math.NaN(), math.NaN()
	}
	sort.Float64s(rs)
	return rs[int(0.05*float64(len(rs)-1))], rs[int(math.Ceil(0.95*float64(len(rs)-1)))]
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

// regretCell is the report.md table's regret: the regret, then its resampled interval in brackets.
func regretCell(pd *ProfileDecisions) string {
	if iv := pd.RegretIntervalText(); iv != "" {
		return pd.RegretText() + " (" + iv + ")"
	}
	return pd.RegretText()
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

// WriteSummary prints the one-screen summary: a line per profile and the targets.
func (d *Decisions) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "Decisions: %s against %s and %s (targets per profile: gain share >= %.1f on pages >= 1 MB, cellular share <= %.1f on pages < 200 kB, regret <= %.0f %%)\n",
		d.Adaptive, d.Single, d.Always, TargetGainShare, TargetCellShare, 100*TargetRegret)
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
	fmt.Fprintf(w, "%-20s %-24s %-12s %-7s %-13s %-14s %s\n", "profile", "gain share", "cell share", "cell J", "regret", "slower >10 %", "decisions by basis; loads ok/failed")
	for _, pd := range d.Profiles {
		failed, ok := 0, 0
		for _, n := range pd.Failed {
			failed += n
		}
		for _, n := range pd.OK {
			ok += n
		}
		fmt.Fprintf(w, "%-20s %-24s %-12s %-7s %-13s %-14s %s; %d/%d\n", pd.Profile, pd.GainText(), pd.CellText(), ratioText(pd.CellJShare),
			pd.RegretText(), fmt.Sprintf("%d of %d", len(pd.Slower), pd.Compared), pd.BasisText(), ok, failed)
		if len(pd.Slower) > 0 {
			fmt.Fprintf(w, "%-20s   slower: %s\n", "", strings.Join(pd.Slower, ", "))
		}
	}
	fmt.Fprintf(w, "gain share = sum over large pages of (median PLT %s - %s) / (%s - %s); cell share = %s's wwan0 rx bytes / %s's; regret: see report.md\n",
		d.Single, d.Adaptive, d.Single, d.Always, d.Adaptive, d.Always)
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

// markdown is the report's Decisions section.
func (d *Decisions) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## Decisions: %s against %s and %s\n\n", d.Adaptive, d.Single, d.Always)
	p("How much of always-multipath's gain the adaptive mode keeps, and how much of its cost it skips (issue 11's benchmark). ")
	p("Each number is a sum or ratio of **per-page medians** over ok loads; failed loads are counted below and left out. ")
	p("Pages of at least 1 MB are large, pages under 200 kB small (1 MB = 10^6 bytes, 1 kB = 1000 bytes); pages in between count only towards the slower pages and the regret.\n\n")
	p("- **Gain share** = Σ_large (PLT %s − PLT %s) / Σ_large (PLT %s − PLT %s): the share of %s's page-load-time reduction that %s keeps. ", d.Single, d.Adaptive, d.Single, d.Always, d.Always, d.Adaptive)
	p("Where %s gains less than 5 %% of %s's time it reads n/a, and the target becomes %s at most 5 %% slower than %s. Target ≥ %.1f.\n", d.Always, d.Single, d.Adaptive, d.Single, TargetGainShare)
	p("- **Cell share** = Σ_small wwan0 received bytes of %s / those of %s. Target ≤ %.1f. **Cell J share**: the same for the cellular radio's energy (tail included).\n", d.Adaptive, d.Always, TargetCellShare)
	p("- **Slower pages**: %s's median PLT above 1.10 × the better of %s and %s + 100 ms.\n", d.Adaptive, d.Single, d.Always)
	p("- **Basis**: what %s's decisions rested on, as the host reports it (measured links, priors per technology, or the baseline rule); \"none given\" when the host gave no basis.\n", d.Adaptive)
	if math.IsNaN(d.Weights.TimePerS) {
		p("- **Regret**: not computed (no model weights given to the report).\n\n")
	} else {
		p("- **Utility** of a load, in seconds-equivalent: U = −(%g × PLT s + %g × radio energy J + %g × cellular MB), with the weights of the mode a fresh install decides with, %s (`%s`: time_per_s, energy_per_j, cell_per_mb; its bytes_per_mb is left out, the measured PLT already counts what arrived in time). ",
			d.Weights.TimePerS, d.Weights.EnergyPerJ, d.Weights.CellPerMB, cmp.Or(d.Weights.Mode, "unnamed"), d.Weights.Source)
		p("Radio energy is WiFi + cellular from the packet timelines (the energy simulation above, tail included); cellular MB is wwan0 received + sent. ")
		p("The **oracle** takes, per page, the better of %s and %s by median utility. **Regret** = Σ_pages (U_oracle − U_%s) / Σ_pages |U_oracle|, over pages with energy under all three modes. It is negative where %s beats both. Target ≤ %.0f %%. In brackets, the middle 90 %% of the regret over %d resamples of the run's repetitions (each page's repetitions drawn again with replacement, a repetition's three modes together, the medians and the oracle taken again): how far the run's few loads per page can move it.\n\n", d.Single, d.Always, d.Adaptive, d.Adaptive, 100*TargetRegret, regretResamples)
	}
	p("| profile | %s history | gain share | Σ large PLT s: %s / %s / %s | cell share | cell J share | regret | slower pages | decisions by basis | ok loads (failed): %s, %s, %s |\n", d.Adaptive, d.Single, d.Always, d.Adaptive, d.Single, d.Always, d.Adaptive)
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, pd := range d.Profiles {
		hist := strings.Join(pd.History, ", ")
		if hist == "" {
			hist = "not recorded"
		}
		sums := "—"
		if len(pd.Large) > 0 {
			sums = fmt.Sprintf("%.1f / %.1f / %.1f", pd.SumSingle/1000, pd.SumAlways/1000, pd.SumAdaptive/1000)
		}
		slower := fmt.Sprintf("%d of %d", len(pd.Slower), pd.Compared)
		if len(pd.Slower) > 0 {
			slower += ": " + strings.Join(pd.Slower, ", ")
		}
		var loads []string
		for _, m := range []string{d.Single, d.Always, d.Adaptive} {
			loads = append(loads, fmt.Sprintf("%d (%d)", pd.OK[m], pd.Failed[m]))
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(pd.Profile), hist, pd.GainText(), sums, pd.CellText(), ratioText(pd.CellJShare),
			regretCell(pd), mdCell(slower), pd.BasisText(), strings.Join(loads, ", "))
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
		p("### Decisions per page: profile `%s`\n\n", pd.Profile)
		p("| page | proto | size | median PLT ms (n): %s | %s | %s | median wwan0 rx kB: %s | %s | median U s: %s | %s | %s | oracle |\n", d.Single, d.Always, d.Adaptive, d.Always, d.Adaptive, d.Single, d.Always, d.Adaptive)
		p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, pg := range pd.Pages {
			plt := func(m string) string { return fmt.Sprintf("%s (%d)", msText(pg.PLT[m]), pg.N[m]) }
			kb := func(m string) string {
				if math.IsNaN(pg.CellRx[m]) {
					return "—"
				}
				return fmt.Sprintf("%.1f", pg.CellRx[m]/1000)
			}
			oracle := pg.Oracle
			if oracle == "" {
				oracle = "—"
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(pg.Page), pg.Proto, humanBytes(pg.Bytes),
				plt(d.Single), plt(d.Always), plt(d.Adaptive), kb(d.Always), kb(d.Adaptive), uText(pg.U[d.Single]), uText(pg.U[d.Always]), uText(pg.U[d.Adaptive]), oracle)
		}
		p("\n")
	}
	return b.String()
}
