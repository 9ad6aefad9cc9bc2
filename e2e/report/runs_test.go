package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const goodRecord = `{"run_id":"r1","mode":"mp-adaptive","profile":"baseline","cell_tech":"lte","page":"news","page_bytes":4450800,"objects":188,"proto":"h2","rep":3,"start_unix_ns":1700000000000000000,"end_unix_ns":1700000004500000000,"plt_ms":4500.5,"ok":true,"link_bytes":{"wlan0":{"rx":3000000,"tx":90000},"wwan0":{"rx":1500000,"tx":40000}},"server_path_bytes":{"wlan0":2900000,"wwan0":1450000},"decision":{"multipath":true,"theta1":262144,"theta2":null,"reason":"push size above theta1"},"header_seen":true,"timeline_dir":"timelines/r1","extra":"ignored"}`

// edit returns goodRecord with one key changed (value as JSON) or removed (value "").
func edit(t *testing.T, k, v string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(goodRecord), &m); err != nil {
		t.Fatal(err)
	}
	if v == "" {
		delete(m, k)
	} else {
		m[k] = json.RawMessage(v)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseRunsGood(t *testing.T) {
	recs, err := ParseRuns(strings.NewReader("\n" + goodRecord + "\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.Mode != ModeMPAdaptive || r.PageBytes != 4450800 || r.PLTms != 4500.5 || !r.OK || r.LinkBytes[IfCell].Rx != 1500000 ||
		r.ServerPathBytes[IfWiFi] != 2900000 || r.Decision == nil || !r.Decision.Multipath || r.Decision.Theta2 != nil || r.Decision.Theta1 != 262144 {
		t.Fatalf("decoded %+v", r)
	}
	// The preference an adaptive load decided under; null for the other modes.
	for v, want := range map[string]string{`"battery_saver"`: PrefBatterySaver, `null`: ""} {
		recs, err := ParseRuns(strings.NewReader(edit(t, "preference", v)))
		if err != nil || recs[0].Preference != want {
			t.Errorf("preference %s: %v, %v", v, recs, err)
		}
	}
}

func TestParseRunsRejects(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"not JSON", "{", "not a JSON object"},
		{"array", "[1]", "not a JSON object"},
		{"missing key", edit(t, "timeline_dir", ""), `"timeline_dir" is missing`},
		{"missing decision key", edit(t, "decision", ""), `"decision" is missing`},
		{"bad mode", edit(t, "mode", `"mp"`), "mode"},
		{"bad proto", edit(t, "proto", `"h3"`), "proto"},
		{"bad cell", edit(t, "cell_tech", `"5g"`), "cell_tech"},
		{"empty id", edit(t, "run_id", `""`), "run_id is empty"},
		{"wrong type", edit(t, "plt_ms", `"fast"`), "plt_ms"},
		{"zero plt", edit(t, "plt_ms", `0`), "plt_ms"},
		{"end before start", edit(t, "end_unix_ns", `5`), "start <= end"},
		{"negative bytes", edit(t, "page_bytes", `-1`), "page_bytes"},
		{"bad preference", edit(t, "preference", `"eco"`), `preference "eco"`},
		{"duplicate id", goodRecord + "\n" + goodRecord, "already used on line 1"},
		{"long line", strings.Repeat(" ", maxRecordLine+1), "longer than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRuns(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// A failed load's numbers are not checked: it may have stopped before it had any.
func TestParseRunsFailedLoad(t *testing.T) {
	in := edit(t, "ok", "false")
	var m map[string]json.RawMessage
	json.Unmarshal([]byte(in), &m)
	m["plt_ms"], m["end_unix_ns"], m["timeline_dir"] = json.RawMessage("0"), json.RawMessage("0"), json.RawMessage(`""`)
	b, _ := json.Marshal(m)
	recs, err := ParseRuns(strings.NewReader(string(b)))
	if err != nil || len(recs) != 1 || recs[0].OK {
		t.Fatalf("failed load: %v %+v", err, recs)
	}
}

func FuzzParseRuns(f *testing.F) {
	f.Add(goodRecord)
	f.Add(goodRecord + "\n" + strings.Replace(goodRecord, `"r1"`, `"r2"`, 1))
	f.Add(`{"run_id":"x"}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		recs, err := ParseRuns(strings.NewReader(in))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if err := r.validate(); err != nil {
				t.Fatalf("accepted invalid record: %v", err)
			}
			if seen[r.RunID] {
				t.Fatalf("accepted duplicate run_id %q", r.RunID)
			}
			seen[r.RunID] = true
		}
	})
}

// TestPoolRuns: files pooled as one grid keep each file's repetitions apart and paired, resolve timelines against
// their own directories, and refuse a load counted twice.
func TestPoolRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		t.Helper()
		p := filepath.Join(dir, name, "runs.jsonl")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rec := func(id string, rep int, timeline string) string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(edit(t, "rep", strconv.Itoa(rep))), &m); err != nil {
			t.Fatal(err)
		}
		m["run_id"], _ = json.Marshal(id)
		m["timeline_dir"], _ = json.Marshal(timeline)
		b, _ := json.Marshal(m)
		return string(b)
	}
	a := write("a", rec("a0", 0, "timeline/baseline"), rec("a2", 2, "timeline/baseline"))
	b := write("b", rec("b0", 0, "timeline/baseline"), rec("b1", 1, "/abs/timeline"))
	c := write("c", rec("a0", 0, "timeline/baseline"))

	tests := []struct {
		name    string
		paths   []string
		reps    map[string]int
		dirs    map[string]string
		wantErr string
	}{
		{name: "one file keeps its numbers", paths: []string{a}, reps: map[string]int{"a0": 0, "a2": 2},
			dirs: map[string]string{"a0": filepath.Join(dir, "a", "timeline/baseline")}},
		{name: "second file after the first's highest", paths: []string{a, b},
			reps: map[string]int{"a0": 0, "a2": 2, "b0": 3, "b1": 4},
			dirs: map[string]string{"b0": filepath.Join(dir, "b", "timeline/baseline"), "b1": "/abs/timeline"}},
		{name: "order decides the numbering", paths: []string{b, a}, reps: map[string]int{"b0": 0, "b1": 1, "a0": 2, "a2": 4}},
		{name: "same file twice", paths: []string{a, a}, wantErr: `run_id "a0" is in`},
		{name: "same load in two files", paths: []string{a, c}, wantErr: `run_id "a0" is in`},
		{name: "missing file", paths: []string{a, filepath.Join(dir, "none.jsonl")}, wantErr: "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := PoolRuns(tc.paths)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != len(tc.reps) {
				t.Fatalf("%d records, want %d", len(recs), len(tc.reps))
			}
			for _, r := range recs {
				if r.Rep != tc.reps[r.RunID] {
					t.Errorf("%s: rep %d, want %d", r.RunID, r.Rep, tc.reps[r.RunID])
				}
				if d, ok := tc.dirs[r.RunID]; ok && r.TimelineDir != d {
					t.Errorf("%s: timeline %q, want %q", r.RunID, r.TimelineDir, d)
				}
			}
		})
	}
}
