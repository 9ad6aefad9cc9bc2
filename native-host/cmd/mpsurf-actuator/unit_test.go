package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxExposure bounds `systemd-analyze security`'s overall exposure of the unit (0 best, 10 worst). The unit
// scores 1.1 with systemd 252; what it cannot have is PrivateNetwork/PrivateUsers (it changes the host's
// network namespace), CAP_NET_ADMIN and netlink.
const maxExposure = 1.5

// unitFile reads packaging/systemd/mpsurf-actuator.service into its settings (continuation lines joined).
func unitFile(t *testing.T) (string, map[string][]string) {
	t.Helper()
	b, err := os.ReadFile("../../../packaging/systemd/mpsurf-actuator.service")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	keys := map[string][]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(line, "#") {
			keys[k] = append(keys[k], strings.Join(strings.Fields(v), " "))
		}
	}
	return string(b), keys
}

// installed writes the unit as the package installs it, with ExecStart's binary this package's own build, since
// systemd-analyze verify checks that it exists.
func installed(t *testing.T, unit string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "mpsurf-actuator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	unit = strings.ReplaceAll(unit, "/usr/sbin/mpsurf-actuator", bin)
	path := filepath.Join(dir, "mpsurf-actuator.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The systemd unit of the privileged helper (packaging/systemd) runs as a user of its own with CAP_NET_ADMIN only,
// may write nothing of /proc/sys but net/mptcp, never hides the network namespace, restarts however it ended,
// restores on every stop, and runs the helper with flags it knows. With systemd-analyze present, the installed
// form is verified.
func TestSystemdUnit(t *testing.T) {
	unit, keys := unitFile(t)
	for k, want := range map[string]string{
		"CapabilityBoundingSet": "CAP_NET_ADMIN", "AmbientCapabilities": "CAP_NET_ADMIN", "NoNewPrivileges": "yes",
		"User": "mpsurf-actuator", "RuntimeDirectoryPreserve": "yes", "Restart": "always",
		"ProtectKernelTunables": "yes", "ReadWritePaths": "/proc/sys/net/mptcp /run/mpsurf", "ProtectSystem": "strict",
		"RestrictAddressFamilies": "AF_UNIX AF_NETLINK",
	} {
		if got := strings.Join(keys[k], "|"); got != want {
			t.Errorf("%s=%q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"PrivateNetwork", "NetworkNamespacePath", "PrivateUsers", "ProcSubset"} {
		if _, ok := keys[k]; ok {
			t.Errorf("%s would hide the host's network namespace or /proc/sys/net/mptcp", k)
		}
	}
	if got := strings.Join(keys["ExecStopPost"], "|"); !strings.Contains(got, "/usr/sbin/mpsurf-actuator --restore") {
		t.Errorf("ExecStopPost=%q does not restore", got)
	}
	start := strings.Join(keys["ExecStart"], "|")
	for _, f := range regexp.MustCompile(`--[a-z-]+`).FindAllString(start, -1) {
		if !strings.Contains(usage, f) {
			t.Errorf("ExecStart passes %s, which the helper does not take", f)
		}
	}
	// Generic: whom it serves and the modem are not built in (scripts/setup.sh rewrites both words for a source
	// build, so they must be there to rewrite).
	for _, word := range []string{"--allow-group mpsurf", "--cell-if ${MPSURF_CELL_IF}", "$MPSURF_ACTUATOR_OPTS"} {
		if !strings.Contains(start, word) {
			t.Errorf("ExecStart lacks %q", word)
		}
	}
	if strings.Contains(start, "--allow-uid") {
		t.Errorf("ExecStart names a uid: %s", start)
	}
	if got := strings.Join(keys["Environment"], "|"); got != "MPSURF_CELL_IF=auto" {
		t.Errorf("Environment=%q, want the cellular interface found at run time by default", got)
	}
	if got := strings.Join(keys["EnvironmentFile"], "|"); got != "-/etc/default/mpsurf-actuator" {
		t.Errorf("EnvironmentFile=%q", got)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the unit's syntax and exposure are not checked here")
	}
	path := installed(t, unit)
	out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// (--man=no above: the man page comes with the package.) --offline reads the unit file alone: no systemd needs to run.
	out, _ = exec.Command(analyze, "security", "--offline=yes", "--no-pager", path).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Skipf("systemd-analyze security --offline gave no exposure here: %s", out)
	}
	exposure, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("systemd-analyze security --offline=yes: overall exposure %.1f (at most %.1f)", exposure, maxExposure)
	if exposure > maxExposure {
		t.Fatalf("exposure %.1f > %.1f:\n%s", exposure, maxExposure, out)
	}
}
