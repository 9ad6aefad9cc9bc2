package profiles

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBuiltinsLoad(t *testing.T) {
	want := []string{"3g", "att-lte-driving", "baseline", "lte-delay+50", "poor-wifi-fast-lte", "wifi-delay+50", "wifi-loss-0.5", "wifi-loss-1"}
	if got := Names(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	rtt := map[string][2]float64{ // wlan0, wwan0
		"baseline": {50, 70}, "3g": {50, 160}, "wifi-loss-0.5": {50, 70}, "wifi-loss-1": {50, 70},
		"wifi-delay+50": {100, 70}, "lte-delay+50": {50, 120}, "poor-wifi-fast-lte": {50, 70}, "att-lte-driving": {50, 70},
	}
	for _, name := range want {
		p, err := Load(name)
		if err != nil {
			t.Fatalf("Load(%q): %v", name, err)
		}
		if p.ID != name {
			t.Errorf("%s: id %q", name, p.ID)
		}
		if got := [2]float64{p.Links["wlan0"].RTTMs(), p.Links["wwan0"].RTTMs()}; got != rtt[name] {
			t.Errorf("%s: RTTs %v, want %v", name, got, rtt[name])
		}
	}
}

// The trace profile's traces are built in beside it; their mean rates are the ones its sources state (the
// Mahimahi files' means).
func TestBuiltinTraceProfile(t *testing.T) {
	p, err := Load("att-lte-driving")
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasTrace() {
		t.Fatal("no trace")
	}
	l := p.Links["wwan0"]
	for _, c := range []struct {
		d    *Direction
		mbit float64
	}{{l.Down, 5.17}, {l.Up, 0.83}} {
		got := l.Params(c.d).Trace.MeanRateBps() / 1e6
		if math.Abs(got-c.mbit) > 0.01 {
			t.Errorf("%s: mean %.3f Mbit/s, sources say %.2f", c.d.Trace, got, c.mbit)
		}
	}
	if b, _ := Load("baseline"); b.HasTrace() {
		t.Error("baseline has a trace")
	}
	// A built-in profile reads traces only from its own traces/ directory.
	if _, err := builtinTrace("../baseline.json"); err == nil {
		t.Error("a built-in trace outside traces/ was read")
	}
}

func TestBaselineParams(t *testing.T) {
	p, err := Load("baseline")
	if err != nil {
		t.Fatal(err)
	}
	l := p.Links["wwan0"]
	got := l.Params(l.Down)
	if got.RateBps != 9.185e6 || got.Delay != 35*time.Millisecond || got.QueueBytes != 75000 || got.Loss != 0 || got.Trace != nil {
		t.Errorf("wwan0 down params %+v", got)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
	loss, err := Load("wifi-loss-1")
	if err != nil {
		t.Fatal(err)
	}
	w := loss.Links["wlan0"]
	if w.Params(w.Down).Loss != 0.01 || w.Params(w.Up).Loss != 0.01 || loss.Links["wwan0"].Params(loss.Links["wwan0"].Down).Loss != 0 {
		t.Errorf("wifi-loss-1 losses wrong: %+v", w)
	}
}

// mutate loads the baseline as generic JSON, applies edit and re-encodes it.
func mutate(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	b, err := builtin.ReadFile("baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func link(m map[string]any, name string) map[string]any {
	return m["links"].(map[string]any)[name].(map[string]any)
}

func dir(m map[string]any, name, d string) map[string]any {
	return link(m, name)[d].(map[string]any)
}

func TestParseErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"bad id", func(m map[string]any) { m["id"] = "Bad ID" }, "id:"},
		{"no description", func(m map[string]any) { delete(m, "description") }, "description: missing"},
		{"unknown field", func(m map[string]any) { m["colour"] = 1 }, `unknown field "colour"`},
		{"unknown link", func(m map[string]any) { m["links"].(map[string]any)["eth1"] = link(m, "wlan0") }, "links.eth1: unknown interface"},
		{"missing link", func(m map[string]any) { delete(m["links"].(map[string]any), "wwan0") }, "links.wwan0: missing"},
		{"bad tech", func(m map[string]any) { link(m, "wwan0")["tech"] = "5g" }, "links.wwan0.tech"},
		{"small queue", func(m map[string]any) { link(m, "wlan0")["queue_bytes"] = 1000 }, "links.wlan0.queue_bytes: 1000"},
		{"missing up", func(m map[string]any) { delete(link(m, "wlan0"), "up") }, "links.wlan0.up: missing"},
		{"zero rate", func(m map[string]any) { dir(m, "wwan0", "up")["rate_mbit"] = 0 }, "links.wwan0.up.rate_mbit: 0"},
		{"string rate", func(m map[string]any) { dir(m, "wwan0", "up")["rate_mbit"] = "fast" }, "rate_mbit"},
		{"no rate", func(m map[string]any) { delete(dir(m, "wwan0", "up"), "rate_mbit") }, "links.wwan0.up.rate_mbit: missing"},
		{"rate and trace", func(m map[string]any) { dir(m, "wwan0", "up")["trace"] = "x" }, "links.wwan0.up: set rate_mbit or trace"},
		{"trace in builtin", func(m map[string]any) {
			delete(dir(m, "wwan0", "up"), "rate_mbit")
			dir(m, "wwan0", "up")["trace"] = "x"
		}, "links.wwan0.up.trace: a profile read without a directory"},
		{"no delay", func(m map[string]any) { delete(dir(m, "wlan0", "down"), "delay_ms") }, "links.wlan0.down.delay_ms: missing"},
		{"negative delay", func(m map[string]any) { dir(m, "wlan0", "down")["delay_ms"] = -1 }, "links.wlan0.down.delay_ms: -1"},
		{"loss 1", func(m map[string]any) { dir(m, "wlan0", "down")["loss"] = 1 }, "links.wlan0.down.loss: 1"},
		{"loss without source", func(m map[string]any) { dir(m, "wlan0", "down")["loss"] = 0.1 }, "links.wlan0.down.loss: no entry in sources"},
		{"missing source", func(m map[string]any) { delete(m["sources"].(map[string]any), "links.wwan0.up.rate_mbit") }, "links.wwan0.up.rate_mbit: no entry in sources"},
		{"dangling source", func(m map[string]any) { m["sources"].(map[string]any)["links.wlan0.down.loss"] = "x" }, `sources["links.wlan0.down.loss"]: names no field`},
		{"empty source", func(m map[string]any) { m["sources"].(map[string]any)["links.wlan0"] = " " }, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(mutate(t, tt.edit)), "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want containing %q", err, tt.want)
			}
		})
	}
}

func TestSourcePrefixCoversFields(t *testing.T) {
	in := mutate(t, func(m map[string]any) {
		src := m["sources"].(map[string]any)
		for k := range src {
			if strings.HasPrefix(k, "links.wwan0") {
				delete(src, k)
			}
		}
		src["links.wwan0"] = "one source for the whole link"
	})
	if _, err := Parse(strings.NewReader(in), ""); err != nil {
		t.Fatal(err)
	}
}

func TestLoadFileWithTrace(t *testing.T) {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "cell.trace"), []byte("1\n2\n3\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := mutate(t, func(m map[string]any) {
		m["id"] = "traced"
		down := dir(m, "wwan0", "down")
		delete(down, "rate_mbit")
		down["trace"] = "cell.trace"
		src := m["sources"].(map[string]any)
		delete(src, "links.wwan0.down.rate_mbit")
		src["links.wwan0.down.trace"] = "a test trace"
	})
	path := filepath.Join(d, "traced.json")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	l := p.Links["wwan0"]
	par := l.Params(l.Down)
	if par.Trace == nil || par.Trace.MeanRateBps() != 12e6 {
		t.Fatalf("trace not loaded: %+v", par)
	}
	if err := par.Validate(); err != nil {
		t.Error(err)
	}
	// A broken trace is reported with the field and the file.
	os.WriteFile(filepath.Join(d, "cell.trace"), []byte("5\n1\n"), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "links.wwan0.down.trace") || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("broken trace: %v", err)
	}
}

func TestLoadUnknown(t *testing.T) {
	if _, err := Load("nope"); err == nil || !strings.Contains(err.Error(), "baseline") {
		t.Errorf("Load(nope) = %v, want the list of profiles", err)
	}
	if _, err := Load("/nonexistent/p.json"); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range Names() {
		b, _ := builtin.ReadFile(name + ".json")
		f.Add(string(b))
	}
	f.Add(`{"id":"x"}`)
	f.Add(`{} {}`)
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Parse(strings.NewReader(in), "")
		if err != nil {
			return
		}
		for _, name := range Interfaces {
			l := p.Links[name]
			for _, d := range []*Direction{l.Down, l.Up} {
				if err := l.Params(d).Validate(); err != nil {
					t.Fatalf("accepted profile gives invalid %s params: %v", name, err)
				}
			}
		}
	})
}
