package model

import (
	"encoding/json"
	"os"
	"testing"
)

func modelFile(t testing.TB) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../policy-models/model.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseRejects(t *testing.T) {
	const name = "policy-models/model.json"
	obj := func(m map[string]any, k string) map[string]any { return m[k].(map[string]any) }
	tests := []struct {
		name   string
		change func(m map[string]any)
		raw    string
		want   string
	}{
		{"hol discount above 1", func(m map[string]any) { obj(m, "multipath")["hol_discount"] = 1.5 }, "",
			name + ": multipath.hol_discount: must be <= 1"},
		{"negative weight", func(m map[string]any) { obj(obj(m, "modes"), "balanced")["energy_per_j"] = -1 }, "",
			name + ": modes.balanced.energy_per_j: must be >= 0"},
		{"mode missing", func(m map[string]any) { delete(obj(m, "modes"), "performance") }, "",
			name + ": modes.performance.time_per_s: missing"},
		{"iw fractional", func(m map[string]any) { obj(m, "transport")["initial_window_segments"] = 2.5 }, "",
			name + ": transport.initial_window_segments: must be an integer"},
		{"mss a string", func(m map[string]any) { obj(m, "transport")["mss_bytes"] = "1448" }, "",
			name + ": transport.mss_bytes: must be a number"},
		{"unknown field", func(m map[string]any) { obj(m, "transport")["mtu"] = 1500 }, "",
			name + ": transport.mtu: unknown field"},
		{"bad default mode", func(m map[string]any) { obj(m, "defaults")["mode"] = "turbo" }, "",
			name + ": defaults.mode: must be one of performance, balanced, battery_saver"},
		{"deadline too short", func(m map[string]any) { obj(m, "defaults")["deadline_ms"] = 10 }, "",
			name + ": defaults.deadline_ms: must be >= 1000"},
		{"radio file outside", func(m map[string]any) { obj(m, "radio_files")["lte"] = "../x.json" }, "",
			name + ": radio_files.lte: must name another .json file in the same directory"},
		{"no source", func(m map[string]any) { delete(obj(m, "sources"), "multipath.hol_discount") }, "",
			name + ": multipath.hol_discount: has no entry in sources"},
		{"source for nothing", func(m map[string]any) { obj(m, "sources")["warp"] = "x" }, "",
			name + ": sources.warp: names no model value of this file"},
		{"theta inverted", func(m map[string]any) { obj(m, "theta")["max_bytes"] = 10 }, "",
			name + ": theta.max_bytes: must be > theta.min_bytes"},
		{"size prior out of order", func(m map[string]any) { obj(m, "sizes")["prior_p10_bytes"] = 1e7 }, "",
			name + ": sizes.prior_p50_bytes: must lie between sizes.prior_p10_bytes and sizes.prior_p90_bytes"},
		{"head-of-line ratios inverted", func(m map[string]any) { obj(m, "multipath")["hol_fast_rate_ratio"] = 1.0 }, "",
			name + ": multipath.hol_fast_rate_ratio: must be above multipath.hol_rate_ratio"},
		{"prior without spread", func(m map[string]any) { delete(obj(obj(m, "priors"), "lte"), "spread") }, "",
			name + ": priors.lte.spread: missing"},
		{"not JSON", nil, `{"id":`, name + ": not one JSON object"},
		{"array", nil, `[]`, name + ": not one JSON object"},
		{"two objects", nil, `{}{}`, name + ": not one JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.raw)
			if tc.change != nil {
				m := modelFile(t)
				tc.change(m)
				data, _ = json.Marshal(m)
			}
			_, err := Parse(name, data)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestLoadEmbedded(t *testing.T) {
	p := params(t)
	if p.ID != "costbenefit" || p.BaselineID != "baseline-seed001" || p.Priors["lte"].DownMbit != 9.185 || p.Radios["lte"].Promotion.DurationMS != 260 ||
		p.Radios["3g"] == nil || p.Radios["wifi"] == nil {
		t.Errorf("loaded %+v", p)
	}
}

// FuzzParse: the loader never panics, and what it accepts has a source for every value and a sane search range.
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile("../../policy-models/model.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"id":"x","version":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.json", data)
		if err != nil {
			return
		}
		if len(file.Params.Sources) == 0 || file.Params.Theta.MaxBytes <= file.Params.Theta.MinBytes {
			t.Fatalf("accepted %+v", file.Params)
		}
	})
}
