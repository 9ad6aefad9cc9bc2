package policy

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// baseline is policy-models/baseline.json as a map, so that each case below changes one thing in the real file.
func baseline(t testing.TB) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../policy-models/baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseBaseline(t *testing.T) {
	data, err := os.ReadFile("../../policy-models/baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("policy-models/baseline.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != "baseline-seed001" || f.Version != 1 || !f.Multipath || f.Theta1Bytes != 200000 ||
		f.Theta2Bytes != nil || f.DeadlineMS != 3000 {
		t.Errorf("got %+v", f)
	}
	if !strings.Contains(f.Sources["theta1_bytes"], "200KB") {
		t.Errorf("theta1 source %q does not quote the paper", f.Sources["theta1_bytes"])
	}
}

// The embedded copy is the file in the repository.
func TestEmbeddedIsBaseline(t *testing.T) {
	src := EmbeddedSource()
	f, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	disk, _ := os.ReadFile("../../policy-models/baseline.json")
	want, _ := Parse("x", disk)
	if f.ID != want.ID || f.Version != want.Version || f.Theta1Bytes != want.Theta1Bytes {
		t.Errorf("embedded %+v, disk %+v", f, want)
	}
	if src.String() != "embedded:policy-models/baseline.json" {
		t.Errorf("source %q", src.String())
	}
}

func TestParseRejects(t *testing.T) {
	const name = "policy-models/baseline.json"
	tests := []struct {
		name   string
		change func(m map[string]any)
		raw    string // used instead of the changed baseline when set
		want   string
	}{
		{"negative theta1", func(m map[string]any) { m["theta1_bytes"] = -1 }, "",
			name + ": theta1_bytes: must be 0 to 9007199254740991"},
		{"theta1 above 2^53", func(m map[string]any) { m["theta1_bytes"] = json.Number("9007199254740992") }, "",
			name + ": theta1_bytes: must be 0 to 9007199254740991"},
		{"theta1 beyond 64 bits", func(m map[string]any) { m["theta1_bytes"] = json.Number("99999999999999999999") }, "",
			name + ": theta1_bytes: must be 0 to 9007199254740991"},
		{"theta1 fractional", func(m map[string]any) { m["theta1_bytes"] = 2.5 }, "",
			name + ": theta1_bytes: must be an integer"},
		{"theta1 a string", func(m map[string]any) { m["theta1_bytes"] = "200000" }, "",
			name + ": theta1_bytes: must be an integer"},
		{"theta1 missing", func(m map[string]any) { delete(m, "theta1_bytes") }, "",
			name + ": theta1_bytes: missing"},
		{"negative theta2", func(m map[string]any) { m["theta2_bytes"] = -5 }, "",
			name + ": theta2_bytes: must be null or an integer 0 to 9007199254740991"},
		{"theta2 missing", func(m map[string]any) { delete(m, "theta2_bytes") }, "",
			name + ": theta2_bytes: missing (null means no cap)"},
		{"deadline 99", func(m map[string]any) { m["deadline_ms"] = 99 }, "",
			name + ": deadline_ms: must be 100 to 60000"},
		{"deadline 60001", func(m map[string]any) { m["deadline_ms"] = 60001 }, "",
			name + ": deadline_ms: must be 100 to 60000"},
		{"multipath a string", func(m map[string]any) { m["multipath"] = "yes" }, "",
			name + ": multipath: must be a boolean"},
		{"version 0", func(m map[string]any) { m["version"] = 0 }, "",
			name + ": version: must be 1 to 9007199254740991"},
		{"id empty", func(m map[string]any) { m["id"] = "" }, "",
			name + ": id: must be 1 to 64 of A-Z a-z 0-9 . _ -"},
		{"id with a space", func(m map[string]any) { m["id"] = "a b" }, "",
			name + ": id: must be 1 to 64 of A-Z a-z 0-9 . _ -"},
		{"id a number", func(m map[string]any) { m["id"] = 5 }, "",
			name + ": id: must be a string"},
		{"unknown field", func(m map[string]any) { m["theta1"] = 5 }, "",
			name + ": theta1: unknown field"},
		{"no source for theta1", func(m map[string]any) { delete(m["sources"].(map[string]any), "theta1_bytes") }, "",
			name + ": theta1_bytes: has no entry in sources"},
		{"no source for multipath", func(m map[string]any) { delete(m["sources"].(map[string]any), "multipath") }, "",
			name + ": multipath: has no entry in sources"},
		{"empty source", func(m map[string]any) { m["sources"].(map[string]any)["deadline_ms"] = " " }, "",
			name + ": sources.deadline_ms: must be a non-empty string"},
		{"source for nothing", func(m map[string]any) { m["sources"].(map[string]any)["theta3"] = "x" }, "",
			name + ": sources.theta3: names no model value of this file"},
		{"sources missing", func(m map[string]any) { delete(m, "sources") }, "",
			name + ": sources: missing"},
		{"sources an array", func(m map[string]any) { m["sources"] = []string{"x"} }, "",
			name + ": sources: must be an object"},
		{"not JSON", nil, `{"id":`, name + ": not one JSON object"},
		{"array", nil, `[]`, name + ": not one JSON object"},
		{"two objects", nil, `{}{}`, name + ": not one JSON object"},
		{"empty", nil, ``, name + ": not one JSON object"},
		{"too large", nil, `{"description":"` + strings.Repeat("x", MaxFileSize) + `"}`,
			name + ": larger than 65536 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.raw)
			if tc.change != nil {
				m := baseline(t)
				tc.change(m)
				var err error
				if data, err = json.Marshal(m); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Parse(name, data)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	for name, change := range map[string]func(m map[string]any){
		"theta2 set":            func(m map[string]any) { m["theta2_bytes"] = 5000000 },
		"multipath off":         func(m map[string]any) { m["multipath"] = false },
		"no $schema":            func(m map[string]any) { delete(m, "$schema") },
		"no description":        func(m map[string]any) { delete(m, "description") },
		"deadline at the floor": func(m map[string]any) { m["deadline_ms"] = 100 },
		"theta1 zero":           func(m map[string]any) { m["theta1_bytes"] = 0 },
	} {
		m := baseline(t)
		change(m)
		data, _ := json.Marshal(m)
		if _, err := Parse("x.json", data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
