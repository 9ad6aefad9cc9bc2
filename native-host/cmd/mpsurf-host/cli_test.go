package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/cli/clitest"
)

// Every command of the table, run by the real binary, follows the conventions of package cli.
func TestCommandsFollowConventions(t *testing.T) {
	subs := [][]string{nil}
	groups := map[string]bool{}
	for _, c := range commands() {
		words := strings.Fields(c.name)
		if c.run == nil {
			words = []string{origin} // serving: the extension's own origin
		}
		subs = append(subs, words)
		if len(words) > 1 && !groups[words[0]] {
			groups[words[0]] = true
			subs = append(subs, words[:1]) // the group ("proxy --help")
		}
	}
	env := hostEnv("HOME=" + t.TempDir())
	clitest.Check(t, func(args ...string) (int, string, string) {
		r := runHost(t, nil, env, args...)
		return r.code, string(r.stdout), string(r.stderr)
	}, subs)
}

// The top-level usage shows every command's synopsis, and help COMMAND the command's own usage.
func TestUsageListsEveryCommand(t *testing.T) {
	all := usage()
	for _, c := range commands() {
		synopsis, _, _ := strings.Cut(c.usage, "\n")
		if !strings.Contains(all, synopsis) {
			t.Errorf("usage lacks %q", synopsis)
		}
		if !strings.HasPrefix(c.usage, "mpsurf-host "+c.name) {
			t.Errorf("%s: usage starts %q", c.name, synopsis)
		}
		if c.run == nil {
			continue
		}
		r := runHost(t, nil, hostEnv(), append([]string{"help"}, strings.Fields(c.name)...)...)
		if r.code != 0 || string(r.stdout) != "usage: "+c.usage {
			t.Errorf("help %s: exit %d, %q", c.name, r.code, r.stdout)
		}
	}
}

// File arguments are taken relative to the working directory or as absolute paths.
func TestFileArgumentsRelativeAndAbsolute(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "paths.json"), []byte(`[{"name":"wlan0","kind":"wifi","up":true,"rtt_ms":50,"down_bps":7040000,"up_bps":2020000,"loss":0}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	models, err := filepath.Abs("../../../policy-models")
	if err != nil {
		t.Fatal(err)
	}
	relModels, err := filepath.Rel(dir, models)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range [][]string{
		{"decide", "--origin", "https://a.example", "--paths", "paths.json", "--models", relModels},
		{"decide", "--origin", "https://a.example", "--paths", filepath.Join(dir, "paths.json"), "--models", models},
		{"log", "export", "--format", "csv", "--db", "rel.db", "--create"},
		{"log", "export", "--format", "csv", "--db", filepath.Join(dir, "abs.db"), "--create"},
		{"replay", "--models", relModels, "--db", "rel.db"},
		{"replay", "--models", models, "--db", filepath.Join(dir, "abs.db")},
	} {
		cmd := exec.Command(bin, tc...)
		cmd.Dir, cmd.Env = dir, hostEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%q in %s: %v\n%s", tc, dir, err, out)
		}
	}
	for _, db := range []string{"rel.db", "abs.db"} {
		if _, err := os.Stat(filepath.Join(dir, db)); err != nil {
			t.Errorf("%s: %v", db, err)
		}
	}
}
