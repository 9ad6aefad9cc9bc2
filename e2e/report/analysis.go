package report

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/mpsurf/mpsurf/e2e/energy"
	"github.com/mpsurf/mpsurf/native-host/radio"
)

// SmallPageBytes is the largest "small page": seed 001 section 3.2 (Fig. 2, Fig. 4) loads synthetic pages of
// 2 KB to 100 KB. KB is read as 1024 bytes so that a 100 KiB page counts as small either way.
const SmallPageBytes = 100 * 1024

// Models are the three radio models a report needs.
type Models struct {
	LTE, ThreeG, WiFi *radio.Model
}

// LoadModels reads power-lte.json, power-3g.json and power-wifi.json from dir.
func LoadModels(dir string) (Models, error) {
	var m Models
	for _, x := range []struct {
		tech string
		dst  **radio.Model
	}{{radio.LTE, &m.LTE}, {radio.ThreeG, &m.ThreeG}, {radio.WiFi, &m.WiFi}} {
		mod, err := radio.Load(filepath.Join(dir, "power-"+x.tech+".json"))
		if err != nil {
			return Models{}, err
		}
		if mod.Technology != x.tech {
			return Models{}, fmt.Errorf("%s: technology %q, want %q", filepath.Join(dir, "power-"+x.tech+".json"), mod.Technology, x.tech)
		}
		*x.dst = mod
	}
	return m, nil
}

func (m Models) cell(tech string) *radio.Model {
	if tech == Cell3G {
		return m.ThreeG
	}
	return m.LTE
}

// Load is one page load with its energy.
type Load struct {
	Record
	WiFi, Cell *energy.Result // nil when the energy could not be computed
	EnergyErr  string         // why not
	Notes      []string       // e.g. an absent timeline file
}

// HasEnergy reports whether both radios' energy is known.
func (l *Load) HasEnergy() bool { return l.WiFi != nil && l.Cell != nil }

// RadioJ is WiFi plus cellular radio energy, NaN when unknown.
func (l *Load) RadioJ() float64 {
	if !l.HasEnergy() {
		return math.NaN()
	}
	return l.WiFi.TotalJ + l.Cell.TotalJ
}

// RadioNoTailJ is RadioJ without tail energy.
func (l *Load) RadioNoTailJ() float64 {
	if !l.HasEnergy() {
		return math.NaN()
	}
	return l.WiFi.NoTailJ() + l.Cell.NoTailJ()
}

// traceCache parses each timeline file once: the link emulator may write one file per interface for a whole
// testbed session, shared by every load of that session.
type traceCache map[string]cachedTrace

type cachedTrace struct {
	pkts []radio.Packet
	err  error
}

func (c traceCache) get(path string) ([]radio.Packet, error) {
	if t, ok := c[path]; ok {
		return t.pkts, t.err
	}
	p, err := energy.ReadTraceFile(path)
	c[path] = cachedTrace{p, err}
	return p, err
}

// window returns the packets of sorted pkts that fall in [start, end].
func window(pkts []radio.Packet, start, end int64) []radio.Packet {
	lo := sort.Search(len(pkts), func(i int) bool { return pkts[i].T >= start })
	hi := sort.Search(len(pkts), func(i int) bool { return pkts[i].T > end })
	return pkts[lo:hi]
}

// timelineDir is the load's timeline directory, a relative one resolved against baseDir.
func (l *Load) timelineDir(baseDir string) string {
	if filepath.IsAbs(l.TimelineDir) {
		return l.TimelineDir
	}
	return filepath.Join(baseDir, l.TimelineDir)
}

// loadPackets is, per timeline file of interface ifname, the packets inside the loads' [start, end] windows,
// sorted: the earlier traffic the observed accounting walks to each load's start. Packets outside every
// window are left out (a load's closing packets after its end, the deciding hosts' path probes just before
// their loads, failed loads): no load is charged their energy, so none may be spared a promotion or a tail by
// them, and a load's own host's probe would otherwise hide the promotion that probe caused.
func loadPackets(loads []*Load, baseDir, ifname string, cache traceCache) map[string][]radio.Packet {
	wins := map[string][]energy.Window{}
	for _, l := range loads {
		path := filepath.Join(l.timelineDir(baseDir), ifname+".csv")
		wins[path] = append(wins[path], energy.Window{Start: l.StartUnixNS, End: l.EndUnixNS})
	}
	out := map[string][]radio.Packet{}
	for path, ws := range wins {
		pkts, err := cache.get(path)
		if err != nil {
			continue // computeEnergy reports it
		}
		sort.Slice(ws, func(i, j int) bool { return ws[i].Start < ws[j].Start })
		// Overlapping windows are merged, so that no packet is taken twice.
		var merged []energy.Window
		for _, w := range ws {
			if n := len(merged); n > 0 && w.Start <= merged[n-1].End {
				merged[n-1].End = max(merged[n-1].End, w.End)
				continue
			}
			merged = append(merged, w)
		}
		for _, w := range merged {
			out[path] = append(out[path], window(pkts, w.Start, w.End)...)
		}
	}
	return out
}

// computeEnergy replays the load's two timelines. prior holds, per cellular timeline file, the packets the
// observed accounting walks to the load's start (loadPackets); only cellInit StartObserved reads it.
func (l *Load) computeEnergy(baseDir string, models Models, cellInit energy.Initial, cache traceCache, prior map[string][]radio.Packet) {
	dir := l.timelineDir(baseDir)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		l.EnergyErr = fmt.Sprintf("timeline_dir %s is not a readable directory", dir)
		return
	}
	w := energy.Window{Start: l.StartUnixNS, End: l.EndUnixNS}
	for _, x := range []struct {
		ifname string
		model  *radio.Model
		init   energy.Initial
		dst    **energy.Result
	}{
		{IfWiFi, models.WiFi, energy.StartIdle, &l.WiFi},
		{IfCell, models.cell(l.CellTech), cellInit, &l.Cell},
	} {
		path := filepath.Join(dir, x.ifname+".csv")
		pkts, err := cache.get(path)
		if errors.Is(err, fs.ErrNotExist) {
			l.Notes = append(l.Notes, x.ifname+".csv absent: no traffic assumed")
			err = nil
		}
		if err != nil {
			l.WiFi, l.Cell = nil, nil
			l.EnergyErr = err.Error()
			return
		}
		var r energy.Result
		if x.init == energy.StartObserved {
			// The earlier loads' packets count whichever mode's loads carried them: the radio saw them all.
			r, err = energy.SimulateFrom(x.model, window(pkts, w.Start, w.End), w, energy.StartAt(x.model, prior[path], w.Start))
		} else {
			r, err = energy.Simulate(x.model, window(pkts, w.Start, w.End), w, x.init)
		}
		if err != nil {
			l.WiFi, l.Cell = nil, nil
			l.EnergyErr = fmt.Sprintf("%s: %v", path, err)
			return
		}
		*x.dst = &r
	}
}

// GroupKey is a set of link conditions: profile and cellular technology.
type GroupKey struct{ Profile, CellTech string }

func (g GroupKey) String() string { return g.Profile + " / " + g.CellTech }

// PageKey identifies a page under one protocol and set of conditions.
type PageKey struct {
	GroupKey
	Proto, Page string
}

// ModeStat holds one mode's statistics for a page, over its ok loads.
type ModeStat struct {
	PLT          Stat // ms
	Energy       Stat // J, both radios, tail included (loads with known energy)
	EnergyNoTail Stat // J, tail excluded
	CellJ, WiFiJ Stat
	Multipath    int // loads whose decision chose multipath
	Decided      int // loads with a decision
	HeaderSeen   int
}

// Page gathers a page's statistics per mode and the derived numbers.
type Page struct {
	PageKey
	Bytes       int64
	Objects     int
	Mode        map[string]*ModeStat
	G           map[string]float64 // seed 000's gain per MP mode (fraction, not %)
	Ratio       map[string]float64 // MP / sp-wifi radio energy, tail included
	RatioNoTail map[string]float64 // tail excluded
}

// Small reports whether the page is a small page (seed 001 Fig. 2-4).
func (p *Page) Small() bool { return p.Bytes <= SmallPageBytes }

// Analysis is everything the report shows.
type Analysis struct {
	Loads    []*Load // every record, in file order
	OK       []*Load
	Failed   []*Load
	NoEnergy []*Load // ok loads without energy
	Groups   []GroupKey
	Pages    map[GroupKey][]*Page // sorted by size, then page, then protocol
	CellInit energy.Initial
	Models   Models
	// Preference is the one whose adaptive loads the per-page statistics take (Analyze).
	Preference string
}

// Analyze computes energy for every ok load and the statistics. baseDir resolves relative timeline dirs. The
// per-page statistics take an adaptive load under preference pref (or one that names none) as its mode's, and
// one under another preference apart ("mp-adaptive (balanced)"), which the seed comparison leaves out: a mode's
// numbers there are one user's. The Decisions section compares every preference.
func Analyze(recs []Record, baseDir string, models Models, cellInit energy.Initial, pref string) *Analysis {
	a := &Analysis{Pages: map[GroupKey][]*Page{}, CellInit: cellInit, Models: models}
	byPage := map[PageKey][]*Load{}
	cache := traceCache{}
	for _, r := range recs {
		l := &Load{Record: r}
		a.Loads = append(a.Loads, l)
		if !r.OK {
			a.Failed = append(a.Failed, l)
			continue
		}
		a.OK = append(a.OK, l)
	}
	var prior map[string][]radio.Packet
	if cellInit == energy.StartObserved {
		prior = loadPackets(a.OK, baseDir, IfCell, cache)
	}
	for _, l := range a.OK {
		r := l.Record
		l.computeEnergy(baseDir, models, cellInit, cache, prior)
		if !l.HasEnergy() {
			a.NoEnergy = append(a.NoEnergy, l)
		}
		k := PageKey{GroupKey{r.Profile, r.CellTech}, r.Proto, r.Page}
		byPage[k] = append(byPage[k], l)
	}
	a.Preference = pref
	groups := map[GroupKey]bool{}
	for k, loads := range byPage {
		groups[k.GroupKey] = true
		a.Pages[k.GroupKey] = append(a.Pages[k.GroupKey], newPage(k, loads, pref))
	}
	for g := range groups {
		a.Groups = append(a.Groups, g)
		ps := a.Pages[g]
		sort.Slice(ps, func(i, j int) bool {
			if ps[i].Bytes != ps[j].Bytes {
				return ps[i].Bytes < ps[j].Bytes
			}
			if ps[i].Page != ps[j].Page {
				return ps[i].Page < ps[j].Page
			}
			return protoRank(ps[i].Proto) < protoRank(ps[j].Proto)
		})
	}
	sort.Slice(a.Groups, func(i, j int) bool {
		if a.Groups[i].Profile != a.Groups[j].Profile {
			return a.Groups[i].Profile < a.Groups[j].Profile
		}
		return a.Groups[i].CellTech < a.Groups[j].CellTech
	})
	return a
}

func protoRank(p string) int {
	for i, x := range Protos {
		if x == p {
			return i
		}
	}
	return len(Protos)
}

func newPage(k PageKey, loads []*Load, pref string) *Page {
	p := &Page{PageKey: k, Mode: map[string]*ModeStat{}, G: map[string]float64{}, Ratio: map[string]float64{}, RatioNoTail: map[string]float64{}}
	per := map[string][]*Load{}
	for _, l := range loads {
		mode := l.Mode
		if l.Preference != "" && l.Preference != pref {
			mode += " (" + l.Preference + ")"
		}
		per[mode] = append(per[mode], l)
		// Page size and object count come from the records; if they differ between loads, the largest wins.
		p.Bytes = max(p.Bytes, l.PageBytes)
		p.Objects = max(p.Objects, l.Objects)
	}
	for mode, ls := range per {
		var plt, e, en, c, w []float64
		ms := &ModeStat{}
		for _, l := range ls {
			plt = append(plt, l.PLTms)
			e = append(e, l.RadioJ())
			en = append(en, l.RadioNoTailJ())
			if l.HasEnergy() {
				c = append(c, l.Cell.TotalJ)
				w = append(w, l.WiFi.TotalJ)
			}
			if l.Decision != nil {
				ms.Decided++
				if l.Decision.Multipath {
					ms.Multipath++
				}
			}
			if l.HeaderSeen {
				ms.HeaderSeen++
			}
		}
		ms.PLT, ms.Energy, ms.EnergyNoTail, ms.CellJ, ms.WiFiJ = Summarize(plt), Summarize(e), Summarize(en), Summarize(c), Summarize(w)
		p.Mode[mode] = ms
	}
	wifi, cell := p.Mode[ModeSPWiFi], p.Mode[ModeSPCell]
	for _, mp := range MPModes {
		m := p.Mode[mp]
		if m == nil {
			continue
		}
		if wifi != nil && cell != nil {
			best := math.Min(wifi.PLT.Mean, cell.PLT.Mean)
			p.G[mp] = (best - m.PLT.Mean) / best
		}
		if wifi != nil && wifi.Energy.N > 0 && m.Energy.N > 0 && wifi.Energy.Mean > 0 {
			p.Ratio[mp] = m.Energy.Mean / wifi.Energy.Mean
		}
		if wifi != nil && wifi.EnergyNoTail.N > 0 && m.EnergyNoTail.N > 0 && wifi.EnergyNoTail.Mean > 0 {
			p.RatioNoTail[mp] = m.EnergyNoTail.Mean / wifi.EnergyNoTail.Mean
		}
	}
	return p
}

// pagesWhere filters a group's pages.
func (a *Analysis) pagesWhere(g GroupKey, keep func(*Page) bool) []*Page {
	var out []*Page
	for _, p := range a.Pages[g] {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// values collects a per-page number over pages where it exists.
func values(ps []*Page, get func(*Page) (float64, bool)) []float64 {
	var out []float64
	for _, p := range ps {
		if v, ok := get(p); ok {
			out = append(out, v)
		}
	}
	return out
}

// TailOverlaps counts ok loads that started before the previous ok load's cellular radio had drained (its
// end plus the model's drain): for them an idle cellular radio at the start is not what happened.
func (a *Analysis) TailOverlaps() int {
	ls := append([]*Load{}, a.OK...)
	sort.Slice(ls, func(i, j int) bool { return ls[i].StartUnixNS < ls[j].StartUnixNS })
	n := 0
	for i := 1; i < len(ls); i++ {
		prev := ls[i-1]
		if prev.EndUnixNS+int64(a.Models.cell(prev.CellTech).Drain()) > ls[i].StartUnixNS {
			n++
		}
	}
	return n
}
