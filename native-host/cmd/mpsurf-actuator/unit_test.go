package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The systemd unit of the privileged helper (packaging/systemd) keeps CAP_NET_ADMIN only, never hides the
// network namespace or /proc/sys/net/mptcp, restores on every stop, and runs the actuator with flags it knows.
// With systemd-analyze present, the installed form (placeholders filled, as scripts/setup.sh does) is verified.
func TestSystemdUnit(t *testing.T) {
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
	for k, want := range map[string]string{
		"CapabilityBoundingSet": "CAP_NET_ADMIN", "AmbientCapabilities": "CAP_NET_ADMIN", "NoNewPrivileges": "yes",
		"RuntimeDirectoryPreserve": "yes", "ReadWritePaths": "/proc/sys/net/mptcp /run/mpsurf",
	} {
		if got := strings.Join(keys[k], "|"); got != want {
			t.Errorf("%s=%q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"PrivateNetwork", "ProtectKernelTunables", "NetworkNamespacePath", "PrivateUsers"} {
		if _, ok := keys[k]; ok {
			t.Errorf("%s would hide the host's network namespace or /proc/sys/net/mptcp", k)
		}
	}
	if got := strings.Join(keys["ExecStopPost"], "|"); !strings.Contains(got, "/usr/local/bin/mpsurf-actuator --restore") {
		t.Errorf("ExecStopPost=%q does not restore", got)
	}
	start := strings.Join(keys["ExecStart"], "|")
	for _, f := range regexp.MustCompile(`--[a-z-]+`).FindAllString(start, -1) {
		if !strings.Contains(usage, f) {
			t.Errorf("ExecStart passes %s, which the actuator does not take", f)
		}
	}
	for _, placeholder := range []string{"ALLOWED_UID", "CELL_IF"} {
		if !strings.Contains(start, placeholder) {
			t.Errorf("ExecStart lacks the %s that scripts/setup.sh fills in", placeholder)
		}
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the unit's syntax is not verified here")
	}
	// verify checks that ExecStart's binary exists: point it at this package's own build of the helper.
	dir := t.TempDir()
	bin := filepath.Join(dir, "mpsurf-actuator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	unit := strings.NewReplacer("ALLOWED_UID", "1000", "CELL_IF", "wwan0", "/usr/local/bin/mpsurf-actuator", bin).Replace(string(b))
	path := filepath.Join(dir, "mpsurf-actuator.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
