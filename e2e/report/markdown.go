package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/mpsurf/mpsurf/e2e/energy"
)

// comparison is one of our per-page distributions beside a seed's published numbers.
type comparison struct {
	group    GroupKey
	metric   string
	unit     string // "%" or "x"
	vals     []float64
	seed     string  // the seed's numbers as text, "" if the seeds have none
	seedLo   float64 // the seed's range, when hasRange
	seedHi   float64
	hasRange bool
	seedAvg  float64 // the seed's average, when hasAvg
	hasAvg   bool
}

func fmtU(v float64, unit string) string {
	if unit == "%" {
		return fmt.Sprintf("%.1f %%", v)
	}
	return fmt.Sprintf("%.2fx", v)
}

func (c comparison) ours() string {
	if len(c.vals) == 0 {
		return "no data"
	}
	s := Summarize(c.vals)
	if s.N == 1 {
		return fmt.Sprintf("%s (1 page)", fmtU(s.Min, c.unit))
	}
	return fmt.Sprintf("%s to %s, median %s, mean %s (%d pages)", fmtU(s.Min, c.unit), fmtU(s.Max, c.unit), fmtU(s.Median, c.unit), fmtU(s.Mean, c.unit), s.N)
}

// position says, from the numbers alone, where our range lies against the seed's.
func (c comparison) position() string {
	if len(c.vals) == 0 {
		return ""
	}
	s := Summarize(c.vals)
	pts := " points"
	if c.unit == "x" {
		pts = ""
	}
	d := func(v float64) string {
		if c.unit == "%" {
			return fmt.Sprintf("%.1f", v)
		}
		return fmt.Sprintf("%.2fx", v)
	}
	if c.hasAvg {
		diff := s.Mean - c.seedAvg
		switch {
		case math.Abs(diff) < 1e-9:
			return "our mean equals the seed's average."
		case diff > 0:
			return fmt.Sprintf("our mean is %s%s above the seed's average (%s).", d(diff), pts, fmtU(c.seedAvg, c.unit))
		}
		return fmt.Sprintf("our mean is %s%s below the seed's average (%s).", d(-diff), pts, fmtU(c.seedAvg, c.unit))
	}
	if !c.hasRange {
		return ""
	}
	switch {
	case s.Max < c.seedLo:
		return fmt.Sprintf("our whole range lies below the seed's: our maximum is %s%s under its minimum.", d(c.seedLo-s.Max), pts)
	case s.Min > c.seedHi:
		return fmt.Sprintf("our whole range lies above the seed's: our minimum is %s%s over its maximum.", d(s.Min-c.seedHi), pts)
	}
	var parts []string
	if s.Min < c.seedLo {
		parts = append(parts, fmt.Sprintf("our minimum is %s%s below the seed's minimum", d(c.seedLo-s.Min), pts))
	}
	if s.Max > c.seedHi {
		parts = append(parts, fmt.Sprintf("our maximum is %s%s above the seed's maximum", d(s.Max-c.seedHi), pts))
	}
	if len(parts) == 0 {
		return "our range lies inside the seed's."
	}
	return strings.Join(parts, "; ") + "."
}

func (a *Analysis) comparisons() []comparison {
	var out []comparison
	for _, g := range a.Groups {
		ps := a.Pages[g]
		gain := func(proto, mode string, keep func(*Page) bool) []float64 {
			return values(ps, func(p *Page) (float64, bool) {
				v, ok := p.G[mode]
				return 100 * v, ok && p.Proto == proto && keep(p)
			})
		}
		ratio := func(mode string, tail bool, keep func(*Page) bool) []float64 {
			return values(ps, func(p *Page) (float64, bool) {
				v, ok := p.RatioNoTail[mode]
				if tail {
					v, ok = p.Ratio[mode]
				}
				return v, ok && keep(p)
			})
		}
		all := func(*Page) bool { return true }
		large := func(p *Page) bool { return !p.Small() }
		small := func(p *Page) bool { return p.Small() }
		for _, mode := range MPModes {
			adaptive := mode == ModeMPAdaptive
			seedOr := func(s string) string {
				if adaptive {
					return ""
				}
				return s
			}
			if g.CellTech == CellLTE {
				out = append(out,
					comparison{group: g, metric: "G, h2, " + mode + ", large pages (PLT reduction vs best single path)", unit: "%",
						vals: gain(ProtoH2, mode, large), seed: seedOr("seed 001: 18.22 % to 57.19 % (HTTP/2, 24 sites)"),
						seedLo: seed001PLTReductionMin, seedHi: seed001PLTReductionMax, hasRange: !adaptive},
					comparison{group: g, metric: "G, h2, " + mode + ", large pages (vs SPDY)", unit: "%",
						vals: gain(ProtoH2, mode, large), seed: seedOr("seed 000 G_SPDY: 13.4 % to 51.8 %, median 36.4 % (SPDY, 25 sites of 0.06-4.45 MB)"),
						seedLo: seed000GSPDYMin, seedHi: seed000GSPDYMax, hasRange: !adaptive},
					comparison{group: g, metric: "G, http/1.1, " + mode + ", large pages", unit: "%",
						vals: gain(ProtoHTTP1, mode, large), seed: seedOr("seed 000 G_HTTP: −41.1 % to 30.8 %, median −0.1 % (25 sites of 0.06-4.45 MB)"),
						seedLo: seed000GHTTPMin, seedHi: seed000GHTTPMax, hasRange: !adaptive},
					comparison{group: g, metric: "G, h2, " + mode + ", all pages", unit: "%", vals: gain(ProtoH2, mode, all)},
					comparison{group: g, metric: "G, http/1.1, " + mode + ", all pages", unit: "%", vals: gain(ProtoHTTP1, mode, all)},
					comparison{group: g, metric: "radio energy " + mode + " / sp-wifi, small pages, tail excluded", unit: "x",
						vals: ratio(mode, false, small), seed: seedOr("seed 001 Fig. 4: 5.5x to 7.3x (tail excluded)"),
						seedLo: seed001EnergySmallMin, seedHi: seed001EnergySmallMax, hasRange: !adaptive},
					comparison{group: g, metric: "radio energy " + mode + " / sp-wifi, small pages, tail included", unit: "x",
						vals: ratio(mode, true, small)},
				)
			} else {
				out = append(out,
					comparison{group: g, metric: "G, h2, " + mode + ", all pages (3G secondary)", unit: "%",
						vals: gain(ProtoH2, mode, all), seed: seedOr("seed 001 Fig. 3: 'negligible PLT boost' (no number given)")},
					comparison{group: g, metric: "radio energy " + mode + " / sp-wifi, all pages, tail included (3G secondary)", unit: "x",
						vals: ratio(mode, true, all), seed: seedOr("seed 001: 7.5x on average (tail treatment not stated)"),
						seedAvg: seed001Energy3G, hasAvg: !adaptive},
					comparison{group: g, metric: "radio energy " + mode + " / sp-wifi, all pages, tail excluded (3G secondary)", unit: "x",
						vals: ratio(mode, false, all), seed: seedOr("seed 001: 7.5x on average (tail treatment not stated)"),
						seedAvg: seed001Energy3G, hasAvg: !adaptive},
				)
			}
		}
	}
	return out
}

func mdCell(s string) string { return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s) }

func (a *Analysis) markdown(o Options, figs []figure, decs []*Decisions) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# MPSurf testbed report\n\n")
	p("Generated from `%s`: %d page loads, %d ok, %d failed. ", strings.Join(append([]string{o.RunsPath}, o.Pool...), "`, `"), len(a.Loads), len(a.OK), len(a.Failed))
	if len(o.Pool) > 0 {
		p("The files are pooled as one grid, each file's repetitions numbered after the previous files'. ")
	}
	p("Radio energy comes from trace-driven simulation of each load's packet timelines (e2e/energy) with the models ")
	p("`%s` v%d (LTE), `%s` v%d (3G) and `%s` v%d (WiFi) from policy-models/, ", a.Models.LTE.ID, a.Models.LTE.Version,
		a.Models.ThreeG.ID, a.Models.ThreeG.Version, a.Models.WiFi.ID, a.Models.WiFi.Version)
	p("over each load's [start, end + the model's drain]. **Cellular radio state at each load's start: `%s`**: %s. The WiFi radio starts idle. ", a.CellInit, cellInitialText(a.CellInit))
	p("Energy totals exclude idle power. Small pages are those of at most %s.\n\n", humanBytes(SmallPageBytes))

	// Setup.
	p("## Setup\n\n")
	p("Facts from the run records")
	if len(o.Environment) > 0 {
		p(" and from the machine that generated this report")
	}
	p(":\n\n")
	for _, g := range a.Groups {
		ps := a.Pages[g]
		var bytes, objs []float64
		nmin, nmax := math.MaxInt, 0
		for _, pg := range ps {
			bytes = append(bytes, float64(pg.Bytes))
			objs = append(objs, float64(pg.Objects))
			for _, m := range pg.Mode {
				nmin, nmax = min(nmin, m.PLT.N), max(nmax, m.PLT.N)
			}
		}
		bs, ob := Summarize(bytes), Summarize(objs)
		p("- Profile `%s`, cellular `%s`: %d (page, protocol) pairs, protocols %s, pages of %s to %s with %d to %d objects; ok loads per (page, protocol, mode): %d to %d.\n",
			g.Profile, g.CellTech, len(ps), strings.Join(protosOf(ps), ", "), humanBytes(int64(bs.Min)), humanBytes(int64(bs.Max)), int(ob.Min), int(ob.Max), nmin, nmax)
	}
	if a.CellInit == energy.StartObserved {
		if st := a.startStates(); st != "" {
			p("- Cellular radio at the ok loads' starts, as the earlier loads' packets left it: %s.\n", st)
		}
	}
	if n := a.TailOverlaps(); n > 0 {
		p("- %d ok loads started before the previous load's cellular tail had ended (its end plus the model's drain), so their cellular radio was not idle at their start.\n", n)
	} else if len(a.OK) > 1 {
		p("- Every ok load started after the previous load's cellular tail had ended.\n")
	}
	keys := make([]string, 0, len(o.Environment))
	for k := range o.Environment {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p("- %s: %s\n", k, o.Environment[k])
	}
	p("\n")

	// Failures.
	p("## Failures\n\n")
	if len(a.Failed) == 0 {
		p("No load failed.\n\n")
	} else {
		byMode := map[string]int{}
		for _, l := range a.Failed {
			byMode[l.Mode]++
		}
		var parts []string
		for _, m := range Modes {
			if byMode[m] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", m, byMode[m]))
			}
		}
		p("%d of %d loads failed (%s). They are excluded from every statistic below.\n\n", len(a.Failed), len(a.Loads), strings.Join(parts, ", "))
		p("| run | mode | profile | cell | page | proto | rep | error |\n|---|---|---|---|---|---|---|---|\n")
		for i, l := range a.Failed {
			if i == 100 {
				p("\n%d more failures are listed in summary.csv.\n", len(a.Failed)-100)
				break
			}
			p("| %s | %s | %s | %s | %s | %s | %d | %s |\n", mdCell(l.RunID), l.Mode, mdCell(l.Profile), l.CellTech, mdCell(l.Page), l.Proto, l.Rep, mdCell(l.Error))
		}
		p("\n")
	}
	if len(a.NoEnergy) > 0 {
		p("**Energy unavailable** for %d ok loads (their PLT still counts):\n\n", len(a.NoEnergy))
		for i, l := range a.NoEnergy {
			if i == 20 {
				p("- … %d more in summary.csv\n", len(a.NoEnergy)-20)
				break
			}
			p("- %s: %s\n", l.RunID, l.EnergyErr)
		}
		p("\n")
	}
	notes := 0
	for _, l := range a.OK {
		notes += len(l.Notes)
	}
	if notes > 0 {
		p("%d timeline files were absent and counted as no traffic on that interface (see the energy_notes column of summary.csv).\n\n", notes)
	}

	for _, dec := range decs {
		b.WriteString(dec.markdown())
	}

	// Comparison.
	p("## Our numbers beside the seeds'\n\n")
	p("G is seed 000's per-page gain (min(mean PLT sp-wifi, mean PLT sp-cell) − mean PLT mp) / min(...); seed 001's PLT reduction of HTTP/2 over MPTCP vs the best single path is the same quantity. Energy ratios are mean radio energy (WiFi + cellular) of the MP mode over that of sp-wifi, per page. The seeds had no adaptive mode.\n\n")
	comps := a.comparisons()
	p("| conditions | metric | ours | seeds |\n|---|---|---|---|\n")
	for _, c := range comps {
		if len(c.vals) == 0 && c.seed == "" {
			continue
		}
		seed := c.seed
		if seed == "" {
			seed = "—"
		}
		p("| %s | %s | %s | %s |\n", mdCell(c.group.String()), mdCell(c.metric), c.ours(), mdCell(seed))
	}
	p("\n")

	// Per-page table.
	for _, g := range a.Groups {
		p("### Per page: profile `%s`, cellular `%s`\n\n", g.Profile, g.CellTech)
		p("| page | proto | size | objects | mean PLT ms (n): sp-wifi | sp-cell | mp-always | mp-adaptive | G mp-always | G mp-adaptive | energy J: sp-wifi | mp-always | MP/SP always (excl. tail) | mp-adaptive multipath |\n")
		p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, pg := range a.Pages[g] {
			plt := func(m string) string {
				if s := pg.Mode[m]; s != nil {
					return fmt.Sprintf("%.0f (%d)", s.PLT.Mean, s.PLT.N)
				}
				return "—"
			}
			gain := func(m string) string {
				if v, ok := pg.G[m]; ok {
					return fmt.Sprintf("%.1f %%", 100*v)
				}
				return "—"
			}
			en := func(m string) string {
				if s := pg.Mode[m]; s != nil && s.Energy.N > 0 {
					return fmt.Sprintf("%.2f", s.Energy.Mean)
				}
				return "—"
			}
			ratio := "—"
			if v, ok := pg.Ratio[ModeMPAlways]; ok {
				ratio = fmt.Sprintf("%.2fx", v)
				if w, ok := pg.RatioNoTail[ModeMPAlways]; ok {
					ratio += fmt.Sprintf(" (%.2fx)", w)
				}
			}
			adapt := "—"
			if s := pg.Mode[ModeMPAdaptive]; s != nil {
				adapt = fmt.Sprintf("multipath in %d of %d decisions; header seen in %d of %d loads", s.Multipath, s.Decided, s.HeaderSeen, s.PLT.N)
			}
			p("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(pg.Page), pg.Proto, humanBytes(pg.Bytes), pg.Objects,
				plt(ModeSPWiFi), plt(ModeSPCell), plt(ModeMPAlways), plt(ModeMPAdaptive), gain(ModeMPAlways), gain(ModeMPAdaptive),
				en(ModeSPWiFi), en(ModeMPAlways), ratio, adapt)
		}
		p("\n")
	}

	// Figures.
	p("## Figures\n\n")
	if len(figs) == 0 {
		p("No figure: no ok load.\n\n")
	}
	for _, f := range figs {
		p("- [%s](%s): %s\n", f.file, f.file, f.caption)
	}
	p("\n")
	for _, f := range figs {
		p("![%s](%s)\n\n", mdCell(f.caption), f.file)
	}

	// Differences.
	p("## Differences from the seeds (derived from the data)\n\n")
	p("> This section is computed from the numbers above and states only facts. It does not explain them; an explanation belongs here only once the data has been examined.\n\n")
	p("Where our per-page ranges lie against the seeds':\n\n")
	any := false
	for _, c := range comps {
		if pos := c.position(); pos != "" {
			any = true
			p("- %s, %s: ours %s; %s — %s\n", c.group, c.metric, c.ours(), c.seed, pos)
		}
	}
	if !any {
		p("- Nothing to compare: no page has all the modes a seed number needs.\n")
	}
	p("\nKnown differences of setup (facts, not explanations):\n\n")
	var profiles []string
	for _, g := range a.Groups {
		profiles = append(profiles, fmt.Sprintf("`%s` (%s)", g.Profile, g.CellTech))
	}
	p("- Links: ours are emulated in user space between network namespaces (this kernel has no netem), conditions from the profiles %s; seed 001 §2 and seed 000 §3.2 shaped real WiFi and LTE links with DummyNet to WiFi 7.04/2.02 Mbit/s, 50 ms and LTE 9.185/2.286 Mbit/s, 70 ms; seed 001 §3.2 emulated 3G as 0.97/0.331 Mbit/s, 160 ms.\n", strings.Join(profiles, ", "))
	p("- Pages: ours are listed in the per-page tables; seed 001 replayed landing pages of 24 Alexa top-100 sites (E1, E2) and loaded synthetic pages of 2-100 KB (E3); seed 000 replayed 25 sites of 0.06-4.45 MB recorded in August 2014.\n")
	if v, ok := o.Environment["browser"]; ok {
		p("- Browser: ours %s; seed 001 used Chrome 43, seed 000 Chrome 41 (and Chrome 45 for a check).\n", v)
	} else {
		p("- Browser: ours not recorded; seed 001 used Chrome 43, seed 000 Chrome 41.\n")
	}
	if v, ok := o.Environment["kernel"]; ok {
		p("- MPTCP: ours is the upstream Linux MPTCP of kernel %s; seed 000 used MPTCP v0.89.5 on kernel 3.14.33, seed 001 the multipath-tcp.org kernel.\n", v)
	}
	p("- Energy model: ours is Huang et al. MobiSys 2012 for LTE and ARO's profiles for 3G and WiFi (policy-models/power-*.json); seed 001 Fig. 4 used the single- and multipath power models of Nika et al. WWW 2015 for a Samsung Galaxy Note without the tail, and Qian et al.'s 3G UMTS model for the 3G numbers.\n")
	p("- Cellular radio at load start: ours `%s`; seed 000 §3.3 promoted LTE to RRC_CONNECTED with pings before every load; seed 001 does not say.\n", a.CellInit)
	p("- Repetitions: ours are in the per-page tables; seed 001 loaded each page 100 times, seed 000 kept 100 successful loads per site.\n")
	return b.String()
}

// cellInitialText says what the energy accounting assumes of the cellular radio at each load's start.
func cellInitialText(init energy.Initial) string {
	switch init {
	case energy.StartConnected:
		return "promoted just before each load, as seed 000's pings before every load left it: no load pays a promotion, each pays a tail from its start (`--cell-initial connected`)"
	case energy.StartObserved:
		return "where the cellular traffic of the loads before it left it: the packets of the profile's earlier ok loads on wwan0, each between its start and end, walked through the same RRC model to the load's start (`--cell-initial observed`). " +
			"The loads of every mode of a profile run in one random order on the same emulated links, so that traffic is whichever loads came before, of any mode, and a load's energy depends on them as it would on a phone. " +
			"A load is charged the cellular energy it adds to that state: no promotion while the radio is connected or in its tail, the tail only as far as its packets extend it; " +
			"the rest of an earlier tail stays with the load that started it (summary.csv: cell_start_state, cell_anyway_j), so the loads' charges add up to what their packets cost the link. " +
			"Packets outside every ok load (a load's closing packets after its end, the deciding hosts' path probes just before their loads, failed loads) count neither for the state nor in any load's energy, as under the idle accounting. " +
			"A load with no cellular packet of an earlier load within the tail time starts idle"
	}
	return "every load that touches cellular pays a promotion and a whole tail, even where the load before it left the radio connected (`--cell-initial idle`)"
}

// cellInitialBrief is cellInitialText in one clause.
func cellInitialBrief(init energy.Initial) string {
	switch init {
	case energy.StartConnected:
		return "the cellular radio is taken as promoted just before each load (`--cell-initial connected`)"
	case energy.StartObserved:
		return "the cellular radio starts each load where the cellular packets of the profile's earlier loads left it (of any mode, in the run's random order), and a load is charged the energy it adds to that state (`--cell-initial observed`)"
	}
	return "the cellular radio is taken as idle at each load's start, so a load that touches cellular pays a promotion and a whole tail even where the load before it left the radio connected (`--cell-initial idle`)"
}

// startStates counts the ok loads by the cellular radio's state at their start, most frequent first.
func (a *Analysis) startStates() string {
	n := map[string]int{}
	for _, l := range a.OK {
		if l.Cell != nil {
			n[l.Cell.StartState]++
		}
	}
	names := make([]string, 0, len(n))
	for k := range n {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if n[names[i]] != n[names[j]] {
			return n[names[i]] > n[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}
