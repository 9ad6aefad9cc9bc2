//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/e2e/topo"

	"github.com/mpsurf/mpsurf/native-host/netns"
)

// The test binary doubles as the testbed command, so the CLI tests run the
// real main() in a child process without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("TESTBED_BE_MAIN") == "1" {
		os.Args = append([]string{"testbed"}, os.Args[1:]...)
		main()
		return
	}
	os.Exit(m.Run())
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and TUN devices")
	}
	if _, err := os.Stat("/proc/sys/net/mptcp/enabled"); err != nil {
		t.Skip("kernel without MPTCP (/proc/sys/net/mptcp missing)")
	}
}

func testPrefix(tag string) string { return "c" + tag + strconv.Itoa(os.Getpid()%100000) }

func testbedCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TESTBED_BE_MAIN=1")
	return cmd
}

// runTestbed runs one short testbed command and returns its stdout.
func runTestbed(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := testbedCmd(args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("testbed %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// startUp starts `testbed up` and waits for its "ready" line.
func startUp(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := testbedCmd(append([]string{"up"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- nil
				io.Copy(io.Discard, stdout)
				return
			}
		}
		ready <- errors.New("stdout closed before ready")
	}()
	select {
	case err := <-ready:
		if err != nil {
			cmd.Wait()
			t.Fatalf("testbed up: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("testbed up not ready after 30 s\n%s", stderr.String())
	}
	return cmd
}

func namespacesLeft(prefix string) []string {
	ents, _ := os.ReadDir(netns.Dir)
	var left []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+"-") {
			left = append(left, e.Name())
		}
	}
	return left
}

func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		t.Fatalf("testbed did not exit within %v", d)
		return nil
	}
}

func TestIntegrationCLI(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("cli")
	pf := "--prefix=" + prefix
	t.Cleanup(func() { testbedCmd("down", pf).Run() })
	timeline := t.TempDir()
	up := startUp(t, pf, "--profile=baseline", "--mode=mp", "--timeline="+timeline)

	var info struct {
		Namespaces topo.Names `json:"namespaces"`
		Running    bool       `json:"running"`
		Pid        int        `json:"pid"`
		Mode       string     `json:"mode"`
		Profile    string     `json:"profile"`
		Server     struct {
			Addr string `json:"addr"`
		} `json:"server"`
		Env map[string]string `json:"env"`
	}
	if err := json.Unmarshal([]byte(runTestbed(t, "info", "--json", pf)), &info); err != nil {
		t.Fatal(err)
	}
	if !info.Running || info.Pid != up.Process.Pid || info.Mode != "mp" || info.Profile != "baseline" ||
		info.Server.Addr != topo.ServerAddr || info.Namespaces.Client != prefix+"-client" || info.Env["MPS_TIMELINE_DIR"] != timeline {
		t.Errorf("info: %+v", info)
	}

	runTestbed(t, "mode", "sp-cell", pf)
	if m, err := topo.CurrentMode(prefix); err != nil || m != topo.SPCell {
		t.Errorf("after `mode sp-cell`: %v, %v", m, err)
	}
	if err := testbedCmd("mode", "bogus", pf).Run(); err == nil {
		t.Error("`mode bogus` succeeded")
	}

	// Traffic over wwan0: a refused connection is one packet each way.
	d := net.Dialer{Timeout: 3 * time.Second}
	if _, err := topo.Dial(prefix+"-client", d, "tcp4", topo.ServerAddr+":9"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("probe: %v", err)
	}
	var counters map[string]topo.IfCounters
	if err := json.Unmarshal([]byte(runTestbed(t, "counters", "--json", pf)), &counters); err != nil {
		t.Fatal(err)
	}
	if c := counters["wwan0"]; c.TxPackets != 1 || c.RxPackets != 1 || counters["wlan0"].TxPackets != 0 {
		t.Errorf("counters after one refused connect over wwan0: %+v", counters)
	}
	runTestbed(t, "flush", pf)
	b, err := os.ReadFile(filepath.Join(timeline, "wwan0.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], ",u,60") || !strings.HasSuffix(lines[1], ",d,40") {
		t.Errorf("wwan0 timeline after SYN (60 bytes) and RST (40 bytes):\n%s", b)
	}

	var stats map[string]struct {
		Up struct {
			OutPackets uint64 `json:"out_packets"`
		} `json:"up"`
	}
	if err := json.Unmarshal([]byte(runTestbed(t, "stats", pf)), &stats); err != nil {
		t.Fatal(err)
	}
	if stats["wwan0"].Up.OutPackets != 1 {
		t.Errorf("stats: %+v", stats)
	}
	runTestbed(t, "set-profile", "3g", pf)
	if err := json.Unmarshal([]byte(runTestbed(t, "info", "--json", pf)), &info); err != nil || info.Profile != "3g" {
		t.Errorf("after set-profile 3g: %+v %v", info, err)
	}
	if err := testbedCmd("set-profile", "nope", pf).Run(); err == nil {
		t.Error("set-profile nope succeeded")
	}

	// A killed instance leaves namespaces; the next `up` cleans them.
	up.Process.Signal(syscall.SIGKILL)
	up.Wait()
	if len(namespacesLeft(prefix)) != 3 {
		t.Fatalf("after kill -9: namespaces %v", namespacesLeft(prefix))
	}
	up = startUp(t, pf, "--profile=baseline")
	up.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, up, 15*time.Second); err != nil {
		t.Errorf("up after SIGTERM: %v", err)
	}
	if left := namespacesLeft(prefix); len(left) != 0 {
		t.Errorf("after SIGTERM: namespaces %v", left)
	}

	// down stops a running instance too, and is idempotent.
	up = startUp(t, pf, "--profile=baseline")
	runTestbed(t, "down", pf)
	if err := waitExit(t, up, 15*time.Second); err != nil {
		t.Errorf("up after down: %v", err)
	}
	runTestbed(t, "down", pf)
	if left := namespacesLeft(prefix); len(left) != 0 {
		t.Errorf("after down: namespaces %v", left)
	}
}

func TestIntegrationRun(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("run")
	pf := "--prefix=" + prefix
	t.Cleanup(func() { testbedCmd("down", pf).Run() })
	script := `test "$MPS_CLIENT_NS" = "` + prefix + `-client" && test "$MPS_SERVER_ADDR" = "10.200.3.2" &&
		test -e "/run/netns/$MPS_SERVER_NS" && "$MPS_TESTBED" mode mp --prefix "$MPS_PREFIX" && exit 3`
	cmd := testbedCmd("run", pf, "--profile=baseline", "--", "sh", "-c", script)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("run: %v (want exit status 3)\n%s", err, out)
	}
	if left := namespacesLeft(prefix); len(left) != 0 {
		t.Errorf("after run: namespaces %v", left)
	}
	// Bad usage: exit status 2, nothing created.
	err = testbedCmd("run", pf, "--profile=baseline").Run()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("run without a command: %v, want exit status 2", err)
	}
	err = testbedCmd("up", pf, "--profile=nope").Run()
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("up with an unknown profile: %v, want exit status 1", err)
	}
	if left := namespacesLeft(prefix); len(left) != 0 {
		t.Errorf("after failed commands: namespaces %v", left)
	}
}
