package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// What the commands print is true and readable, and a mistake on the command line (a missing file, a bad value)
// is one line on stderr with exit status 2, whichever command it was given to. Each case is a defect a user met.
func TestCommandsTellTheTruth(t *testing.T) {
	dir := t.TempDir()
	models, err := filepath.Abs("../../../policy-models")
	if err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "paths.json")
	if err := os.WriteFile(notJSON, []byte("[{"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyModels := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a regexp stdout matches ("" for none when code is 2)
		stderr string // a regexp the one line on stderr matches (code 2)
	}{
		// status printed θ1, a pointer, with %d: "theta1 20155570759216 bytes".
		{"status prints θ1 as a size", []string{"status", "--sample", "0"}, 0,
			`(?m)^policy: baseline-seed001 v1: multipath true, theta1 200 kB, theta2 none, deadline 3 s$`, ""},
		// decide printed sizes as floats: "size 2e+06 B", "cellular_bytes 1.03783e+06 B".
		{"decide prints sizes in kB and MB", []string{"decide", "--origin", "https://a.example", "--size", "2000000", "--proto", "h2"}, 0,
			`(?m)^  size +2 MB  the page's typical size`, ""},
		{"decide prints rates in Mbit/s", []string{"decide", "--origin", "https://a.example", "--size", "2000000", "--proto", "h2"}, 0,
			`(?m)^  primary_rate +7(\.\d)? Mbit/s`, ""},
		// decide --rrc banana was taken as idle without a word.
		{"decide --rrc banana", []string{"decide", "--origin", "https://a.example", "--rrc", "banana"}, 2, "",
			`--rrc "banana": not a state of the LTE radio model; want one of idle, promotion, continuous`},
		{"decide --rrc-spread with an unknown state", []string{"decide", "--origin", "https://a.example", "--rrc-spread", "idle:0.5,dozing:0.5"}, 2, "",
			`"dozing" is not a state of the LTE radio model`},
		{"decide --rrc-tech 5g", []string{"decide", "--origin", "https://a.example", "--rrc", "idle", "--rrc-tech", "5g"}, 2, "", `--rrc-tech "5g": want lte or 3g`},
		// A missing file exited 1 here and 2 elsewhere.
		{"decide --paths missing", []string{"decide", "--origin", "https://a.example", "--paths", filepath.Join(dir, "nope.json")}, 2, "",
			`--paths .*nope\.json: no such file`},
		{"decide --paths not JSON", []string{"decide", "--origin", "https://a.example", "--paths", notJSON}, 2, "", `--paths: .*paths\.json: unexpected EOF`},
		{"decide --prefs missing", []string{"decide", "--origin", "https://a.example", "--prefs", "nope.json"}, 2, "", `--prefs nope\.json: no such file`},
		{"decide --models missing", []string{"decide", "--origin", "https://a.example", "--models", filepath.Join(dir, "nomodels")}, 2, "",
			`--models .*nomodels: no such directory`},
		{"decide --models without a model", []string{"decide", "--origin", "https://a.example", "--models", emptyModels}, 2, "", `--models: .*model\.json`},
		{"replay --model missing", []string{"replay", "--model", filepath.Join(dir, "nomodels")}, 2, "", `--models .*nomodels: no such directory`},
		{"replay --models missing", []string{"replay", "--models", filepath.Join(dir, "nomodels")}, 2, "", `--models .*nomodels: no such directory`},
		{"replay --db missing", []string{"replay", "--models", models, "--db", filepath.Join(dir, "typo.db")}, 2, "", `typo\.db: no such file`},
		// log export --db <typo> made an empty database and its directories, and exited 0.
		{"log export --db missing", []string{"log", "export", "--format", "csv", "--db", filepath.Join(dir, "typo.db")}, 2, "",
			`--db .*typo\.db: no such file \(--create makes an empty log\)`},
		{"log export --db in a missing directory", []string{"log", "export", "--format", "csv", "--db", filepath.Join(dir, "no", "such", "x.db"), "--create"}, 2, "",
			`no such file, and no directory .*no/such`},
		{"log export --create", []string{"log", "export", "--format", "csv", "--db", filepath.Join(dir, "new.db"), "--create"}, 0, `^id,time_ms,time,origin,`, ""},
		// fetch not-a-url said "fetch: : only https URLs are downloaded this way".
		{"fetch not-a-url", []string{"fetch", "not-a-url", "-o", filepath.Join(dir, "out")}, 2, "", `fetch: "not-a-url" is not an https URL`},
		{"fetch http", []string{"fetch", "http://example.com/x", "-o", filepath.Join(dir, "out")}, 2, "", `fetch: "http://example.com/x" is not an https URL`},
		{"fetch --ca missing", []string{"fetch", "https://example.com/x", "-o", filepath.Join(dir, "out"), "--ca", "nope.pem"}, 2, "", `--ca nope\.pem: no such file`},
		{"status --models missing", []string{"status", "--sample", "0", "--models", filepath.Join(dir, "nomodels")}, 2, "", `--models .*nomodels: no such directory`},
		{"status --policy missing", []string{"status", "--sample", "0", "--policy", filepath.Join(dir, "nope.json")}, 2, "", `--policy .*nope\.json: no such file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runHost(t, nil, hostEnv("HOME="+t.TempDir()), tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", r.code, tc.code, r.stdout, r.stderr)
			}
			if tc.code == 2 {
				if len(r.stdout) != 0 || strings.Count(string(r.stderr), "\n") != 1 || !strings.HasSuffix(string(r.stderr), "\n") {
					t.Errorf("want nothing on stdout and one line on stderr; got %q, %q", r.stdout, r.stderr)
				}
				if !regexp.MustCompile(tc.stderr).Match(r.stderr) {
					t.Errorf("stderr %q does not match %q", r.stderr, tc.stderr)
				}
				return
			}
			if !regexp.MustCompile(tc.stdout).Match(r.stdout) {
				t.Errorf("stdout does not match %q:\n%s", tc.stdout, r.stdout)
			}
			if regexp.MustCompile(`\de[+-]\d`).Match(r.stdout) {
				t.Errorf("a float's exponent in:\n%s", r.stdout)
			}
		})
	}
	// Nothing was made where the typos pointed.
	for _, p := range []string{"typo.db", "no", "nomodels"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s exists after the failed commands (%v)", p, err)
		}
	}
}

// The old name of the model directory flag still works, and means the same as the new one.
func TestReplayModelAlias(t *testing.T) {
	models, err := filepath.Abs("../../../policy-models")
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "x.db")
	if r := runHost(t, nil, hostEnv(), "log", "export", "--format", "csv", "--db", db, "--create"); r.code != 0 {
		t.Fatalf("create: %d %s", r.code, r.stderr)
	}
	a := runHost(t, nil, hostEnv(), "replay", "--models", models, "--db", db, "--json")
	b := runHost(t, nil, hostEnv(), "replay", "--model", models, "--db", db, "--json")
	if a.code != 0 || b.code != 0 || string(a.stdout) != string(b.stdout) {
		t.Errorf("--models: %d %s\n--model: %d %s", a.code, a.stdout, b.code, b.stdout)
	}
}
