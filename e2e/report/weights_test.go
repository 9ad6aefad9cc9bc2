package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadWeights(t *testing.T) {
	models := filepath.Join("..", "..", "policy-models")
	w, err := LoadWeights(models)
	if err != nil {
		t.Fatal(err)
	}
	if !(w.TimePerS > 0) || w.EnergyPerJ < 0 || w.CellPerMB < 0 {
		t.Errorf("weights %+v", w)
	}
	if w.Mode != "performance" {
		t.Errorf("weights of mode %q, want the default mode's (performance)", w.Mode)
	}
	// Every preference a user can set has weights, and the report values each preference's loads with its own.
	all, def, err := LoadModeWeights(models)
	if err != nil || def != PrefPerformance {
		t.Fatal(def, err)
	}
	for _, p := range Preferences {
		if all[p].Mode != p || !(all[p].TimePerS > 0) {
			t.Errorf("%s: %+v", p, all[p])
		}
	}
	if !(all[PrefBatterySaver].EnergyPerJ > all[PrefPerformance].EnergyPerJ) {
		t.Errorf("battery saver prices a joule at %v, performance at %v", all[PrefBatterySaver].EnergyPerJ, all[PrefPerformance].EnergyPerJ)
	}
	// Each a copy of the models directory with one fault in model.json.
	orig, err := os.ReadFile(filepath.Join(models, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(string) string{
		"no default": func(s string) string { return replaceIn(t, s, `"defaults": {`, `"mode": "performance",`, ``) },
		"no such mode": func(s string) string {
			return replaceIn(t, s, `"defaults": {`, `"mode": "performance"`, `"mode": "turbo"`)
		},
		"negative": func(s string) string {
			return replaceIn(t, s, `"performance": {`, `"energy_per_j": 0.01`, `"energy_per_j": -1`)
		},
		"zero time": func(s string) string {
			return replaceIn(t, s, `"performance": {`, `"time_per_s": 1`, `"time_per_s": 0`)
		},
		"not json": func(string) string { return "{" },
	} {
		dir := filepath.Join(t.TempDir(), strings.ReplaceAll(name, " ", "-"))
		if err := os.CopyFS(dir, os.DirFS(models)); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "model.json")
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(edit(string(orig))), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadWeights(dir)
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

// replaceIn replaces the first old after the first mark in s.
func replaceIn(t *testing.T, s, mark, old, new string) string {
	t.Helper()
	i := strings.Index(s, mark)
	j := strings.Index(s[max(i, 0):], old)
	if i < 0 || j < 0 {
		t.Fatalf("model.json has no %s after %s", old, mark)
	}
	return s[:i+j] + new + s[i+j+len(old):]
}
