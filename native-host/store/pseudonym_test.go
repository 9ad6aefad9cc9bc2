package store

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var tokenRE = regexp.MustCompile(`^:p-[0-9a-f]{10}$`)

func TestPseudonymousClass(t *testing.T) {
	key := []byte("a key of this log, 32 bytes long")
	for _, c := range []struct {
		path string
		keep []bool // per segment of the class: kept as it is (true) or replaced by a token (false)
	}{
		{"/", nil},
		{"/article/7", []bool{true, true}},
		{"/account/alice.smith/reset/4f1a2b3c4d5e6f708192a3b4c5d6e7f8", []bool{true, false, true, true}},
		{"/u/jdoe/posts", []bool{true, false, true}},
		{"/blog/page-12", []bool{true, true}},
		{"/api/v2/users/42/settings", []bool{true, true, true, true, true}},
		{"/static/js/main.js", []bool{true, true, true}},
		{"/static/js/app-bundle_min.css", []bool{true, true, true}},
		{"/%E2%82%AC/search", []bool{false, true}},
		{"/profile/@alice", []bool{true, false}},
		{"/~bob/index.html", []bool{false, true}},
		{"/news/2024-05-12-my-holiday-in-rome", []bool{true, false}},
		{"/münchen/karte", []bool{false, false}},
		{"/a:b/c", []bool{false, true}},
		{"/a/b/c/d/e/f", []bool{false, true, true, false, true}}, // deeper than four: the class ends in "*"
	} {
		t.Run(c.path, func(t *testing.T) {
			class := PathClass(c.path)
			got := PseudonymousClass(class, key)
			if class == "/" {
				if got != "/" {
					t.Errorf("root: %q", got)
				}
				return
			}
			in, out := strings.Split(class[1:], "/"), strings.Split(got[1:], "/")
			if len(in) != len(out) || len(out) != len(c.keep) {
				t.Fatalf("class %q → %q: segments %d → %d, want %d", class, got, len(in), len(out), len(c.keep))
			}
			for i := range in {
				switch {
				case c.keep[i] && out[i] != in[i]:
					t.Errorf("class %q → %q: segment %q replaced", class, got, in[i])
				case !c.keep[i] && !tokenRE.MatchString(out[i]):
					t.Errorf("class %q → %q: segment %q kept", class, got, in[i])
				}
			}
		})
	}
}

// The same segment gives the same token under one key, another under another key, and other segments other tokens.
func TestPseudonymousClassKeyed(t *testing.T) {
	k1, k2 := []byte("the first log's key, 32 bytes!!!"), []byte("the second log's key, 32 bytes!!")
	a := PseudonymousClass("/account/alice.smith/reset/:id", k1)
	if b := PseudonymousClass("/account/alice.smith", k1); !strings.HasPrefix(a, b) {
		t.Errorf("one segment, one key, two tokens: %q, %q", a, b)
	}
	if b := PseudonymousClass("/account/alice.smith/reset/:id", k2); a == b {
		t.Errorf("two keys, one token: %q", a)
	}
	if b := PseudonymousClass("/account/bob.jones/reset/:id", k1); a == b {
		t.Errorf("two names, one token: %q", a)
	}
}

func TestParsePathClasses(t *testing.T) {
	for in, want := range map[string]PathClasses{"pseudonymous": PathsPseudonymous, "raw": PathsRaw} {
		if got, err := ParsePathClasses(in); err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "Raw", "pseudonym", "raw ", "none"} {
		if _, err := ParsePathClasses(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The decision's inputs.path_class is replaced as the column is; a decision without one, or not an object, stays.
func TestPseudonymizeRow(t *testing.T) {
	key := []byte("a key of this log, 32 bytes long")
	class := "/account/alice.smith/reset/:id"
	want := PseudonymousClass(class, key)
	r := Row{PathClass: &class, Decision: `{"multipath":true,"inputs":{"path_class":"/account/alice.smith/reset/:id","mode":"x"},"reason":"r"}`}
	if err := pseudonymizeRow(&r, key); err != nil {
		t.Fatal(err)
	}
	if *r.PathClass != want || strings.Contains(r.Decision, "alice") {
		t.Fatalf("column %q, decision %s", *r.PathClass, r.Decision)
	}
	var d struct {
		Multipath bool
		Reason    string
		Inputs    map[string]string
	}
	if err := json.Unmarshal([]byte(r.Decision), &d); err != nil || d.Inputs["path_class"] != want || d.Inputs["mode"] != "x" || !d.Multipath || d.Reason != "r" {
		t.Errorf("decision %s (%v)", r.Decision, err)
	}
	for _, dec := range []string{`{"inputs":{"mode":"x"}}`, `null`, `{"inputs":null}`, `{"inputs":{"path_class":7}}`} {
		r := Row{Decision: dec}
		if err := pseudonymizeRow(&r, key); err != nil || r.Decision != dec {
			t.Errorf("%s → %s (%v)", dec, r.Decision, err)
		}
	}
}

// One log keeps one key across exports and opens; another log has its own.
func TestExportKeyPerLog(t *testing.T) {
	ctx := context.Background()
	export := func(path string) string {
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var n int
		s.db.QueryRow("SELECT count(*) FROM decisions").Scan(&n)
		if n == 0 {
			d := decision("https://bank.example", 1)
			if err := s.LogDecision(ctx, []byte(`{}`), d, nil, DecisionMeta{PathClass: "/account/alice.smith"}); err != nil {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if _, err := s.Export(ctx, &buf, FormatCSV, 0, PathsPseudonymous); err != nil {
			t.Fatal(err)
		}
		return regexp.MustCompile(`:p-[0-9a-f]{10}`).FindString(buf.String())
	}
	dir := t.TempDir()
	a1, a2, b := export(filepath.Join(dir, "a.db")), export(filepath.Join(dir, "a.db")), export(filepath.Join(dir, "b.db"))
	if a1 == "" || a1 != a2 || a1 == b {
		t.Errorf("tokens: log a %q then %q, log b %q", a1, a2, b)
	}
}

func FuzzPseudonymousClass(f *testing.F) {
	for _, s := range []string{"/", "/account/alice.smith/reset/:id", "/page-:n", "/:id/*", "/%e2/x", "/a/b/c/d/*", "/ü-:n"} {
		f.Add(s)
	}
	key := []byte("a key of this log, 32 bytes long")
	f.Fuzz(func(t *testing.T, class string) {
		got := PseudonymousClass(class, key)
		if got != PseudonymousClass(class, key) {
			t.Fatal("not deterministic")
		}
		if class == "" || class == "/" {
			if got != class {
				t.Fatalf("%q → %q", class, got)
			}
			return
		}
		in, out := strings.Split(strings.TrimPrefix(class, "/"), "/"), strings.Split(got[1:], "/")
		if got[0] != '/' || len(in) != len(out) {
			t.Fatalf("%q → %q: segments changed", class, got)
		}
		for i := range in {
			if out[i] != in[i] {
				if !tokenRE.MatchString(out[i]) {
					t.Fatalf("%q → %q: segment %q became %q", class, got, in[i], out[i])
				}
				continue
			}
			// A segment kept holds only known words, placeholders and separators.
			if !structural(in[i]) {
				t.Fatalf("%q → %q: %q kept", class, got, in[i])
			}
		}
		if utf8.ValidString(class) && !utf8.ValidString(got) {
			t.Fatalf("%q → %q: invalid UTF-8", class, got)
		}
	})
}
