package report

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mpsurf/mpsurf/e2e/energy"
	"github.com/mpsurf/mpsurf/native-host/radio"
)

// Options configure Generate.
type Options struct {
	RunsPath string // runs.jsonl
	// Pool are more runs.jsonl files of the same grid, pooled with RunsPath's as further repetitions (PoolRuns).
	Pool        []string
	OutDir      string         // where summary.csv, report.md and the SVGs go
	Models      Models         // see LoadModels
	CellInitial energy.Initial // cellular radio state at each load's start: idle, connected or observed (energy.StartObserved)
	// Environment holds facts about the machine, shown in the report as "key: value" (e.g. "browser",
	// "kernel"). The report names only these keys in its comparisons.
	Environment map[string]string
	// Weights value a load in seconds for the decisions' utility and regret, per preference (LoadModeWeights); nil
	// leaves them out. DefaultMode is the preference a fresh install decides with: adaptive loads that name none
	// are its, and the seed comparison takes its adaptive loads.
	Weights     map[string]Weights
	DefaultMode string
}

// Output tells what Generate wrote.
type Output struct {
	Analysis *Analysis
	// Decisions holds the decisions benchmark's measures, one per preference of the adaptive loads; none when the
	// runs lack one of sp-wifi, mp-always and mp-adaptive.
	Decisions []*Decisions
	Files     []string // paths written, summary.csv and report.md first
}

// Generate reads the run records, computes energy and statistics and writes the report files.
func Generate(o Options) (*Output, error) {
	if o.Models.LTE == nil || o.Models.ThreeG == nil || o.Models.WiFi == nil {
		return nil, fmt.Errorf("report: all three radio models are needed")
	}
	if _, err := energy.ParseInitial(string(o.CellInitial)); err != nil {
		return nil, err
	}
	recs, err := PoolRuns(append([]string{o.RunsPath}, o.Pool...))
	if err != nil {
		return nil, err
	}
	def := cmp.Or(o.DefaultMode, PrefPerformance)
	a := Analyze(recs, filepath.Dir(o.RunsPath), o.Models, o.CellInitial, def)
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	out := &Output{Analysis: a}
	if a.hasModes(ModeSPWiFi, ModeMPAlways, ModeMPAdaptive) {
		out.Decisions = AnalyzeAll(a.Loads, o.Weights, def)
		for _, d := range out.Decisions {
			d.CellInitial = o.CellInitial
		}
	}
	write := func(name string, f func(w io.Writer) error) error {
		path := filepath.Join(o.OutDir, name)
		tmp, err := os.CreateTemp(o.OutDir, "."+name+".*")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		if err := f(tmp); err != nil {
			tmp.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		// Renamed into place so that a reader never sees half a file.
		if err := os.Rename(tmp.Name(), path); err != nil {
			return err
		}
		out.Files = append(out.Files, path)
		return nil
	}
	if err := write("summary.csv", a.writeCSV); err != nil {
		return nil, err
	}
	figs := a.figures()
	if err := write("report.md", func(w io.Writer) error {
		_, err := io.WriteString(w, a.markdown(o, figs, out.Decisions))
		return err
	}); err != nil {
		return nil, err
	}
	for _, f := range figs {
		svg := f.chart.svg()
		if err := write(f.file, func(w io.Writer) error { _, err := w.Write(svg); return err }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

var csvHeader = []string{
	"run_id", "mode", "preference", "profile", "cell_tech", "page", "page_bytes", "objects", "proto", "rep", "ok", "error",
	"plt_ms", "start_unix_ns", "end_unix_ns",
	"cell_initial_state", "cell_start_state", "energy_window_end_unix_ns",
	"radio_j", "radio_j_excl_tail",
	"wifi_j", "wifi_active_j", "wifi_tail_j",
	"cell_j", "cell_promotion_j", "cell_active_j", "cell_tail_j", "cell_promotions", "cell_connected_s", "cell_anyway_j",
	"wlan0_packets", "wwan0_packets", "wlan0_timeline_bytes", "wwan0_timeline_bytes",
	"wlan0_rx", "wlan0_tx", "wwan0_rx", "wwan0_tx", "server_wlan0_bytes", "server_wwan0_bytes",
	"decision_multipath", "decision_theta1", "decision_theta2", "decision_reason", "header_seen",
	"energy_error", "energy_notes",
}

// energyCols is the number of columns from cell_initial_state to wwan0_timeline_bytes.
const energyCols = 19

func num(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func (a *Analysis) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, l := range a.Loads {
		r := l.Record
		row := []string{
			r.RunID, r.Mode, r.Preference, r.Profile, r.CellTech, r.Page, strconv.FormatInt(r.PageBytes, 10), strconv.Itoa(r.Objects),
			r.Proto, strconv.Itoa(r.Rep), strconv.FormatBool(r.OK), r.Error,
			num(r.PLTms), strconv.FormatInt(r.StartUnixNS, 10), strconv.FormatInt(r.EndUnixNS, 10),
		}
		if l.HasEnergy() {
			c, wf := l.Cell, l.WiFi
			connected := c.Category[radio.CatActive].S + c.Category[radio.CatTail].S
			row = append(row, string(c.Initial), c.StartState, strconv.FormatInt(c.Stop, 10),
				num(l.RadioJ()), num(l.RadioNoTailJ()),
				num(wf.TotalJ), num(wf.Category[radio.CatActive].J), num(wf.Category[radio.CatTail].J),
				num(c.TotalJ), num(c.Category[radio.CatPromotion].J), num(c.Category[radio.CatActive].J), num(c.Category[radio.CatTail].J),
				strconv.Itoa(c.Promotions), num(connected), num(c.AnywayJ),
				strconv.Itoa(wf.Packets), strconv.Itoa(c.Packets),
				strconv.FormatInt(wf.BytesUp+wf.BytesDown, 10), strconv.FormatInt(c.BytesUp+c.BytesDown, 10))
		} else {
			init := ""
			if r.OK {
				init = string(a.CellInit)
			}
			row = append(row, init)
			row = append(row, make([]string, energyCols-1)...)
		}
		rx := func(ifn string) (string, string) {
			if v, ok := r.LinkBytes[ifn]; ok {
				return strconv.FormatInt(v.Rx, 10), strconv.FormatInt(v.Tx, 10)
			}
			return "", ""
		}
		wrx, wtx := rx(IfWiFi)
		crx, ctx := rx(IfCell)
		srv := func(ifn string) string {
			if v, ok := r.ServerPathBytes[ifn]; ok {
				return strconv.FormatInt(v, 10)
			}
			return ""
		}
		row = append(row, wrx, wtx, crx, ctx, srv(IfWiFi), srv(IfCell))
		if d := r.Decision; d != nil {
			t2 := ""
			if d.Theta2 != nil {
				t2 = strconv.FormatInt(*d.Theta2, 10)
			}
			row = append(row, strconv.FormatBool(d.Multipath), strconv.FormatInt(d.Theta1, 10), t2, d.Reason)
		} else {
			row = append(row, "", "", "", "")
		}
		row = append(row, strconv.FormatBool(r.HeaderSeen), l.EnergyErr, strings.Join(l.Notes, "; "))
		if len(row) != len(csvHeader) {
			return fmt.Errorf("summary row for %s has %d columns, header %d", r.RunID, len(row), len(csvHeader))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
