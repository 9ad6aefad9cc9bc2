package report

import (
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/e2e/energy"
	"github.com/mpsurf/mpsurf/native-host/radio"
)

// Link rates and RTTs of the seeds' testbed (seed 000 Table 2; 3G: seed 001 section 3.2), used to make plausible
// timelines.
var links = map[string]struct{ downMbps, rttMS float64 }{
	"wifi": {7.04, 50},
	"lte":  {9.185, 70},
	"3g":   {0.97, 160},
}

const mss = 1448

type synthPage struct {
	id    string
	bytes int64
	objs  int
}

var (
	pageSmall10 = synthPage{"small-10k", 10 * 1024, 3}
	pageSmall50 = synthPage{"small-50k", 50 * 1024, 6}
	pageLarge1  = synthPage{"large-1m", 1 << 20, 40}
	pageLarge2  = synthPage{"large-2m", 2 << 20, 80}
)

// transferMS is how long bytes take on one link: three round trips of setup and request, then the bytes at
// the link rate.
func transferMS(link string, bytes int64) float64 {
	l := links[link]
	return 3*l.rttMS + float64(bytes)*8/(l.downMbps*1e3)
}

// writeIface writes a timeline with bytes of downlink data spread evenly over [from, to] and an uplink ACK
// for every second segment.
func writeIface(t *testing.T, path string, from, to int64, bytes int64) {
	t.Helper()
	var pkts []radio.Packet
	if bytes > 0 {
		n := (bytes + mss - 1) / mss
		pkts = append(pkts, radio.Packet{T: from, Up: true, Bytes: 600}) // the request
		for i := int64(0); i < n; i++ {
			at := from + (to-from)*(i+1)/(n+1)
			size := int64(mss)
			if i == n-1 {
				size = bytes - (n-1)*mss
			}
			pkts = append(pkts, radio.Packet{T: at, Bytes: int(size) + 52})
			if i%2 == 1 {
				pkts = append(pkts, radio.Packet{T: at + 1000, Up: true, Bytes: 52})
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := energy.WriteTrace(f, pkts); err != nil {
		t.Fatal(err)
	}
}

type fixture struct {
	dir      string
	runs     string
	plt      map[string][]float64 // key profile|cell|proto|page|mode -> ok PLTs
	failedID []string
}

func key(parts ...string) string { return strings.Join(parts, "|") }

// build writes a synthetic runs.jsonl and the timelines its loads point to.
func build(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{dir: t.TempDir(), plt: map[string][]float64{}}
	fx.runs = filepath.Join(fx.dir, "runs.jsonl")
	f, err := os.Create(fx.runs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	clock := int64(1_700_000_000) * 1e9
	n := 0
	emit := func(cell, proto string, pg synthPage, mode string, rep int) {
		n++
		id := fmt.Sprintf("run-%04d", n)
		// Bytes per path: single path carries all; always-multipath splits by link rate; adaptive stays on
		// WiFi for small pages (seed 001's 200 KB example policy).
		wifiShare := 1.0
		switch mode {
		case ModeSPCell:
			wifiShare = 0
		case ModeMPAlways:
			wifiShare = links["wifi"].downMbps / (links["wifi"].downMbps + links[cell].downMbps)
		case ModeMPAdaptive:
			if pg.bytes > 200_000 {
				wifiShare = links["wifi"].downMbps / (links["wifi"].downMbps + links[cell].downMbps)
			}
		}
		wb := int64(math.Round(float64(pg.bytes) * wifiShare))
		cb := pg.bytes - wb
		ms := 0.0
		if wb > 0 {
			ms = math.Max(ms, transferMS("wifi", wb))
		}
		if cb > 0 {
			ms = math.Max(ms, transferMS(cell, cb))
		}
		if proto == ProtoHTTP1 {
			ms *= 1.1 // more connections, more handshakes
		}
		ms = ms*(1+0.04*float64(rep)) + 80 // browser work
		start := clock
		end := start + int64(ms*1e6)
		clock = end + 30e9 // loads 30 s apart: every tail has ended
		tl := filepath.Join("timelines", id)
		if err := os.MkdirAll(filepath.Join(fx.dir, tl), 0o755); err != nil {
			t.Fatal(err)
		}
		writeIface(t, filepath.Join(fx.dir, tl, IfWiFi+".csv"), start+int64(links["wifi"].rttMS*1e6), end-int64(10e6), wb)
		if cb > 0 || n%2 == 0 { // sometimes an idle interface's file is absent
			writeIface(t, filepath.Join(fx.dir, tl, IfCell+".csv"), start+int64(links[cell].rttMS*1e6), end-int64(10e6), cb)
		}
		var decision any
		if mode == ModeMPAdaptive {
			decision = map[string]any{"multipath": pg.bytes > 200_000, "theta1": 200000, "theta2": nil, "reason": "theta1"}
		}
		rec := map[string]any{
			"run_id": id, "mode": mode, "profile": "base", "cell_tech": cell, "page": pg.id, "page_bytes": pg.bytes,
			"objects": pg.objs, "proto": proto, "rep": rep, "start_unix_ns": start, "end_unix_ns": end, "plt_ms": ms,
			"ok": true, "link_bytes": map[string]any{"wlan0": map[string]int64{"rx": wb, "tx": 1000}, "wwan0": map[string]int64{"rx": cb, "tx": 500}},
			"server_path_bytes": nil, "decision": decision, "header_seen": mode == ModeMPAdaptive, "timeline_dir": tl,
		}
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
		k := key("base", cell, proto, pg.id, mode)
		fx.plt[k] = append(fx.plt[k], ms)
	}
	for _, proto := range Protos {
		for _, pg := range []synthPage{pageSmall10, pageSmall50, pageLarge1, pageLarge2} {
			for _, mode := range Modes {
				for rep := range 2 {
					emit(CellLTE, proto, pg, mode, rep)
				}
			}
		}
	}
	for _, pg := range []synthPage{pageSmall10, pageLarge1} {
		for _, mode := range []string{ModeSPWiFi, ModeSPCell, ModeMPAlways} {
			for rep := range 2 {
				emit(Cell3G, ProtoH2, pg, mode, rep)
			}
		}
	}
	// Two failed loads with numbers that would wreck the means if they were counted.
	for i, mode := range []string{ModeSPWiFi, ModeMPAlways} {
		id := fmt.Sprintf("failed-%d", i)
		fx.failedID = append(fx.failedID, id)
		rec := map[string]any{
			"run_id": id, "mode": mode, "profile": "base", "cell_tech": CellLTE, "page": pageSmall10.id, "page_bytes": pageSmall10.bytes,
			"objects": 3, "proto": ProtoH2, "rep": 9, "start_unix_ns": 0, "end_unix_ns": 0, "plt_ms": 9e9, "ok": false,
			"error": "navigation timeout after 60 s", "link_bytes": map[string]any{}, "server_path_bytes": nil, "decision": nil,
			"header_seen": false, "timeline_dir": "",
		}
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// readSummary reads a summary.csv: its rows, header first, and each column's index by name.
func readSummary(t *testing.T, path string) (rows [][]string, col map[string]int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err = csv.NewReader(f).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("%s: %d rows, %v", path, len(rows), err)
	}
	col = map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	return rows, col
}

func models(t *testing.T) Models {
	t.Helper()
	m, err := LoadModels("../../policy-models")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// svgSeries parses an SVG file with encoding/xml and returns its root element name and data-series names.
func svgSeries(t *testing.T, path string) (root string, names []string, marks map[string]int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	marks = map[string]int{}
	cur := ""
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", filepath.Base(path), err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			depth++
			if root == "" {
				root = el.Name.Local
				if el.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("%s: root namespace %q", filepath.Base(path), el.Name.Space)
				}
			}
			if el.Name.Local == "g" {
				for _, a := range el.Attr {
					if a.Name.Local == "data-series" {
						cur = a.Value
						names = append(names, a.Value)
					}
				}
			}
			if cur != "" && (el.Name.Local == "circle" || el.Name.Local == "rect") {
				marks[cur]++
			}
		case xml.EndElement:
			depth--
			if el.Name.Local == "g" {
				cur = ""
			}
		}
	}
	if depth != 0 {
		t.Errorf("%s: unbalanced elements", filepath.Base(path))
	}
	return root, names, marks
}

func TestGenerate(t *testing.T) {
	fx := build(t)
	out := filepath.Join(fx.dir, "out")
	m := models(t)
	res, err := Generate(Options{RunsPath: fx.runs, OutDir: out, Models: m, CellInitial: energy.StartIdle,
		Environment: map[string]string{"browser": "Chromium 156 (test)", "kernel": "6.18-test"}})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Analysis

	if n := a.TailOverlaps(); n != 0 {
		t.Errorf("%d tail overlaps for loads 30 s apart", n)
	}

	// Failures are counted, listed, and kept out of the statistics.
	if len(a.Failed) != 2 || len(a.OK) != len(a.Loads)-2 {
		t.Fatalf("failed %d, ok %d of %d", len(a.Failed), len(a.OK), len(a.Loads))
	}
	if len(a.NoEnergy) != 0 {
		t.Fatalf("%d ok loads without energy: %s", len(a.NoEnergy), a.NoEnergy[0].EnergyErr)
	}
	lte := GroupKey{"base", CellLTE}
	find := func(g GroupKey, proto, page string) *Page {
		for _, p := range a.Pages[g] {
			if p.Proto == proto && p.Page == page {
				return p
			}
		}
		t.Fatalf("no page %s %s in %v", proto, page, g)
		return nil
	}
	small := find(lte, ProtoH2, pageSmall10.id)
	if got, want := small.Mode[ModeSPWiFi].PLT.N, 2; got != want {
		t.Errorf("sp-wifi small-10k has %d PLT samples, want %d (failed load excluded)", got, want)
	}

	// G for every page and MP mode, from the PLTs the fixture wrote.
	for _, g := range a.Groups {
		for _, p := range a.Pages[g] {
			k := func(mode string) []float64 { return fx.plt[key(g.Profile, g.CellTech, p.Proto, p.Page, mode)] }
			best := math.Min(mean(k(ModeSPWiFi)), mean(k(ModeSPCell)))
			for _, mp := range MPModes {
				if len(k(mp)) == 0 {
					if _, ok := p.G[mp]; ok {
						t.Errorf("%v %s %s: G for absent mode %s", g, p.Proto, p.Page, mp)
					}
					continue
				}
				want := (best - mean(k(mp))) / best
				if got, ok := p.G[mp]; !ok || math.Abs(got-want) > 1e-12 {
					t.Errorf("%v %s %s: G[%s] = %v, want %v", g, p.Proto, p.Page, mp, got, want)
				}
			}
		}
	}
	// Always-multipath pays off on large pages in this fixture, and adaptive equals sp-wifi PLT on small ones.
	if g := find(lte, ProtoH2, pageLarge2.id).G[ModeMPAlways]; !(g > 0.2) {
		t.Errorf("large page G = %v, want > 0.2", g)
	}

	// Energy ratios: recomputed here from the timelines with the energy package, load by load.
	radio := func(l *Load) (withTail, noTail float64) {
		dir := filepath.Join(fx.dir, l.TimelineDir)
		var tot, nt float64
		for _, x := range []struct {
			ifn  string
			m    *radio.Model
			init energy.Initial
		}{{IfWiFi, m.WiFi, energy.StartIdle}, {IfCell, m.cell(l.CellTech), energy.StartIdle}} {
			pkts, err := energy.ReadTraceFile(filepath.Join(dir, x.ifn+".csv"))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			r, err := energy.Simulate(x.m, pkts, energy.Window{Start: l.StartUnixNS, End: l.EndUnixNS}, x.init)
			if err != nil {
				t.Fatal(err)
			}
			tot += r.TotalJ
			nt += r.NoTailJ()
		}
		return tot, nt
	}
	checked := 0
	for _, g := range a.Groups {
		for _, p := range a.Pages[g] {
			sums := map[string][2]float64{}
			counts := map[string]int{}
			for _, l := range a.OK {
				if l.Profile == g.Profile && l.CellTech == g.CellTech && l.Proto == p.Proto && l.Page == p.Page {
					w, n := radio(l)
					s := sums[l.Mode]
					sums[l.Mode] = [2]float64{s[0] + w, s[1] + n}
					counts[l.Mode]++
				}
			}
			for _, mp := range MPModes {
				if counts[mp] == 0 {
					continue
				}
				sp := sums[ModeSPWiFi]
				want := (sums[mp][0] / float64(counts[mp])) / (sp[0] / float64(counts[ModeSPWiFi]))
				wantNT := (sums[mp][1] / float64(counts[mp])) / (sp[1] / float64(counts[ModeSPWiFi]))
				if got := p.Ratio[mp]; math.Abs(got-want) > 1e-9*want {
					t.Errorf("%v %s %s: energy ratio %s = %v, want %v", g, p.Proto, p.Page, mp, got, want)
				}
				if got := p.RatioNoTail[mp]; math.Abs(got-wantNT) > 1e-9*wantNT {
					t.Errorf("%v %s %s: no-tail energy ratio %s = %v, want %v", g, p.Proto, p.Page, mp, got, wantNT)
				}
				checked++
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d energy ratios checked", checked)
	}
	// Physical sanity: a cellular radio woken for a small page costs more than the WiFi radio alone, and
	// adaptive mode, which stays on WiFi for small pages, costs what sp-wifi costs.
	if r := small.Ratio[ModeMPAlways]; !(r > 1) {
		t.Errorf("small page MP/SP energy = %v, want > 1", r)
	}
	if r := small.Ratio[ModeMPAdaptive]; math.Abs(r-1) > 0.05 {
		t.Errorf("small page adaptive/SP energy = %v, want about 1", r)
	}

	// Every plot is well-formed SVG with the expected series, each drawing something.
	lteSeries := []string{}
	for _, pr := range Protos {
		for _, md := range Modes {
			lteSeries = append(lteSeries, pr+" "+md)
		}
	}
	ratioSeries := []string{}
	for _, pr := range Protos {
		for _, md := range MPModes {
			ratioSeries = append(ratioSeries, pr+" "+md)
		}
	}
	g3Series := []string{"h2 sp-wifi", "h2 sp-cell", "h2 mp-always"}
	want := map[string][]string{
		"a-plt-base-lte.svg":                    lteSeries,
		"b-energy-base-lte.svg":                 lteSeries,
		"c-fig1-large-base-lte.svg":             lteSeries,
		"d-fig2-small-base-lte.svg":             lteSeries,
		"e-fig4-energy-small-base-lte.svg":      ratioSeries,
		"e-energy-small-incl-tail-base-lte.svg": ratioSeries,
		"g-gain-base-lte-h2.svg":                MPModes,
		"g-gain-base-lte-http1.svg":             MPModes,
		"a-plt-base-3g.svg":                     g3Series,
		"b-energy-base-3g.svg":                  g3Series,
		"c-fig1-large-base-3g.svg":              g3Series,
		"d-fig2-small-base-3g.svg":              g3Series,
		"e-fig4-energy-small-base-3g.svg":       {"h2 mp-always"},
		"e-energy-small-incl-tail-base-3g.svg":  {"h2 mp-always"},
		"g-gain-base-3g-h2.svg":                 {ModeMPAlways},
		"f-3g-base.svg":                         {"LTE secondary, incl. tail", "LTE secondary, excl. tail", "3G secondary, incl. tail", "3G secondary, excl. tail"},
	}
	svgs, err := filepath.Glob(filepath.Join(out, "*.svg"))
	if err != nil {
		t.Fatal(err)
	}
	var gotFiles []string
	for _, p := range svgs {
		gotFiles = append(gotFiles, filepath.Base(p))
	}
	var wantFiles []string
	for f := range want {
		wantFiles = append(wantFiles, f)
	}
	sort.Strings(gotFiles)
	sort.Strings(wantFiles)
	if strings.Join(gotFiles, " ") != strings.Join(wantFiles, " ") {
		t.Fatalf("SVG files\n got %v\nwant %v", gotFiles, wantFiles)
	}
	for file, series := range want {
		root, names, marks := svgSeries(t, filepath.Join(out, file))
		if root != "svg" {
			t.Errorf("%s: root element %q", file, root)
		}
		if strings.Join(names, ",") != strings.Join(series, ",") {
			t.Errorf("%s: series\n got %q\nwant %q", file, names, series)
		}
		for _, s := range series {
			if marks[s] == 0 {
				t.Errorf("%s: series %q draws nothing", file, s)
			}
		}
	}

	// summary.csv: a row per load, failures included and marked.
	rows, col := readSummary(t, filepath.Join(out, "summary.csv"))
	if len(rows) != len(a.Loads)+1 {
		t.Fatalf("summary.csv has %d rows, want %d", len(rows), len(a.Loads)+1)
	}
	failedRows := 0
	for _, r := range rows[1:] {
		if r[col["ok"]] == "false" {
			failedRows++
			if r[col["radio_j"]] != "" {
				t.Errorf("failed load %s has energy %s", r[col["run_id"]], r[col["radio_j"]])
			}
		} else if r[col["radio_j"]] == "" || r[col["cell_initial_state"]] != "idle" {
			t.Errorf("ok load %s: radio_j %q, initial %q", r[col["run_id"]], r[col["radio_j"]], r[col["cell_initial_state"]])
		}
	}
	if failedRows != 2 {
		t.Errorf("summary.csv marks %d failed loads, want 2", failedRows)
	}

	// report.md: seeds' numbers, failures, the initial state, every figure, the differences section.
	b, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, s := range append([]string{
		"18.22 % to 57.19 %", "13.4 % to 51.8 %, median 36.4 %", "−41.1 % to 30.8 %, median −0.1 %", "5.5x to 7.3x", "7.5x",
		"Cellular radio state at each load's start: `idle`", "2 of ", "navigation timeout after 60 s",
		"## Differences from the seeds (derived from the data)", "Chromium 156 (test)", "6.18-test",
		"Every ok load started after the previous load's cellular tail had ended.",
	}, append(fx.failedID, wantFiles...)...) {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}

// The pre-promoted radio state is an input and is reported; it removes the small pages' promotions.
func TestGenerateConnectedStart(t *testing.T) {
	fx := build(t)
	out := filepath.Join(fx.dir, "out-connected")
	res, err := Generate(Options{RunsPath: fx.runs, OutDir: out, Models: models(t), CellInitial: energy.StartConnected})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Analysis.OK {
		if l.Cell.Initial != energy.StartConnected {
			t.Fatalf("%s: cellular initial state %s", l.RunID, l.Cell.Initial)
		}
		if l.Cell.Promotions != 0 {
			t.Errorf("%s: %d promotions on a pre-promoted radio whose load is shorter than its tail", l.RunID, l.Cell.Promotions)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Cellular radio state at each load's start: `connected`") {
		t.Error("report.md does not state the connected start")
	}
}

func TestGenerateErrors(t *testing.T) {
	m := models(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs.jsonl")
	if _, err := Generate(Options{RunsPath: runs, OutDir: dir, Models: m, CellInitial: energy.StartIdle}); err == nil {
		t.Error("missing runs file accepted")
	}
	if _, err := Generate(Options{RunsPath: runs, OutDir: dir, Models: Models{}, CellInitial: energy.StartIdle}); err == nil {
		t.Error("missing models accepted")
	}
	if _, err := Generate(Options{RunsPath: runs, OutDir: dir, Models: m, CellInitial: "warm"}); err == nil {
		t.Error("bad initial state accepted")
	}
	// An ok load whose timeline directory is gone keeps its PLT and is reported without energy.
	rec := `{"run_id":"r1","mode":"sp-wifi","profile":"p","cell_tech":"lte","page":"x","page_bytes":1,"objects":1,"proto":"h2","rep":0,"start_unix_ns":1,"end_unix_ns":2,"plt_ms":1,"ok":true,"link_bytes":{},"server_path_bytes":null,"decision":null,"header_seen":false,"timeline_dir":"nowhere"}` + "\n"
	if err := os.WriteFile(runs, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Generate(Options{RunsPath: runs, OutDir: filepath.Join(dir, "o"), Models: m, CellInitial: energy.StartIdle})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Analysis.NoEnergy) != 1 || !strings.Contains(res.Analysis.NoEnergy[0].EnergyErr, "nowhere") {
		t.Fatalf("no-energy loads: %+v", res.Analysis.NoEnergy)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "o", "report.md"))
	if !strings.Contains(string(b), "Energy unavailable") {
		t.Error("report.md does not flag the load without energy")
	}
}

func TestTailOverlaps(t *testing.T) {
	m := models(t)
	mk := func(start, end int64, cell string) *Load {
		return &Load{Record: Record{OK: true, StartUnixNS: start, EndUnixNS: end, CellTech: cell}}
	}
	s := int64(1e9)
	a := &Analysis{Models: m, OK: []*Load{
		mk(100*s, 102*s, CellLTE),
		mk(105*s, 106*s, CellLTE), // 3 s after an LTE load: inside its ~11.8 s drain
		mk(130*s, 131*s, Cell3G),  // 24 s later: clear
		mk(140*s, 141*s, CellLTE), // 9 s after a 3G load, whose drain is 19 s
	}}
	if got := a.TailOverlaps(); got != 2 {
		t.Errorf("TailOverlaps = %d, want 2", got)
	}
}

// Loads of one testbed session may share a timeline directory; each load sees only its own window.
func TestSharedSessionTimeline(t *testing.T) {
	dir := t.TempDir()
	s := int64(1_700_000_000) * 1e9
	sec := int64(1e9)
	var pkts []radio.Packet
	for i := range 10 { // load A: 10 packets in its first second
		pkts = append(pkts, radio.Packet{T: s + int64(i)*sec/10, Bytes: 1500})
	}
	for i := range 4 { // load B, 40 s later: 4 packets
		pkts = append(pkts, radio.Packet{T: s + 40*sec + int64(i)*sec/10, Bytes: 1500})
	}
	if err := os.MkdirAll(filepath.Join(dir, "session"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ifn := range []string{IfWiFi, IfCell} {
		f, err := os.Create(filepath.Join(dir, "session", ifn+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		if err := energy.WriteTrace(f, pkts); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	rec := func(id string, start int64) string {
		return fmt.Sprintf(`{"run_id":%q,"mode":"mp-always","profile":"p","cell_tech":"lte","page":"x","page_bytes":15000,"objects":1,"proto":"h2","rep":0,"start_unix_ns":%d,"end_unix_ns":%d,"plt_ms":1000,"ok":true,"link_bytes":{},"server_path_bytes":null,"decision":null,"header_seen":false,"timeline_dir":"session"}`, id, start, start+sec)
	}
	runs := filepath.Join(dir, "runs.jsonl")
	if err := os.WriteFile(runs, []byte(rec("a", s)+"\n"+rec("b", s+40*sec)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Generate(Options{RunsPath: runs, OutDir: filepath.Join(dir, "out"), Models: models(t), CellInitial: energy.StartIdle})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, l := range res.Analysis.OK {
		if !l.HasEnergy() {
			t.Fatalf("%s: %s", l.RunID, l.EnergyErr)
		}
		got[l.RunID] = l.Cell.Packets
		if l.Cell.Promotions != 1 {
			t.Errorf("%s: %d promotions, want 1", l.RunID, l.Cell.Promotions)
		}
	}
	if got["a"] != 10 || got["b"] != 4 {
		t.Errorf("packets per load %v, want a:10 b:4", got)
	}
}
