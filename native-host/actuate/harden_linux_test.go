//go:build linux

package actuate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/nstest"
)

// The helper as packaging/systemd/mpsurf-actuator.service runs it, and what a local user other than the allowed
// one, or the allowed user's other processes, can make it do.

// unitRun runs the helper as the unit does: as a uid of its own (User=: no root file access), with CAP_NET_ADMIN
// its only capability (CapabilityBoundingSet=, AmbientCapabilities=), no new privileges, and, with tunables,
// /proc/sys read-only except /proc/sys/net/mptcp (ProtectKernelTunables=yes, ReadWritePaths=). ip netns exec gives
// it a mount namespace of its own, as PrivateMounts= does.
type unitRun struct {
	uid      uint32
	bin      string // the test binary, where that uid can run it
	tunables bool
	nofile   int // > 0: RLIMIT_NOFILE, soft and hard
}

func (u *unitRun) command() []string {
	script := fmt.Sprintf(`exec setpriv --reuid=%d --regid=%d --clear-groups --inh-caps=-all,+net_admin `+
		`--ambient-caps=-all,+net_admin --bounding-set=-all,+net_admin --no-new-privs "$0"`, u.uid, u.uid)
	if u.tunables {
		script = `mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && ` +
			`mount --bind /proc/sys/net/mptcp /proc/sys/net/mptcp && mount -o remount,bind,rw /proc/sys/net/mptcp && ` + script
	}
	if u.nofile > 0 {
		script = fmt.Sprintf("ulimit -n %d && %s", u.nofile, script)
	}
	return []string{"sh", "-c", script, u.bin}
}

// unitHelper prepares (does not start) a helper run as the unit runs it, with its socket and state in a directory
// owned by its uid, as the unit's RuntimeDirectory=. The test process (root) is the allowed client.
func unitHelper(t *testing.T, ns *testNS, extra map[string]any) *helper {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	uid := nstest.ThrowawayUID(t)
	dir := t.TempDir()
	bin := nstest.Expose(t, dir)
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(run, int(uid), int(uid)); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"Socket": filepath.Join(run, "a.sock"), "StateDir": run, "AllowUIDs": []int{0}, "Backend": BackendSysctl}
	for k, v := range extra {
		cfg[k] = v
	}
	return &helper{sock: cfg["Socket"].(string), dir: dir, ns: ns, cfg: cfg, t: t, unit: &unitRun{uid: uid, bin: bin, tunables: true}}
}

// stateDir is where the helper keeps its undo record and audit log.
func (h *helper) stateDir() string { return h.cfg["StateDir"].(string) }

// syncBuffer collects a process's stderr while tests read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// readProcSys reads a sysctl file (a path under /proc/sys) as ns sees it.
func readProcSys(t *testing.T, ns *testNS, name string) string {
	t.Helper()
	var v string
	if err := ns.In(func() error {
		b, err := os.ReadFile(filepath.Join("/proc/sys", name))
		v = strings.TrimSpace(string(b))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// The unit's capability set is enough: the userspace backend selects its path manager, takes a decision, answers
// status and restores the namespace on SIGTERM, with CAP_NET_ADMIN only and /proc/sys read-only but for MPTCP.
func TestIntegrationUnitRuns(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "unit")
	h := unitHelper(t, ns, map[string]any{"Backend": BackendUserspace, "Cell": "10.77.2.1"})
	h.start()
	if got := readMPTCP(ns, t, "path_manager"); got != "userspace" {
		t.Fatalf("path_manager %s under the unit's capabilities", got)
	}
	c := h.conn()
	hello := c.hello()
	if r := c.do(map[string]any{"verb": VerbOrigin, "session": hello.Session, "lease_ms": 5000,
		"addrs": []string{"192.0.2.7"}, "multipath": true}); !r.OK {
		t.Fatalf("set-origin-policy under the unit: %+v", r)
	}
	r := c.do(map[string]any{"verb": VerbStatus})
	if !r.OK {
		t.Fatalf("status: %+v", r)
	}
	// The receive-buffer gate reads tcp_rmem through the unit's read-only /proc/sys.
	rb0, _ := parseRmemDefault(readProcSys(t, ns, "net/ipv4/tcp_rmem"))
	res, _ := r.Result.(map[string]any)
	if b, _ := res["backend"].(map[string]any); b["rcvbuf_gate"] != float64(rb0) {
		t.Fatalf("rcvbuf_gate %v under the unit, want tcp_rmem's default %d", b["rcvbuf_gate"], rb0)
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	if err := h.wait(); err != nil {
		t.Fatalf("helper under the unit ended with %v: %s", err, h.errs.String())
	}
	if got := readMPTCP(ns, t, "path_manager"); got != "kernel" {
		t.Fatalf("path_manager %s after SIGTERM", got)
	}
	if _, err := os.Stat(filepath.Join(h.stateDir(), UndoFile)); !os.IsNotExist(err) {
		t.Fatalf("undo record left: %v", err)
	}
}

// Point 7 of issue 12: an undo record is validated before anything in it is carried out. With CAP_NET_ADMIN the
// helper may write every net.* sysctl, so a forged record naming ../ipv4/ip_forward used to turn IP forwarding on
// at the helper's next start. Run here without the read-only /proc/sys, so that the record check alone is tested.
func TestIntegrationUnitForgedUndoRecord(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "forge")
	h := unitHelper(t, ns, nil)
	h.unit.tunables = false
	if got := readProcSys(t, ns, "net/ipv4/ip_forward"); got != "0" {
		t.Fatalf("precondition: ip_forward %s in a fresh namespace", got)
	}
	forged := `{"version":1,"pid":1,"entries":[{"scope":"lease","kind":"sysctl","key":"../ipv4/ip_forward","prior":"1"}]}`
	path := filepath.Join(h.stateDir(), UndoFile)
	if err := os.WriteFile(path, []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chown(path, int(h.unit.uid), int(h.unit.uid))
	err := h.launch()
	if got := readProcSys(t, ns, "net/ipv4/ip_forward"); got != "0" {
		t.Fatalf("the forged record made the helper set net.ipv4.ip_forward=%s", got)
	}
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "not one the helper changes") {
		t.Fatalf("helper with a forged undo record: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != forged {
		t.Fatalf("the refused record was changed: %s", b)
	}
}

// Point 7: the state directory must be the helper's own and writable by no one else, and no file in it is
// opened through a symlink; otherwise the helper does not start, and writes nothing.
func TestIntegrationStateDirChecked(t *testing.T) {
	needRoot(t)
	other := nstest.ThrowawayUID(t)
	canary := filepath.Join(t.TempDir(), "canary")
	os.WriteFile(canary, []byte("untouched"), 0o644)
	for _, c := range []struct {
		name  string
		setup func(state string)
		want  string
	}{
		{"owned by another uid", func(state string) { os.Mkdir(state, 0o700); os.Chown(state, int(other), int(other)) }, "owned by uid"},
		{"writable by others", func(state string) { os.Mkdir(state, 0o700); os.Chmod(state, 0o777) }, "writable by group or others"},
		{"a symlink", func(state string) { os.Symlink(filepath.Dir(canary), state) }, "not a directory"},
		{"audit log a symlink", func(state string) { os.Mkdir(state, 0o700); os.Symlink(canary, filepath.Join(state, "audit.jsonl")) }, "is a symlink: refusing"},
		{"undo record a symlink", func(state string) { os.Mkdir(state, 0o700); os.Symlink(canary, filepath.Join(state, UndoFile)) }, "is a symlink: refusing"},
		{"undo record of another uid", func(state string) {
			os.Mkdir(state, 0o700)
			p := filepath.Join(state, UndoFile)
			os.WriteFile(p, []byte(`{"version":1,"pid":1,"entries":[]}`), 0o600)
			os.Chown(p, int(other), int(other))
		}, "owned by uid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			c.setup(state)
			srv, err := Start(Config{Socket: filepath.Join(dir, "a.sock"), StateDir: state, AllowUIDs: []uint32{0},
				Backend: BackendDryRun, SysctlDir: t.TempDir()})
			if err == nil {
				srv.ln.Close()
				srv.shutdown()
				t.Fatalf("started with the state directory %s", c.name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
			if b, _ := os.ReadFile(canary); string(b) != "untouched" {
				t.Fatalf("the helper wrote through a symlink: %q", b)
			}
		})
	}
	// A stale file at the socket's path that is not a socket is not removed.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.sock"), []byte("x"), 0o600)
	if _, err := Start(Config{Socket: filepath.Join(dir, "a.sock"), StateDir: filepath.Join(dir, "state"), AllowUIDs: []uint32{0},
		Backend: BackendDryRun}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("a regular file at the socket path: %v", err)
	}
}

// Point 6: an accept error (here EMFILE: more connections than file descriptors) used to end the helper with
// exit status 0, which Restart=on-failure left down. Now it backs off and accepts again, and a helper that must
// stop exits non-zero.
func TestIntegrationAcceptErrorKeepsServing(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "emfile")
	h := unitHelper(t, ns, map[string]any{"Backend": BackendDryRun})
	h.unit.nofile = 16
	h.start()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Each accepted connection takes a descriptor; well before 40 the helper runs out.
	for i := 0; i < 40; i++ {
		c, err := net.Dial("unix", h.sock)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	time.Sleep(500 * time.Millisecond)
	if h.ended() {
		t.Fatalf("the helper stopped on an accept error (%v): %s", h.wait(), h.errs.String())
	}
	if !strings.Contains(h.errs.String(), "too many open files") {
		t.Fatalf("no accept error happened (the test did not reach the descriptor limit): %s", h.errs.String())
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	var hello Response
	if !waitUntil(3*time.Second, func() bool {
		c, err := dialHelper(h.sock)
		if err != nil {
			return false
		}
		defer c.c.Close()
		hello = c.hello()
		return hello.OK
	}) {
		t.Fatalf("no hello answered after the descriptors came back: %+v", hello)
	}
}

// A listener lost otherwise than by the helper's own stop ends Serve with an error, so that the process exits
// non-zero and the unit's Restart= brings it back (it used to return nil: exit status 0).
func TestServeListenerLost(t *testing.T) {
	dir := t.TempDir()
	srv, err := Start(Config{Socket: filepath.Join(dir, "a.sock"), StateDir: filepath.Join(dir, "state"),
		AllowUIDs: []uint32{uint32(os.Getuid())}, Backend: BackendDryRun, SysctlDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	srv.ln.Close()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "accept") {
			t.Fatalf("Serve after losing its listener: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// Point 4: under the unit the helper cannot read another uid's /proc/PID/environ, so it cannot tell whether the
// caller runs under mptcpize; it used to take that for "no" and set net.mptcp.enabled=0, which makes every
// socket of an mptcpize'd browser fail. It now refuses unless it can tell.
func TestIntegrationUnitMptcpizeFailsClosed(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "mpzu")
	h := unitHelper(t, ns, nil)
	h.start()
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "MPSURF_ACTUATE_CLIENT="+h.sock, "LD_PRELOAD=/nonexistent/libmptcpwrap.so.0",
		`MPSURF_ACTUATE_VERB={"verb":"set-mptcp-enabled","lease_ms":1000,"value":0}`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string, 2)
	go func() {
		b := make([]byte, 4096)
		var acc string
		for len(lines) < 2 {
			n, err := out.Read(b)
			acc += string(b[:n])
			for {
				i := strings.IndexByte(acc, '\n')
				if i < 0 {
					break
				}
				lines <- acc[:i]
				acc = acc[i+1:]
			}
			if err != nil {
				return
			}
		}
	}()
	<-lines
	var r Response
	select {
	case l := <-lines:
		json.Unmarshal([]byte(l), &r)
	case <-time.After(5 * time.Second):
		t.Fatal("no answer to set-mptcp-enabled")
	}
	if got := readMPTCP(ns, t, "enabled"); got != "1" {
		t.Fatalf("net.mptcp.enabled=%s for a caller under mptcpize whose environment the helper could not read", got)
	}
	if r.OK || r.Code != CodeRefused || !strings.Contains(r.Error, "cannot tell") {
		t.Fatalf("response %+v", r)
	}
	// Enabling (value 1) breaks nothing and is still carried out (the client's connection ends, and its session).
	cmd.Process.Kill()
	cmd.Wait()
	c := h.conn()
	hello := c.hello()
	if hello.Session == "" {
		t.Fatalf("hello: %+v", hello)
	}
	if r := c.do(map[string]any{"verb": VerbEnabled, "session": hello.Session, "lease_ms": 1000, "value": 1}); !r.OK {
		t.Fatalf("value 1: %+v", r)
	}
}
