package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/store"
	"github.com/mpsurf/mpsurf/native-host/wire"
)

const exportDoc = "../../../docs/decision-log.md"

// section returns the text of the "## title" section of doc.
func section(t *testing.T, doc, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", exportDoc, title)
	}
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// tableKeys returns the backticked names in the first cell of each table row of a section, in order.
func tableKeys(sec string) []string {
	var keys []string
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z0-9_]+)`").FindAllStringSubmatch(first, -1) {
			keys = append(keys, m[1])
		}
	}
	return keys
}

// boldList returns the backticked names of the paragraph that starts with **`name`**.
func boldList(t *testing.T, sec, name string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(sec, "**`"+name+"`**")
	if !ok {
		t.Fatalf("%s: no paragraph on %s", exportDoc, name)
	}
	if end := strings.Index(rest, "\n\n"); end >= 0 {
		rest = rest[:end]
	}
	var out []string
	for _, m := range regexp.MustCompile("`([a-z0-9_]+)`").FindAllStringSubmatch(rest, -1) {
		out = append(out, m[1])
	}
	return out
}

// jsonKeys lists the JSON names of a struct type's fields, embedded structs' included.
func jsonKeys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, jsonKeys(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// The export's documentation (docs/decision-log.md) and the export stay in step: the columns it lists are the
// export's, in order, and every key of a logged decision, of its inputs and of its terms is documented. A column
// or key added or removed without the documentation fails here.
func TestExportDocumented(t *testing.T) {
	raw, err := os.ReadFile(exportDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	cols := tableKeys(section(t, doc, "Columns"))
	if !slices.Equal(cols, store.Columns) {
		t.Errorf("documented columns\n  %v\nexport columns\n  %v", cols, store.Columns)
	}
	decSec := section(t, doc, "The `decision` column")
	decKeys := tableKeys(decSec)
	if body := jsonKeys(reflect.TypeOf(decide.Body{})); !sameSet(decKeys, body) {
		t.Errorf("documented decision keys %v\nthe decision's keys (decide.Body) %v", decKeys, body)
	}
	inputs, terms := boldList(t, decSec, "inputs"), boldList(t, decSec, "terms")

	// A real host decides (a page of a path class, a download size unknown, one while paused) into a log of its
	// own, and the real command exports it.
	dir := t.TempDir()
	db := filepath.Join(dir, "log.db")
	var in bytes.Buffer
	w := wire.NewWriter(&in, wire.MaxIn)
	for _, m := range []string{
		`{"v":1,"id":1,"type":"decide","body":{"origin":"https://a.example","tab":3,"nav":"3-1","path":"/account/alice.smith/reset/7"}}`,
		`{"v":1,"id":2,"type":"pause","body":{"paused":true,"why":"user"}}`,
		`{"v":1,"id":3,"type":"decide","body":{"origin":"https://b.example","tab":3,"nav":"3-2"}}`,
		`{"v":1,"id":4,"type":"report","body":{"origin":"https://a.example","tab":3,"nav":"3-1","plt_ms":812.5,"transfer_bytes":2100000,"protocol":"h2","multipath":false}}`,
	} {
		if err := w.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	env := hostEnv("MPSURF_DB=" + db)
	if r := runHost(t, in.Bytes(), env, origin); r.code != 0 {
		t.Fatalf("host: exit %d\n%s", r.code, r.stderr)
	}
	r := runHost(t, nil, env, "log", "export", "--format", "jsonl", "--db", db)
	if r.code != 0 {
		t.Fatalf("export: exit %d\n%s", r.code, r.stderr)
	}
	rows := 0
	sc := bufio.NewScanner(bytes.NewReader(r.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rows++
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		var order []string
		for dec.More() {
			k, _ := dec.Token()
			order = append(order, k.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(order, cols) {
			t.Errorf("row %d: keys %v, documented %v", rows, order, cols)
		}
		var row struct {
			Decision map[string]json.RawMessage `json:"decision"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		for k := range row.Decision {
			if !slices.Contains(decKeys, k) {
				t.Errorf("row %d: decision key %q is not documented", rows, k)
			}
		}
		var body struct {
			Inputs map[string]any `json:"inputs"`
			Terms  []struct{ Name string }
		}
		if err := json.Unmarshal(sc.Bytes(), &struct {
			Decision any `json:"decision"`
		}{&body}); err != nil {
			t.Fatal(err)
		}
		for k := range body.Inputs {
			if !slices.Contains(inputs, k) {
				t.Errorf("row %d: inputs key %q is not documented", rows, k)
			}
		}
		for _, tm := range body.Terms {
			if !slices.Contains(terms, tm.Name) {
				t.Errorf("row %d: term %q is not documented", rows, tm.Name)
			}
		}
	}
	if rows != 2 {
		t.Errorf("%d rows exported, want 2\n%s", rows, r.stdout)
	}
	r = runHost(t, nil, env, "log", "export", "--format", "csv", "--db", db)
	header, err := csv.NewReader(bytes.NewReader(r.stdout)).Read()
	if err != nil || !slices.Equal(header, cols) {
		t.Errorf("CSV header %v (%v), documented %v", header, err, cols)
	}

	// Path classes: pseudonymous unless --path-classes raw, as documented.
	if !strings.Contains(doc, "`--path-classes raw|pseudonymous`") || !strings.Contains(doc, "default\n`pseudonymous`") && !strings.Contains(doc, "default `pseudonymous`") {
		t.Errorf("%s does not document --path-classes raw|pseudonymous and its default", exportDoc)
	}
	for _, format := range []string{"csv", "jsonl"} {
		r = runHost(t, nil, env, "log", "export", "--format", format, "--db", db)
		if r.code != 0 || bytes.Contains(r.stdout, []byte("alice")) || !regexp.MustCompile(`/account/:p-[0-9a-f]{10}/reset/:id`).Match(r.stdout) {
			t.Errorf("%s export (exit %d) is not pseudonymous:\n%s", format, r.code, r.stdout)
		}
		r = runHost(t, nil, env, "log", "export", "--format", format, "--path-classes", "raw", "--db", db)
		if r.code != 0 || !bytes.Contains(r.stdout, []byte("/account/alice.smith/reset/:id")) {
			t.Errorf("%s export --path-classes raw (exit %d) lacks the class as logged:\n%s", format, r.code, r.stdout)
		}
	}
	if r = runHost(t, nil, env, "log", "export", "--format", "csv", "--path-classes", "hashed", "--db", db); r.code != 2 || strings.Count(strings.TrimSpace(string(r.stderr)), "\n") != 0 {
		t.Errorf("--path-classes hashed: exit %d, stderr %q; want 2 and one line", r.code, r.stderr)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
