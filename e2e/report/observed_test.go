package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/e2e/energy"
	"github.com/mpsurf/mpsurf/native-host/radio"
)

// Two profiles' loads, each profile on a link (timeline) of its own, valued with the idle and the observed
// accounting: under observed, a load that follows another's cellular traffic by 3 s pays no promotion and
// only the tail it adds, a load 36 s after starts idle (a probe just before it, in no load's window, does not
// count), and the first load of a link starts idle even when another link carried traffic just before.
func TestGenerateObservedStart(t *testing.T) {
	dir := t.TempDir()
	sec := int64(1e9)
	s0 := int64(1_700_000_000) * sec
	type load struct {
		id, mode, profile, tech string
		at                      float64 // start, seconds after s0; every load lasts 1 s
		cell                    bool    // carries cellular packets: 1500 B every 10 ms over its first 0.5 s
	}
	loads := []load{
		{"a1", ModeMPAlways, "lte-link", CellLTE, 0, true},
		{"a2", ModeMPAdaptive, "lte-link", CellLTE, 3.5, true}, // 3 s after a1's last cellular packet
		{"a3", ModeSPWiFi, "lte-link", CellLTE, 8, false},      // in a2's tail, no cellular packet
		{"a4", ModeMPAlways, "lte-link", CellLTE, 40, true},    // 36 s after a2's: idle
		{"b1", ModeMPAlways, "3g-link", Cell3G, 43, true},      // 2.5 s after a4's, but on another link
		{"b2", ModeMPAdaptive, "3g-link", Cell3G, 47, true},    // in b1's DCH tail
		{"b3", ModeSPWiFi, "3g-link", Cell3G, 50, false},
	}
	pkts := map[string]map[string][]radio.Packet{} // profile -> interface -> packets
	var runs bytes.Buffer
	for _, l := range loads {
		if pkts[l.profile] == nil {
			pkts[l.profile] = map[string][]radio.Packet{}
		}
		start := s0 + int64(l.at*1e9)
		var cellBytes int64
		for i := range 50 {
			p := radio.Packet{T: start + int64(i)*sec/100, Bytes: 1500}
			pkts[l.profile][IfWiFi] = append(pkts[l.profile][IfWiFi], p)
			if l.cell {
				pkts[l.profile][IfCell] = append(pkts[l.profile][IfCell], p)
				cellBytes += 1500
			}
		}
		pref := ""
		if l.mode == ModeMPAdaptive {
			pref = `,"preference":"battery_saver"`
		}
		fmt.Fprintf(&runs, `{"run_id":%q,"mode":%q,"profile":%q,"cell_tech":%q,"page":"x","page_bytes":1500000,"objects":1,"proto":"h2","rep":0,"start_unix_ns":%d,"end_unix_ns":%d,"plt_ms":1000,"ok":true,"link_bytes":{"wwan0":{"rx":%d,"tx":0}},"server_path_bytes":null,"decision":null,"header_seen":true,"timeline_dir":%q%s}`+"\n",
			l.id, l.mode, l.profile, l.tech, start, start+sec, cellBytes, "timeline/"+l.profile, pref)
	}
	// A deciding host's path probe 0.5 s before a4, outside every load's window: counted for no load, it must
	// not spare a4 the promotion it would have caused.
	pkts["lte-link"][IfCell] = append(pkts["lte-link"][IfCell], radio.Packet{T: s0 + 39*sec + sec/2, Bytes: 60})
	for prof, byIf := range pkts {
		d := filepath.Join(dir, "timeline", prof)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for ifn, ps := range byIf {
			f, err := os.Create(filepath.Join(d, ifn+".csv"))
			if err != nil {
				t.Fatal(err)
			}
			if err := energy.WriteTrace(f, ps); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	runsPath := filepath.Join(dir, "runs.jsonl")
	if err := os.WriteFile(runsPath, runs.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	w, def, err := LoadModeWeights("../../policy-models")
	if err != nil {
		t.Fatal(err)
	}
	gen := func(init energy.Initial) (*Output, map[string]*Load) {
		res, err := Generate(Options{RunsPath: runsPath, OutDir: filepath.Join(dir, "out-"+string(init)), Models: models(t), CellInitial: init, Weights: w, DefaultMode: def})
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]*Load{}
		for _, l := range res.Analysis.OK {
			if !l.HasEnergy() {
				t.Fatalf("%s: no energy: %s", l.RunID, l.EnergyErr)
			}
			by[l.RunID] = l
		}
		return res, by
	}
	idleRes, idle := gen(energy.StartIdle)
	obsRes, obs := gen(energy.StartObserved)

	want := []struct {
		id, state  string
		promotions int
		same       bool // charged exactly as the idle accounting charges it
	}{
		{"a1", "idle", 1, true},
		{"a2", "long_drx", 0, false},
		{"a3", "long_drx", 0, true}, // no cellular packet: 0 J either way
		{"a4", "idle", 1, true},     // the probe before it left out
		{"b1", "idle", 1, true},
		{"b2", "dch_tail", 0, false},
		{"b3", "dch_tail", 0, true}, // 2.5 s after b2's last packet
	}
	for _, c := range want {
		o, i := obs[c.id].Cell, idle[c.id].Cell
		if o.Initial != energy.StartObserved || o.StartState != c.state || o.Promotions != c.promotions {
			t.Errorf("%s: %s start %s, %d promotions; want observed start %s, %d promotions", c.id, o.Initial, o.StartState, o.Promotions, c.state, c.promotions)
		}
		if i.StartState != "idle" {
			t.Errorf("%s: the idle accounting starts it %s", c.id, i.StartState)
		}
		if c.same && (o.TotalJ != i.TotalJ || o.Promotions != i.Promotions) {
			t.Errorf("%s: observed %v J (%d promotions), idle %v J (%d)", c.id, o.TotalJ, o.Promotions, i.TotalJ, i.Promotions)
		}
		if !c.same && !(o.TotalJ < i.TotalJ-0.5) {
			t.Errorf("%s: observed %v J, not below the idle accounting's %v J by a promotion and a tail's worth", c.id, o.TotalJ, i.TotalJ)
		}
		if (c.state == "idle") != (o.AnywayJ == 0) {
			t.Errorf("%s: starting %s, %v J of an earlier tail left out", c.id, c.state, o.AnywayJ)
		}
		// The WiFi radio starts idle under both.
		if obs[c.id].WiFi.TotalJ != idle[c.id].WiFi.TotalJ {
			t.Errorf("%s: WiFi %v J observed, %v J idle", c.id, obs[c.id].WiFi.TotalJ, idle[c.id].WiFi.TotalJ)
		}
	}
	// The charges add up to what the loads' own packets cost the link, each tail counted once.
	for prof, ids := range map[string][]string{"lte-link": {"a1", "a2", "a3", "a4"}, "3g-link": {"b1", "b2", "b3"}} {
		var own []radio.Packet
		var sum float64
		for _, id := range ids {
			l := obs[id]
			for _, p := range pkts[prof][IfCell] {
				if p.T >= l.StartUnixNS && p.T <= l.EndUnixNS {
					own = append(own, p)
				}
			}
			sum += l.Cell.TotalJ
		}
		first, last := obs[ids[0]], obs[ids[len(ids)-1]]
		link, err := energy.Simulate(models(t).cell(first.CellTech), own, energy.Window{Start: first.StartUnixNS, End: last.EndUnixNS}, energy.StartIdle)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(sum-link.TotalJ) > 1e-9 {
			t.Errorf("%s: the loads are charged %v J, their packets cost the link %v J", prof, sum, link.TotalJ)
		}
	}
	if o := obs["a3"].Cell; o.TotalJ != 0 || !(o.AnywayJ > 0) {
		t.Errorf("a3 (sp-wifi in a2's tail): charged %v J, %v J left out", o.TotalJ, o.AnywayJ)
	}

	// Battery saver values a joule at w_E seconds: MPSurf's ΣU on the LTE link gains exactly w_E times the energy
	// a2 is no longer charged, and no other mode's changes.
	bs := func(res *Output) *ProfileDecisions {
		for _, d := range res.Decisions {
			if d.Preference != PrefBatterySaver {
				continue
			}
			for _, pd := range d.Profiles {
				if pd.Profile == "lte-link" {
					return pd
				}
			}
		}
		t.Fatal("no battery-saver decisions for lte-link")
		return nil
	}
	pi, po := bs(idleRes), bs(obsRes)
	wE := w[PrefBatterySaver].EnergyPerJ
	dU := po.SumU[ModeMPAdaptive] - pi.SumU[ModeMPAdaptive]
	if wantU := wE * (idle["a2"].Cell.TotalJ - obs["a2"].Cell.TotalJ); math.Abs(dU-wantU) > 1e-9 || !(wantU > 0) {
		t.Errorf("MPSurf's ΣU moved %v s, want %v s", dU, wantU)
	}
	for _, m := range []string{ModeSPWiFi, ModeMPAlways} {
		if pi.SumU[m] != po.SumU[m] {
			t.Errorf("%s's ΣU %v idle, %v observed: its loads start idle either way", m, pi.SumU[m], po.SumU[m])
		}
	}

	// summary.csv names the accounting and each load's start state; report.md says what it assumes.
	rows, col := readSummary(t, filepath.Join(dir, "out-observed", "summary.csv"))
	for _, r := range rows[1:] {
		l := obs[r[col["run_id"]]]
		if r[col["cell_initial_state"]] != "observed" || r[col["cell_start_state"]] != l.Cell.StartState || r[col["cell_anyway_j"]] != num(l.Cell.AnywayJ) {
			t.Errorf("summary.csv row %s: %q %q %q", r[col["run_id"]], r[col["cell_initial_state"]], r[col["cell_start_state"]], r[col["cell_anyway_j"]])
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "out-observed", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, s := range []string{
		"Cellular radio state at each load's start: `observed`**: where the cellular traffic of the loads before it left it",
		"whichever loads came before, of any mode",
		"- Cellular radio at the ok loads' starts, as the earlier loads' packets left it: idle 3, dch_tail 2, long_drx 2.",
		"Cellular energy: the cellular radio starts each load where the cellular packets of the profile's earlier loads left it",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	var sum bytes.Buffer
	obsRes.Decisions[0].WriteSummary(&sum)
	if !strings.Contains(sum.String(), "radio energy: the cellular radio starts each load where") {
		t.Errorf("summary does not say the accounting:\n%s", sum.String())
	}
	b, err = os.ReadFile(filepath.Join(dir, "out-idle", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Cellular energy: the cellular radio is taken as idle at each load's start") {
		t.Error("the idle report does not say what it assumes")
	}
}
