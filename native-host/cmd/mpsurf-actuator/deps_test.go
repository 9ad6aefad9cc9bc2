package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The privileged helper links only what it needs: the helper itself, the MPTCP and sock_diag netlink clients,
// and the standard library. Measurement (paths, rrc, radio, battery, gopsutil), the model, the decision log
// (store, SQLite) and the host never run with CAP_NET_ADMIN.
func TestHelperDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	allowed := map[string]bool{
		"github.com/mpsurf/mpsurf/native-host/cmd/mpsurf-actuator": true,
		"github.com/mpsurf/mpsurf/native-host/actuate":             true,
		"github.com/mpsurf/mpsurf/native-host/mptcp":               true,
		"github.com/mpsurf/mpsurf/native-host/diag":                true,
		"github.com/mpsurf/mpsurf/native-host/limit":               true,
		"github.com/mpsurf/mpsurf/native-host/ifaces":              true,
		"github.com/mdlayher/netlink":                              true,
		"github.com/mdlayher/netlink/nlenc":                        true,
		"github.com/mdlayher/genetlink":                            true,
		"github.com/mdlayher/socket":                               true,
		"golang.org/x/sys/unix":                                    true,
		"golang.org/x/net/bpf":                                     true,
		"golang.org/x/sync/errgroup":                               true,
	}
	forbidden := []string{"/native-host/paths", "/native-host/rrc", "/native-host/radio", "/native-host/battery",
		"/native-host/store", "/native-host/model", "/native-host/decide", "/native-host/host", "/native-host/policy",
		"sqlite", "gopsutil"}
	var deps []string
	for _, p := range strings.Fields(string(out)) {
		deps = append(deps, p)
		for _, f := range forbidden {
			if strings.Contains(p, f) {
				t.Errorf("the privileged helper links %s", p)
			}
		}
		if !allowed[p] {
			t.Errorf("the privileged helper links %s, which is not on its list (add it here only if the root process must run it)", p)
		}
	}
	t.Logf("%d non-standard packages: %s", len(deps), strings.Join(deps, " "))
}

// CLI conventions: --help prints the usage and exits 0; a bad flag exits 2 with one line.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		out  string // in stdout (code 0) or stderr
	}{
		{[]string{"--help"}, exitOK, "usage:"},
		{[]string{"-h"}, exitOK, "usage:"},
		{[]string{"--no-such-flag"}, exitUsage, "flag provided but not defined"},
		{[]string{"stray"}, exitUsage, "unexpected argument"},
		{[]string{"--allow-uid", "x"}, exitUsage, "--allow-uid"},
		{[]string{"--allow-uid", "1000", "--cell-addr", "nope"}, exitUsage, "--cell-addr"},
	} {
		var stdout, stderr strings.Builder
		code := run(c.args, &stdout, &stderr)
		got := stdout.String()
		if c.code != exitOK {
			got = stderr.String()
			if n := strings.Count(got, "\n"); n != 1 {
				t.Errorf("%v: %d lines on stderr, want one: %q", c.args, n, got)
			}
		}
		if code != c.code || !strings.Contains(got, c.out) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", c.args, code, got, c.code, c.out)
		}
	}
}
