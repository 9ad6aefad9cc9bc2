package store

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The URL path of a page whose path names a person and carries a reset token. Its class is
// /account/alice.smith/reset/:id: the token must never be kept, the whole path neither.
const (
	secretPath  = "/account/alice.smith/reset/k7Qz9XbT2mPw4Lr8Vn3s"
	secretToken = "k7Qz9XbT2mPw4Lr8Vn3s"
)

// fileHolds reports which of the database's files (main, -wal) hold needle.
func fileHolds(t *testing.T, db, needle string) []string {
	t.Helper()
	var in []string
	for _, p := range []string{db, db + "-wal", db + "-journal"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte(needle)) {
			in = append(in, filepath.Base(p))
		}
	}
	return in
}

// testdata/schema5-paths.db was written by the host before it kept paths out of the log (schema version 5):
// three decides and a report of the page at secretPath, through `mpsurf-host` itself. Opening it with this
// store rewrites each kept request without the path and vacuums, so that the old pages leave the file too.
func TestOldLogLosesRawPaths(t *testing.T) {
	old, err := os.ReadFile("testdata/schema5-paths.db")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(old, []byte(secretToken)) {
		t.Fatal("the fixture holds no raw path: the test would prove nothing")
	}
	db := filepath.Join(t.TempDir(), "mpsurf.db")
	if err := os.WriteFile(db, old, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if in := fileHolds(t, db, secretToken); len(in) > 0 {
		t.Errorf("after the migration the raw path's token is still in %v", in)
	}
	rows := readAll(t, s)
	if len(rows) != 3 {
		t.Fatalf("%d decisions after the migration, want the fixture's 3", len(rows))
	}
	for _, r := range rows {
		var req map[string]any
		if err := json.Unmarshal([]byte(r.Request), &req); err != nil {
			t.Fatalf("request %q: %v", r.Request, err)
		}
		if _, ok := req["path"]; ok {
			t.Errorf("row %d still keeps a path: %s", r.ID, r.Request)
		}
		if req["origin"] != "https://bank.example" || req["nav"] == nil {
			t.Errorf("row %d lost what it may keep: %s", r.ID, r.Request)
		}
		if r.PathClass == nil || *r.PathClass != "/account/alice.smith/reset/:id" {
			t.Errorf("row %d: path class %v, want the class kept", r.ID, r.PathClass)
		}
	}
	var v int
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion {
		t.Errorf("schema version %d (%v), want %d", v, err, SchemaVersion)
	}
}

// A decide request carries the page's path; the log keeps its class only, and neither export holds the path.
func TestLogAndExportHoldNoRawPath(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "mpsurf.db")
	s, err := Open(db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := decision("https://bank.example", 1)
	req, _ := json.Marshal(map[string]any{"origin": d.Origin, "tab": d.Tab, "nav": d.Nav, "path": secretPath,
		"later_field": "/another/raw/value"})
	if err := s.LogDecision(ctx, req, d, nil, DecisionMeta{PathClass: PathClass(secretPath)}); err != nil {
		t.Fatal(err)
	}
	// The default export holds the class with the person's name replaced; a raw one, for the user's own use, the
	// class as logged. (The decision's inputs: TestPseudonymizeRow.)
	pseudonym := regexp.MustCompile(`/account/:p-[0-9a-f]{10}/reset/:id`)
	for _, format := range []string{FormatCSV, FormatJSONL} {
		for _, paths := range []PathClasses{PathsPseudonymous, PathsRaw} {
			var buf bytes.Buffer
			if _, err := s.Export(ctx, &buf, format, 0, paths); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, raw := range []string{secretToken, "/another/raw/value"} {
				if strings.Contains(out, raw) {
					t.Errorf("%s export holds %q:\n%s", format, raw, out)
				}
			}
			if paths == PathsRaw {
				if !strings.Contains(out, "/account/alice.smith/reset/:id") {
					t.Errorf("%s raw export lacks the path class:\n%s", format, out)
				}
				continue
			}
			if strings.Contains(out, "alice") || strings.Contains(out, "smith") {
				t.Errorf("%s pseudonymous export holds the name:\n%s", format, out)
			}
			if !pseudonym.MatchString(out) {
				t.Errorf("%s pseudonymous export lacks the pseudonymous class:\n%s", format, out)
			}
		}
	}
	s.Close()
	if in := fileHolds(t, db, secretToken); len(in) > 0 {
		t.Errorf("the raw path's token is in %v", in)
	}
}
