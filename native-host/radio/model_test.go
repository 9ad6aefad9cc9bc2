package radio

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const modelsDir = "../../policy-models"

func loadModel(t *testing.T, tech string) *Model {
	t.Helper()
	m, err := Load(filepath.Join(modelsDir, "power-"+tech+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Technology != tech {
		t.Fatalf("power-%s.json says technology %q", tech, m.Technology)
	}
	return m
}

func TestShippedModelsLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(modelsDir, "power-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("found %d power-*.json files, want 3 (lte, 3g, wifi): %v", len(files), files)
	}
	ids := map[string]bool{}
	for _, f := range files {
		m, err := Load(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if ids[m.ID] {
			t.Errorf("%s: id %q used twice", f, m.ID)
		}
		ids[m.ID] = true
		if m.Drain() <= 0 {
			t.Errorf("%s: drain %v", f, m.Drain())
		}
	}
}

// The LTE tail must add up to the RRC inactivity timer of Huang et al., MobiSys 2012, Table 3 (~11.5 s).
func TestLTETailLength(t *testing.T) {
	m := loadModel(t, LTE)
	var tail time.Duration
	for _, p := range m.Tail {
		tail += p.Duration()
	}
	if tail < 11*time.Second || tail > 12*time.Second {
		t.Errorf("LTE tail is %v, want about 11.5 s", tail)
	}
}

func TestSchemaCoversModelKeys(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(modelsDir, "power.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	for _, tech := range []string{LTE, ThreeG, WiFi} {
		b, err := os.ReadFile(filepath.Join(modelsDir, "power-"+tech+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		for k := range raw {
			if _, ok := schema.Properties[k]; !ok {
				t.Errorf("power-%s.json key %q is not in power.schema.json", tech, k)
			}
		}
		for _, k := range schema.Required {
			if _, ok := raw[k]; !ok {
				t.Errorf("power-%s.json lacks required key %q", tech, k)
			}
		}
	}
}

// mutate applies f to the decoded LTE model file and parses the result.
func mutate(t *testing.T, f func(m map[string]any)) error {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(modelsDir, "power-lte.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(out)
	return err
}

func tail(m map[string]any, i int) map[string]any { return m["tail"].([]any)[i].(map[string]any) }

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name string
		f    func(m map[string]any)
		want string
	}{
		{"unknown field", func(m map[string]any) { m["tail_s"] = 11.5 }, "unknown field"},
		{"missing field", func(m map[string]any) { delete(m["promotion"].(map[string]any), "power_mw") }, "promotion.power_mw is missing"},
		{"number without source", func(m map[string]any) { delete(m["sources"].(map[string]any), "connected.beta_mw") }, "connected.beta_mw has no entry in sources"},
		{"stale source", func(m map[string]any) { m["sources"].(map[string]any)["tail[7].power_mw"] = "x" }, "names no field"},
		{"empty source", func(m map[string]any) { m["sources"].(map[string]any)["idle_power_mw"] = " " }, "is empty"},
		{"negative power", func(m map[string]any) { m["promotion"].(map[string]any)["power_mw"] = -1.0 }, "want a finite number >= 0"},
		{"zero phase", func(m map[string]any) { tail(m, 0)["duration_ms"] = 0.0 }, "want > 0"},
		{"power and drx", func(m map[string]any) { tail(m, 1)["power_mw"] = 1.0 }, "both power_mw and drx"},
		{"neither power nor drx", func(m map[string]any) { delete(tail(m, 0), "power_mw") }, "neither power_mw nor drx"},
		{"drx on longer than cycle", func(m map[string]any) { tail(m, 1)["drx"].(map[string]any)["on_ms"] = 50.0 }, "exceeds cycle_ms"},
		{"wake on first phase", func(m map[string]any) {
			tail(m, 0)["wake"] = map[string]any{"name": "w", "promotion_ms": 1.0, "power_mw": 1.0, "small_up_bytes": 1, "small_down_bytes": 1}
		}, "first tail phase"},
		{"duplicate name", func(m map[string]any) { tail(m, 1)["name"] = "long_drx" }, "is also"},
		{"idle name", func(m map[string]any) { tail(m, 1)["name"] = "idle" }, "not \"idle\""},
		{"bad technology", func(m map[string]any) { m["technology"] = "5g" }, "technology"},
		{"no tail", func(m map[string]any) {
			m["tail"] = []any{}
			for k := range m["sources"].(map[string]any) {
				if strings.HasPrefix(k, "tail") {
					delete(m["sources"].(map[string]any), k)
				}
			}
		}, "no phase"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := mutate(t, c.f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	if err := mutate(t, func(map[string]any) {}); err != nil {
		t.Fatalf("unchanged model: %v", err)
	}
}

func TestParseTrailingData(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(modelsDir, "power-wifi.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(append(b, []byte(`{}`)...)); err == nil {
		t.Fatal("trailing object accepted")
	}
}
