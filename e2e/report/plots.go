package report

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
)

// Seed numbers the report compares with (seed 001 section 3 and Fig. 4; seed 000 section 4.1.1).
const (
	seed001PLTReductionMin = 18.22 // % HTTP/2 over MPTCP vs best single path, 24 sites
	seed001PLTReductionMax = 57.19
	seed001EnergySmallMin  = 5.5 // x, MPTCP vs SPTCP radio energy, small pages, tail excluded (Fig. 4)
	seed001EnergySmallMax  = 7.3
	seed001Energy3G        = 7.5 // x on average, WiFi + 3G
	seed000GSPDYMin        = 13.4
	seed000GSPDYMax        = 51.8
	seed000GSPDYMedian     = 36.4
	seed000GHTTPMin        = -41.1
	seed000GHTTPMax        = 30.8
	seed000GHTTPMedian     = -0.1
)

// figure is one SVG file of the report.
type figure struct {
	file    string
	caption string
	chart   *chart
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func slug(s string) string { return unsafeName.ReplaceAllString(s, "_") }

func protoSlug(p string) string {
	if p == ProtoHTTP1 {
		return "http1"
	}
	return slug(p)
}

// humanBytes writes n in decimal units, as the whole report does: 1 kB = 1000 bytes, 1 MB = 10^6 bytes.
func humanBytes(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 10_000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + " kB"
	case n < 1_000_000:
		return fmt.Sprintf("%.0f kB", float64(n)/1000)
	}
	return strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64) + " MB"
}

func pageLabel(p *Page) string { return fmt.Sprintf("%s (%s)", p.Page, humanBytes(p.Bytes)) }

// pageAxis lists the distinct pages of ps (a page may appear once per protocol) in size order and indexes
// the entries by protocol and page.
func pageAxis(ps []*Page) (cats []string, ids []string, at map[[2]string]*Page) {
	at = map[[2]string]*Page{}
	seen := map[string]bool{}
	for _, p := range ps {
		at[[2]string{p.Proto, p.Page}] = p
		if !seen[p.Page] {
			seen[p.Page] = true
			ids = append(ids, p.Page)
			cats = append(cats, pageLabel(p))
		}
	}
	return cats, ids, at
}

func protosOf(ps []*Page) []string {
	var out []string
	for _, pr := range Protos {
		for _, p := range ps {
			if p.Proto == pr {
				out = append(out, pr)
				break
			}
		}
	}
	return out
}

func modesOf(ps []*Page, proto string) []string {
	var out []string
	for _, m := range Modes {
		for _, p := range ps {
			if p.Proto == proto && p.Mode[m] != nil {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// perPageChart draws one mean +- sd point per (protocol, mode) and page.
func perPageChart(title, ylab string, ps []*Page, get func(*ModeStat) Stat) *chart {
	cats, ids, at := pageAxis(ps)
	c := &chart{title: title, xLabel: "page (size)", yLabel: ylab, kind: kindPoints, categories: cats}
	for _, pr := range protosOf(ps) {
		for _, m := range modesOf(ps, pr) {
			s := series{name: pr + " " + m, values: make([]value, len(ids))}
			for i, id := range ids {
				p := at[[2]string{pr, id}]
				if p == nil || p.Mode[m] == nil {
					continue
				}
				st := get(p.Mode[m])
				if st.N == 0 {
					continue
				}
				s.values[i] = value{ok: true, y: st.Mean, err: st.SD,
					note: fmt.Sprintf("%s %s: mean %.4g, sd %.3g, n %d", pr, m, st.Mean, st.SD, st.N)}
			}
			c.series = append(c.series, s)
		}
	}
	return c
}

func hasData(c *chart) bool {
	for _, s := range c.series {
		for _, v := range s.values {
			if v.ok {
				return true
			}
		}
	}
	return false
}

func (a *Analysis) figures() []figure {
	var figs []figure
	add := func(file, caption string, c *chart) {
		if c != nil && hasData(c) {
			figs = append(figs, figure{file: file, caption: caption, chart: c})
		}
	}
	for _, g := range a.Groups {
		ps := a.Pages[g]
		tag := slug(g.Profile) + "-" + slug(g.CellTech)
		cond := fmt.Sprintf("profile %s, cellular %s", g.Profile, g.CellTech)

		add("a-plt-"+tag+".svg", "PLT per mode and page (mean ± sd), "+cond,
			perPageChart("Page load time, "+cond, "PLT (ms), mean ± sd", ps, func(m *ModeStat) Stat { return m.PLT }))
		add("b-energy-"+tag+".svg", "Radio energy (WiFi + cellular, tail included) per mode and page (mean ± sd), "+cond,
			perPageChart("Radio energy, "+cond, "energy (J), mean ± sd", ps, func(m *ModeStat) Stat { return m.Energy }))

		large := a.pagesWhere(g, func(p *Page) bool { return !p.Small() })
		add("c-fig1-large-"+tag+".svg", "Seed 001 Fig. 1 analogue: per-page mean PLT across the large pages (> 100 KB), "+cond,
			boxChart("PLT across large pages, "+cond, large))

		small := a.pagesWhere(g, func(p *Page) bool { return p.Small() })
		add("d-fig2-small-"+tag+".svg", "Seed 001 Fig. 2 analogue: small pages (≤ 100 KB), SP vs MP PLT, "+cond,
			perPageChart("Small pages: PLT, "+cond, "PLT (ms), mean ± sd", small, func(m *ModeStat) Stat { return m.PLT }))
		e := ratioChart("Small pages: radio energy MP / SP-WiFi, tail excluded, "+cond, small, false)
		if g.CellTech == CellLTE && e != nil {
			e.refLines = []refLine{{seed001EnergySmallMin, "seed 001: 5.5x"}, {seed001EnergySmallMax, "seed 001: 7.3x"}}
		}
		add("e-fig4-energy-small-"+tag+".svg", "Seed 001 Fig. 4 analogue: normalised radio energy MP / SP-WiFi for small pages, tail excluded as in the seed, "+cond, e)
		add("e-energy-small-incl-tail-"+tag+".svg", "Normalised radio energy MP / SP-WiFi for small pages, tail included, "+cond,
			ratioChart("Small pages: radio energy MP / SP-WiFi, tail included, "+cond, small, true))

		for _, pr := range protosOf(ps) {
			add("g-gain-"+tag+"-"+protoSlug(pr)+".svg",
				fmt.Sprintf("Seed 000 per-page gain G for %s, sorted, %s", pr, cond), gainChart(pr, cond, ps))
		}
	}
	for _, profile := range a.profilesWith3G() {
		add("f-3g-"+slug(profile)+".svg",
			"3G secondary: radio energy MP / SP-WiFi per page with an LTE and a 3G secondary, profile "+profile+" (seed 001: 7.5x on average with 3G)",
			a.secondaryChart(profile))
	}
	return figs
}

func boxChart(title string, ps []*Page) *chart {
	type entry struct {
		name string
		st   Stat
	}
	var es []entry
	for _, pr := range protosOf(ps) {
		for _, m := range modesOf(ps, pr) {
			vals := values(ps, func(p *Page) (float64, bool) {
				if p.Proto != pr || p.Mode[m] == nil {
					return 0, false
				}
				return p.Mode[m].PLT.Mean, true
			})
			if len(vals) > 0 {
				es = append(es, entry{pr + " " + m, Summarize(vals)})
			}
		}
	}
	c := &chart{title: title, xLabel: "protocol and mode", yLabel: "per-page mean PLT (ms)", kind: kindBoxes}
	// One box per category, each its own series so that it keeps its colour and name.
	for i, e := range es {
		c.categories = append(c.categories, e.name)
		s := series{name: e.name, values: make([]value, len(es))}
		s.values[i] = value{ok: true, y: e.st.Mean, box: e.st,
			note: fmt.Sprintf("%s over %d pages: min %.4g, median %.4g, mean %.4g, max %.4g", e.name, e.st.N, e.st.Min, e.st.Median, e.st.Mean, e.st.Max)}
		c.series = append(c.series, s)
	}
	return c
}

func ratioChart(title string, ps []*Page, tail bool) *chart {
	if len(ps) == 0 {
		return nil
	}
	cats, ids, at := pageAxis(ps)
	ylab := "radio energy, MP / SP-WiFi (×), tail excluded"
	if tail {
		ylab = "radio energy, MP / SP-WiFi (×), tail included"
	}
	c := &chart{title: title, xLabel: "page (size)", yLabel: ylab, kind: kindBars, categories: cats}
	for _, pr := range protosOf(ps) {
		for _, m := range MPModes {
			name := pr + " " + m
			s := series{name: name, values: make([]value, len(ids))}
			any := false
			for i, id := range ids {
				p := at[[2]string{pr, id}]
				if p == nil {
					continue
				}
				r, ok := p.RatioNoTail[m]
				if tail {
					r, ok = p.Ratio[m]
				}
				if ok {
					s.values[i] = value{ok: true, y: r, note: fmt.Sprintf("%s %s: %.3gx", p.Page, name, r)}
					any = true
				}
			}
			if any {
				c.series = append(c.series, s)
			}
		}
	}
	return c
}

func gainChart(proto, cond string, all []*Page) *chart {
	var ps []*Page
	for _, p := range all {
		if p.Proto == proto && len(p.G) > 0 {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	lead := ModeMPAlways
	if _, ok := ps[0].G[lead]; !ok {
		lead = ModeMPAdaptive
	}
	sort.SliceStable(ps, func(i, j int) bool {
		gi, iok := ps[i].G[lead]
		gj, jok := ps[j].G[lead]
		if iok != jok {
			return iok
		}
		return gi > gj
	})
	c := &chart{title: fmt.Sprintf("Per-page gain G, %s, %s", proto, cond), xLabel: "page (size), sorted by G of " + lead,
		yLabel: "G = (best SP PLT − MP PLT) / best SP PLT (%)", kind: kindBars}
	for _, p := range ps {
		c.categories = append(c.categories, pageLabel(p))
	}
	for _, m := range MPModes {
		s := series{name: m, values: make([]value, len(ps))}
		any := false
		for i, p := range ps {
			if g, ok := p.G[m]; ok {
				s.values[i] = value{ok: true, y: 100 * g, note: fmt.Sprintf("%s %s: G = %.1f %%", p.Page, m, 100*g)}
				any = true
			}
		}
		if any {
			c.series = append(c.series, s)
		}
	}
	if proto == ProtoH2 {
		c.refLines = []refLine{{seed000GSPDYMedian, "seed 000 median G_SPDY 36.4 %"}}
	} else {
		c.refLines = []refLine{{seed000GHTTPMedian, "seed 000 median G_HTTP −0.1 %"}}
	}
	return c
}

func (a *Analysis) profilesWith3G() []string {
	var out []string
	for _, g := range a.Groups {
		if g.CellTech == Cell3G {
			out = append(out, g.Profile)
		}
	}
	return out
}

func (a *Analysis) secondaryChart(profile string) *chart {
	lte := a.Pages[GroupKey{profile, CellLTE}]
	g3 := a.Pages[GroupKey{profile, Cell3G}]
	// The pages loaded with a 3G secondary, in size order (a.Pages is sorted), each beside its LTE twin.
	type pk = [2]string
	cats, ids := []string{}, []pk{}
	for _, p := range g3 {
		ids = append(ids, pk{p.Proto, p.Page})
		cats = append(cats, p.Proto+" "+pageLabel(p))
	}
	index := func(ps []*Page) map[pk]*Page {
		m := map[pk]*Page{}
		for _, p := range ps {
			m[pk{p.Proto, p.Page}] = p
		}
		return m
	}
	c := &chart{title: "Radio energy MP-always / SP-WiFi by secondary path, profile " + profile, xLabel: "protocol and page (size)",
		yLabel: "radio energy, MP / SP-WiFi (×)", kind: kindBars, categories: cats,
		refLines: []refLine{{seed001Energy3G, "seed 001: 7.5x with 3G"}}}
	for _, src := range []struct {
		name string
		at   map[pk]*Page
	}{{"LTE", index(lte)}, {"3G", index(g3)}} {
		for _, tail := range []bool{true, false} {
			name := src.name + " secondary, incl. tail"
			if !tail {
				name = src.name + " secondary, excl. tail"
			}
			s := series{name: name, values: make([]value, len(ids))}
			any := false
			for i, k := range ids {
				p := src.at[k]
				if p == nil {
					continue
				}
				r, ok := p.Ratio[ModeMPAlways]
				if !tail {
					r, ok = p.RatioNoTail[ModeMPAlways]
				}
				if ok {
					s.values[i] = value{ok: true, y: r, note: fmt.Sprintf("%s: %.3gx", name, r)}
					any = true
				}
			}
			if any {
				c.series = append(c.series, s)
			}
		}
	}
	return c
}
