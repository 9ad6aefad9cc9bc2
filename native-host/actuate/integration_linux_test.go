//go:build linux

package actuate

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// The test binary doubles as the helper (MPSURF_ACTUATE_HELPER: a JSON Config) and as a client
// (MPSURF_ACTUATE_CLIENT: a socket path) so that tests can run, and kill -9, each as its own process.
func TestMain(m *testing.M) {
	if cfgJSON := os.Getenv("MPSURF_ACTUATE_HELPER"); cfgJSON != "" {
		var cfg struct {
			Config
			Cell string
		}
		if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		cfg.CellAddr, _ = netip.ParseAddr(cfg.Cell)
		srv, err := Start(cfg.Config)
		if err != nil {
			fmt.Fprintln(os.Stderr, "start:", err)
			os.Exit(1)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		if err := srv.Serve(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if addr := os.Getenv("MPSURF_ACTUATE_DIALER"); addr != "" {
		// An MPTCP connection of this process's uid: prints its local address, holds it until stdin closes. With
		// MPSURF_ACTUATE_DIALER_LOCAL it connects from that address:port.
		d := net.Dialer{Timeout: 3 * time.Second}
		d.SetMultipathTCP(true)
		if l := os.Getenv("MPSURF_ACTUATE_DIALER_LOCAL"); l != "" {
			local, err := net.ResolveTCPAddr("tcp4", l)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			d.LocalAddr = local
		}
		c, err := d.Dial("tcp4", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		c.Write([]byte("x"))
		fmt.Println(c.LocalAddr())
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if sock := os.Getenv("MPSURF_ACTUATE_CLIENT"); sock != "" {
		os.Exit(clientMain(sock, os.Getenv("MPSURF_ACTUATE_VERB")))
	}
	if sock := os.Getenv("MPSURF_ACTUATE_REPEAT"); sock != "" {
		os.Exit(repeatMain(sock))
	}
	os.Exit(m.Run())
}

// clientMain says hello, sends one change (or none), prints each response, and renews its lease every
// 100 ms until killed.
func clientMain(sock, verb string) int {
	c, err := dialHelper(sock)
	if err != nil {
		fmt.Println(`{"dial_error":true}`)
		return 1
	}
	h := c.hello()
	out, _ := json.Marshal(h)
	fmt.Println(string(out))
	if !h.OK {
		return 1
	}
	if verb != "" {
		var req map[string]any
		json.Unmarshal([]byte(verb), &req)
		req["session"] = h.Session
		r := c.do(req)
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	}
	for {
		time.Sleep(100 * time.Millisecond)
		c.do(map[string]any{"verb": "lease-renew", "session": h.Session, "lease_ms": 500})
	}
}

// repeatMain sends MPSURF_ACTUATE_LINE for MPSURF_ACTUATE_MS milliseconds and prints one JSON line: how many lines
// it sent, how many were answered ok, the codes of the others, the last answer and, with
// MPSURF_ACTUATE_UNTIL_OK=1 (it then stops at the first ok), the milliseconds until it. Lines go on one
// connection, each after the previous answer; with MPSURF_ACTUATE_RECONNECT=1 each on a new connection (a connect
// flood).
func repeatMain(sock string) int {
	ms, _ := strconv.Atoi(os.Getenv("MPSURF_ACTUATE_MS"))
	line := os.Getenv("MPSURF_ACTUATE_LINE")
	reconnect := os.Getenv("MPSURF_ACTUATE_RECONNECT") == "1"
	untilOK := os.Getenv("MPSURF_ACTUATE_UNTIL_OK") == "1"
	start := time.Now()
	end := start.Add(time.Duration(ms) * time.Millisecond)
	sent, ok := 0, 0
	toOK := int64(-1)
	codes := map[string]int{}
	var last Response
	var c *helperConn
	for time.Now().Before(end) {
		if c == nil || reconnect {
			if c != nil {
				c.c.Close()
			}
			var err error
			if c, err = dialHelper(sock); err != nil {
				codes["dial_error"]++
				c = nil
				time.Sleep(time.Millisecond)
				continue
			}
			c.c.SetDeadline(end.Add(2 * time.Second))
		}
		r := c.raw(line)
		sent++
		last = r
		if r.OK {
			ok++
		}
		codes[r.Code]++
		if r.Code == "io" {
			c.c.Close()
			c = nil
		}
		if untilOK && r.OK {
			toOK = time.Since(start).Milliseconds()
			break
		}
	}
	out, _ := json.Marshal(map[string]any{"sent": sent, "ok": ok, "codes": codes, "last": last, "ms_to_ok": toOK})
	fmt.Println(string(out))
	return 0
}

type helperConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialHelper(sock string) (*helperConn, error) {
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &helperConn{c: c, r: bufio.NewReader(c)}, nil
}

func (h *helperConn) do(req any) Response {
	b, _ := json.Marshal(req)
	h.c.Write(append(b, '\n'))
	line, err := h.r.ReadBytes('\n')
	if err != nil {
		return Response{Code: "io", Error: err.Error()}
	}
	var r Response
	json.Unmarshal(line, &r)
	return r
}

// hello says hello, again while the answer is busy (for up to 3 s), as a host does: a session whose client just
// went away may not have been noticed yet.
func (h *helperConn) hello() Response {
	r := h.do(map[string]any{"verb": "hello"})
	for end := time.Now().Add(3 * time.Second); r.Code == CodeBusy && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		r = h.do(map[string]any{"verb": "hello"})
	}
	return r
}

func (h *helperConn) raw(line string) Response {
	h.c.Write([]byte(line + "\n"))
	l, err := h.r.ReadBytes('\n')
	if err != nil {
		return Response{Code: "io", Error: err.Error()}
	}
	var r Response
	json.Unmarshal(l, &r)
	return r
}

// helper is a helper process running inside a namespace.
type helper struct {
	cmd  *exec.Cmd
	sock string
	dir  string
	ns   *testNS
	cfg  map[string]any
	t    *testing.T
	unit *unitRun // nil: as root with every capability
	errs *syncBuffer
}

// wait waits for the helper process to end and returns how it ended.
func (h *helper) wait() error { return h.cmd.Wait() }

// ended reports whether the helper process has exited (it is a zombie until waited for; ip netns exec, sh and
// setpriv exec it in place, so its pid is the command's).
func (h *helper) ended() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", h.cmd.Process.Pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

func startHelper(t *testing.T, ns *testNS, dir string, extra map[string]any) *helper {
	t.Helper()
	cfg := map[string]any{"Socket": filepath.Join(dir, "a.sock"), "StateDir": filepath.Join(dir, "state"),
		"AllowUIDs": []int{0}, "Backend": BackendSysctl}
	for k, v := range extra {
		cfg[k] = v
	}
	h := &helper{sock: cfg["Socket"].(string), dir: dir, ns: ns, cfg: cfg, t: t}
	h.start()
	return h
}

func (h *helper) start() {
	h.t.Helper()
	if err := h.launch(); err != nil {
		h.t.Fatal(err)
	}
}

// launch starts the helper and waits until it listens; an error says why it did not (its stderr included).
func (h *helper) launch() error {
	t := h.t
	t.Helper()
	b, _ := json.Marshal(h.cfg)
	os.Remove(h.sock)
	args := []string{"netns", "exec", h.ns.Name}
	if h.unit != nil {
		args = append(args, h.unit.command()...)
	} else {
		exe, _ := os.Executable()
		args = append(args, exe)
	}
	h.cmd = exec.Command("ip", args...)
	h.cmd.Env = append(os.Environ(), "MPSURF_ACTUATE_HELPER="+string(b))
	h.errs = &syncBuffer{}
	h.cmd.Stderr = io.MultiWriter(os.Stderr, h.errs)
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := h.cmd
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		if h.ended() {
			err := cmd.Wait()
			return fmt.Errorf("helper exited (%v) before listening: %s", err, h.errs.String())
		}
		if c, err := net.Dial("unix", h.sock); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("helper did not start listening: %s", h.errs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *helper) conn() *helperConn {
	c, err := dialHelper(h.sock)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.c.Close() })
	return c
}

func readMPTCP(ns *testNS, t *testing.T, key string) string {
	t.Helper()
	var v string
	if err := ns.In(func() error {
		b, err := os.ReadFile(filepath.Join(SysctlDir, key))
		v = strings.TrimSpace(string(b))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// waitUntil polls cond every 100 ms (status requests stay under the helper's rate limit) until it holds
// (true) or limit passes (false).
func waitUntil(limit time.Duration, cond func() bool) bool {
	for start := time.Now(); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Since(start) > limit {
			return false
		}
	}
	return true
}

// waitFor polls cond every 10 ms and returns how long it took, or fails after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func TestIntegrationForeignUIDRefused(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	// The foreign uid must reach the socket to be refused by credentials, not by file modes.
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	srv, err := Start(Config{Socket: filepath.Join(dir, "a.sock"), StateDir: filepath.Join(dir, "state"),
		AllowUIDs: []uint32{0}, Backend: BackendDryRun})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	// The foreign uid cannot enter the go build directory: run a copy of the test binary.
	exe, _ := os.Executable()
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(dir, "client")
	if err := os.WriteFile(client, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(client)
	cmd.Env = append(os.Environ(), "MPSURF_ACTUATE_CLIENT="+filepath.Join(dir, "a.sock"))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := cmd.Output()
	var r Response
	if err := json.Unmarshal([]byte(strings.SplitN(string(out), "\n", 2)[0]), &r); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if r.OK || r.Code != CodeRefused || r.Session != "" {
		t.Fatalf("foreign uid got %+v", r)
	}
	audit, _ := os.ReadFile(filepath.Join(dir, "state", "audit.jsonl"))
	if !strings.Contains(string(audit), `"Uid":65534`) || !strings.Contains(string(audit), "peer not allowed") {
		t.Fatalf("audit log lacks the refusal: %s", audit)
	}
}

func TestIntegrationBadInputLeavesKernelAlone(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "bad")
	h := startHelper(t, ns, t.TempDir(), nil)
	c := h.conn()
	before := readMPTCP(ns, t, "enabled")
	hello := c.hello()
	if !hello.OK || len(hello.Session) != sessionLen {
		t.Fatalf("hello: %+v", hello)
	}
	bad := []struct{ line, code string }{
		{`{"verb":"shutdown"}`, CodeUnknownVerb},
		{`{"verb":"set-mptcp-enabled","session":"` + sess + `","lease_ms":1000,"value":0}`, CodeBadSession},
		{`{"verb":"set-mptcp-enabled","session":"nothex","lease_ms":1000,"value":0}`, CodeBadSession},
		{`{"verb":"set-mptcp-enabled","session":"` + hello.Session + `","lease_ms":1000,"value":2}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + hello.Session + `","lease_ms":1000,"addrs":["10.1.1"],"multipath":true}`, CodeBadArgument},
		{`{"verb":"set-endpoint-subflow","session":"` + hello.Session + `","lease_ms":1000,"enabled":true}`, CodeUnsupported},
		{`{{{`, CodeBadRequest},
	}
	for _, b := range bad {
		r := c.raw(b.line)
		if r.OK || r.Code != b.code {
			t.Errorf("%s: %+v, want %s", b.line, r, b.code)
		}
	}
	if got := readMPTCP(ns, t, "enabled"); got != before {
		t.Fatalf("enabled %s after refused requests, was %s", got, before)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "state", UndoFile)); !os.IsNotExist(err) {
		t.Fatal("undo record written though nothing changed")
	}
}

func TestIntegrationSysctlRefusesUnderMptcpize(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "mpz")
	h := startHelper(t, ns, t.TempDir(), nil)
	c := h.conn()
	hello := c.hello()
	r := c.do(map[string]any{"verb": VerbEnabled, "session": hello.Session, "lease_ms": 1000, "value": 0, "mptcpize": true})
	if r.OK || r.Code != CodeRefused || !strings.Contains(r.Error, "ENOPROTOOPT") {
		t.Fatalf("explicit mptcpize: %+v", r)
	}
	c.c.Close() // its session ends with its connection, so that the next client may say hello
	// Detected from the client's environment: a host started by `mptcpize run chromium` inherits LD_PRELOAD.
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "MPSURF_ACTUATE_CLIENT="+h.sock, "LD_PRELOAD=/nonexistent/libmptcpwrap.so.0",
		`MPSURF_ACTUATE_VERB={"verb":"set-mptcp-enabled","lease_ms":1000,"value":0}`)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	sc.Scan()
	sc.Scan()
	var r2 Response
	json.Unmarshal(sc.Bytes(), &r2)
	if r2.OK || r2.Code != CodeRefused {
		t.Fatalf("LD_PRELOAD client: %s", sc.Bytes())
	}
	if readMPTCP(ns, t, "enabled") != "1" {
		t.Fatal("enabled changed")
	}
	// Without mptcpize the same request is carried out (once the other client is gone).
	cmd.Process.Kill()
	cmd.Wait()
	c = h.conn()
	hello = c.hello()
	if r := c.do(map[string]any{"verb": VerbEnabled, "session": hello.Session, "lease_ms": 1000, "value": 0}); !r.OK {
		t.Fatalf("plain client: %+v", r)
	}
	if readMPTCP(ns, t, "enabled") != "0" {
		t.Fatal("enabled not set")
	}
}

func TestIntegrationClientKilledLeaseRestores(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "lease")
	h := startHelper(t, ns, t.TempDir(), nil)
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "MPSURF_ACTUATE_CLIENT="+h.sock,
		`MPSURF_ACTUATE_VERB={"verb":"set-mptcp-enabled","lease_ms":500,"value":0}`)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	sc := bufio.NewScanner(stdout)
	sc.Scan()
	sc.Scan()
	if !strings.Contains(sc.Text(), `"ok":true`) {
		cmd.Process.Kill()
		t.Fatalf("client change: %s", sc.Text())
	}
	// While the client renews, the change holds past its lease.
	time.Sleep(800 * time.Millisecond)
	if readMPTCP(ns, t, "enabled") != "0" {
		cmd.Process.Kill()
		t.Fatal("change undone while the client was renewing")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	took := waitFor(t, 1500*time.Millisecond, "enabled back to 1 after kill -9 of the client (lease 500 ms + 1 s)",
		func() bool { return readMPTCP(ns, t, "enabled") == "1" })
	t.Logf("restored %v after kill -9 of the client (lease 500 ms)", took)
}

func TestIntegrationHelperKilledRestoresAtRestart(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "crash")
	h := startHelper(t, ns, t.TempDir(), nil)
	c := h.conn()
	hello := c.hello()
	if r := c.do(map[string]any{"verb": VerbEnabled, "session": hello.Session, "lease_ms": 60000, "value": 0}); !r.OK {
		t.Fatalf("%+v", r)
	}
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()
	if readMPTCP(ns, t, "enabled") != "0" {
		t.Fatal("precondition: a killed helper cannot restore by itself")
	}
	h.start()
	if got := readMPTCP(ns, t, "enabled"); got != "1" {
		t.Fatalf("enabled %s after restart, want 1", got)
	}
	// The unit's ExecStopPost path: --restore undoes a record a killed helper left.
	c = h.conn()
	hello = c.hello()
	c.do(map[string]any{"verb": VerbEnabled, "session": hello.Session, "lease_ms": 60000, "value": 0})
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()
	var n int
	var err error
	if e := ns.In(func() error { n, err = RestoreOnly(filepath.Join(h.dir, "state"), ""); return nil }); e != nil || err != nil || n != 1 {
		t.Fatalf("restore: %d entries, %v %v", n, e, err)
	}
	if got := readMPTCP(ns, t, "enabled"); got != "1" {
		t.Fatalf("enabled %s after --restore", got)
	}
}

func TestIntegrationEndpointBackend(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "ep")
	h := startHelper(t, ns, t.TempDir(), map[string]any{"Backend": BackendEndpoint, "Cell": "10.66.0.1"})
	pm, err := mptcp.Dial(ns.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	// A configured endpoint without the subflow flag, as a setup might leave it.
	pre := mptcp.Endpoint{ID: 9, Addr: netip.MustParseAddr("10.66.0.1"), Flags: mptcp.FlagSignal}
	if err := pm.AddEndpoint(pre); err != nil {
		t.Fatal(err)
	}
	c := h.conn()
	hello := c.hello()
	if r := c.do(map[string]any{"verb": VerbEndpoint, "session": hello.Session, "lease_ms": 300, "enabled": true}); !r.OK {
		t.Fatalf("%+v", r)
	}
	if ep, err := pm.Endpoint(9); err != nil || ep.Flags != mptcp.FlagSignal|mptcp.FlagSubflow {
		t.Fatalf("endpoint after enable: %+v %v", ep, err)
	}
	waitFor(t, 1300*time.Millisecond, "endpoint flags back after the lease", func() bool {
		ep, err := pm.Endpoint(9)
		return err == nil && ep == pre
	})
}

func TestIntegrationUserspaceBackend(t *testing.T) {
	needRoot(t)
	cli, srv := newNS(t, "uc"), newNS(t, "us")
	vethPair(t, cli, srv, 1)
	vethPair(t, cli, srv, 2)
	run(t, "ip", "-n", srv.Name, "addr", "add", "10.77.1.3/24", "dev", "vb1")
	if readMPTCP(cli, t, "path_manager") != "kernel" {
		t.Fatal("fresh namespace without the in-kernel PM")
	}
	h := startHelper(t, cli, t.TempDir(), map[string]any{"Backend": BackendUserspace, "Cell": "10.77.2.1"})
	if got := readMPTCP(cli, t, "path_manager"); got != "userspace" {
		t.Fatalf("path_manager %s with the helper running", got)
	}
	ln := srv.ListenMPTCP(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	events, err := mptcp.Subscribe(cli.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()

	c := h.conn()
	hello := c.hello()
	if r := c.do(map[string]any{"verb": VerbOrigin, "session": hello.Session, "lease_ms": 5000,
		"addrs": []string{"10.77.1.2"}, "multipath": true}); !r.OK {
		t.Fatalf("%+v", r)
	}
	if r := c.do(map[string]any{"verb": VerbOrigin, "session": hello.Session, "lease_ms": 5000,
		"addrs": []string{"10.77.1.3"}, "multipath": false}); !r.OK {
		t.Fatalf("%+v", r)
	}

	var mu sync.Mutex
	var seen []mptcp.Event
	go func() {
		for {
			ev, err := events.Next()
			if err != nil {
				return
			}
			mu.Lock()
			seen = append(seen, ev)
			mu.Unlock()
		}
	}()
	find := func(match func(mptcp.Event) bool) (ev mptcp.Event, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range seen {
			if match(e) {
				return e, true
			}
		}
		return ev, false
	}
	dial := func(addr string) (net.Conn, uint32) {
		conn := cli.DialMPTCP(t, net.JoinHostPort(addr, fmt.Sprint(port)))
		conn.Write([]byte("x"))
		var created mptcp.Event
		waitFor(t, 3*time.Second, "CREATED of "+addr, func() bool {
			var ok bool
			created, ok = find(func(e mptcp.Event) bool {
				return e.Type == mptcp.EventCreated && e.Src().String() == conn.LocalAddr().String()
			})
			return ok
		})
		return conn, created.Token
	}
	cell := netip.MustParseAddr("10.77.2.1")
	subflows := func(token uint32) int {
		n := 0
		mu.Lock()
		defer mu.Unlock()
		for _, e := range seen {
			if e.Type == mptcp.EventSubEstablished && e.Token == token && e.Saddr == cell {
				n++
			}
		}
		return n
	}
	multi, mt := dial("10.77.1.2")
	defer multi.Close()
	single, st := dial("10.77.1.3")
	defer single.Close()
	waitFor(t, 2*time.Second, "cellular subflow of the multipath connection", func() bool { return subflows(mt) == 1 })
	// The single-path connection was established before the multipath one got its subflow, so this wait
	// covers its decision time too.
	time.Sleep(200 * time.Millisecond)
	if n := subflows(st); n != 0 {
		t.Fatalf("single-path connection got %d cellular subflows", n)
	}
	// SIGTERM: the helper puts the in-kernel PM back.
	h.cmd.Process.Signal(syscall.SIGTERM)
	h.cmd.Wait()
	if got := readMPTCP(cli, t, "path_manager"); got != "kernel" {
		t.Fatalf("path_manager %s after SIGTERM", got)
	}
}

// establishedFrom counts the established TCP sockets (MPTCP subflows included) from address src in ns.
func establishedFrom(ns *testNS, src string) int {
	var n int
	ns.In(func() error {
		out, err := exec.Command("ss", "-tnH", "state", "established", "src", src).Output()
		n = len(strings.Fields(string(out))) / 4
		return err
	})
	return n
}

// dialAs opens an MPTCP connection to addr from a process of uid in ns (bin: this test binary where that uid can
// run it) and returns its local address; the connection lasts as long as the test.
func dialAs(t *testing.T, ns *testNS, uid uint32, bin, addr string, env ...string) string {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns.Name, "setpriv", fmt.Sprintf("--reuid=%d", uid), fmt.Sprintf("--regid=%d", uid), "--clear-groups", bin)
	cmd.Env = append(append(os.Environ(), "MPSURF_ACTUATE_DIALER="+addr), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("dialer as uid %d: %v", uid, err)
	}
	return strings.TrimSpace(line)
}

// thetaServer listens with MPTCP in ns; each request is an 8-byte big-endian count, answered with that many
// bytes.
func thetaServer(t *testing.T, ns *testNS) int {
	t.Helper()
	ln := ns.ListenMPTCP(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				var req [8]byte
				for {
					if _, err := io.ReadFull(c, req[:]); err != nil {
						return
					}
					for n := binary.BigEndian.Uint64(req[:]); n > 0; {
						k := min(n, uint64(len(buf)))
						if _, err := c.Write(buf[:k]); err != nil {
							return
						}
						n -= k
					}
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// linkBytes is a device's rx+tx byte counter in ns, from the thread's /proc/net/dev (sysfs would show the
// namespace it was mounted in).
func linkBytes(t *testing.T, ns *testNS, dev string) uint64 {
	t.Helper()
	var n uint64
	if err := ns.In(func() error {
		b, err := os.ReadFile("/proc/thread-self/net/dev")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			name, rest, ok := strings.Cut(line, ":")
			if !ok || strings.TrimSpace(name) != dev {
				continue
			}
			f := strings.Fields(rest)
			var rx, tx uint64
			if len(f) < 9 {
				return fmt.Errorf("/proc/net/dev: %q", line)
			}
			fmt.Sscan(f[0], &rx)
			fmt.Sscan(f[8], &tx)
			n = rx + tx
			return nil
		}
		return fmt.Errorf("%s not in /proc/net/dev", dev)
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// shapedTwoPaths is a client and a server namespace (tag+"c", tag+"s") joined by a WiFi link (10.77.1.0/24) and a
// cellular one (10.77.2.0/24), the server holding 10.77.1.2 to 10.77.1.last on the WiFi side. The client routes by
// source as a phone does: what leaves from the cellular address goes out the cellular link. Both downlinks are
// shaped to 50 Mbit/s (tbf; netem is not built here): on a bare veth a subflow moves gigabytes a second, so the
// few milliseconds between the helper reading a counter and its action taking effect carried more than a window
// whenever the machine was busy, and checks measured the scheduler's luck. At 50 Mbit/s one 480 KB window is 77 ms.
func shapedTwoPaths(t *testing.T, tag string, last int) (cli, srv *testNS) {
	t.Helper()
	cli, srv = newNS(t, tag+"c"), newNS(t, tag+"s")
	vethPair(t, cli, srv, 1)
	vethPair(t, cli, srv, 2)
	for i := 3; i <= last; i++ {
		run(t, "ip", "-n", srv.Name, "addr", "add", fmt.Sprintf("10.77.1.%d/24", i), "dev", "vb1")
	}
	run(t, "ip", "-n", cli.Name, "rule", "add", "from", "10.77.2.1", "table", "102")
	run(t, "ip", "-n", cli.Name, "route", "add", "10.77.1.0/24", "via", "10.77.2.2", "dev", "va2", "table", "102")
	run(t, "ip", "-n", srv.Name, "route", "add", "10.77.2.1/32", "dev", "vb2")
	for _, dev := range []string{"vb1", "vb2"} {
		run(t, "tc", "-n", srv.Name, "qdisc", "add", "dev", dev, "root", "tbf", "rate", "50mbit", "burst", "32kb", "latency", "20ms")
	}
	return cli, srv
}

// TestIntegrationUserspaceThetas: θ1 holds the cellular subflow back until the connection has received θ1
// bytes; θ2 closes it once it has carried θ2 bytes, and the cellular link's own counter agrees within one
// window; the download completes either way.
func TestIntegrationUserspaceThetas(t *testing.T) {
	needRoot(t)
	cli, srv := shapedTwoPaths(t, "t", 7)
	// The cellular source named by interface (--cell-if), as the systemd unit does.
	h := startHelper(t, cli, t.TempDir(), map[string]any{"Backend": BackendUserspace, "CellIf": "va2"})
	port := thetaServer(t, srv)
	c := h.conn()
	hello := c.hello()
	const theta1, theta2 = 300_000, 2_000_000
	for _, r := range []map[string]any{
		{"addrs": []string{"10.77.1.2"}, "multipath": true, "theta1": theta1},
		{"addrs": []string{"10.77.1.3"}, "multipath": true, "theta2": theta2},
		{"addrs": []string{"10.77.1.4"}, "multipath": true, "theta1": theta1},
		// A page's origin (.5) and, set apart as the peers report comes, its third party (.6), in one group.
		{"addrs": []string{"10.77.1.5"}, "multipath": true, "theta1": theta1, "group": 7},
		{"addrs": []string{"10.77.1.6"}, "multipath": true, "theta1": theta1, "group": 7},
		{"addrs": []string{"10.77.1.7"}, "multipath": true},
	} {
		r["verb"], r["session"], r["lease_ms"] = VerbOrigin, hello.Session, 10000
		if resp := c.do(r); !resp.OK {
			t.Fatalf("%v: %+v", r, resp)
		}
	}
	dial := func(addr string) net.Conn {
		conn := cli.DialMPTCP(t, net.JoinHostPort(addr, fmt.Sprint(port)))
		conn.SetDeadline(time.Now().Add(60 * time.Second))
		return conn
	}
	get := func(conn net.Conn, n uint64) {
		var req [8]byte
		binary.BigEndian.PutUint64(req[:], n)
		if _, err := conn.Write(req[:]); err != nil {
			t.Fatal(err)
		}
		if got, err := io.CopyN(io.Discard, conn, int64(n)); err != nil {
			t.Fatalf("download: %d of %d bytes: %v", got, n, err)
		}
	}
	record := func(conn net.Conn) (r ConnRecord) {
		st := c.do(map[string]any{"verb": "status"})
		b, _ := json.Marshal(st.Result)
		var res struct {
			Backend struct {
				Connections []ConnRecord `json:"connections"`
			} `json:"backend"`
		}
		json.Unmarshal(b, &res)
		for _, rec := range res.Backend.Connections {
			// Src as well: several open connections share the server's address, and status lists them in
			// map order.
			if rec.Dst == conn.RemoteAddr().String() && rec.Src == conn.LocalAddr().String() && rec.Open {
				r = rec
			}
		}
		return r
	}

	// θ1: 100 KB received is under the threshold: no subflow; 400 KB more crosses it.
	a := dial("10.77.1.2")
	get(a, 100_000)
	time.Sleep(300 * time.Millisecond)
	if r := record(a); r.Subflow || !r.Multipath || r.Theta1 != theta1 {
		t.Fatalf("below theta1: %+v", r)
	}
	get(a, 400_000)
	if !waitUntil(2*time.Second, func() bool { return record(a).Subflow }) {
		t.Fatalf("no cellular subflow after theta1 bytes: %+v", record(a))
	}
	if r := record(a); r.RxAtRequest < theta1 {
		t.Fatalf("subflow asked for after %d bytes, theta1 %d", r.RxAtRequest, theta1)
	}

	// crossTogether: 200 KB on x and 50 KB on y stay under θ1, 100 KB more on y cross it on their sum, and both
	// connections get their subflow, x's asked for below θ1 of its own.
	crossTogether := func(what string, x, y net.Conn) {
		t.Helper()
		get(x, 200_000)
		get(y, 50_000)
		time.Sleep(300 * time.Millisecond)
		if r1, r2 := record(x), record(y); r1.Subflow || r2.Subflow {
			t.Fatalf("%s: a subflow below theta1 summed: %+v %+v", what, r1, r2)
		}
		get(y, 100_000)
		if !waitUntil(2*time.Second, func() bool { return record(x).Subflow && record(y).Subflow }) {
			t.Fatalf("%s: no cellular subflows once the connections received theta1 together: %+v %+v", what, record(x), record(y))
		}
		if r := record(x); r.RxAtRequest >= theta1 || r.GroupRxAtRequest < theta1 {
			t.Fatalf("%s: subflow asked for at %d own / %d summed bytes, theta1 %d", what, r.RxAtRequest, r.GroupRxAtRequest, theta1)
		}
	}
	// θ1 counts the connections to one address together, as an HTTP/1.1 page spreads over several.
	crossTogether("one address", dial("10.77.1.4"), dial("10.77.1.4"))
	// A group counts a page's origin (.5) and its third party (.6) together.
	crossTogether("one group", dial("10.77.1.5"), dial("10.77.1.6"))

	// θ2: a 20 MB download over both veths (3.2 s at 2 × 50 Mbit/s); the cellular subflow must stop near 2 MB.
	b := dial("10.77.1.3")
	before := linkBytes(t, cli, "va2")
	get(b, 1) // MPTCP's ESTABLISHED needs data
	if !waitUntil(2*time.Second, func() bool { return record(b).Subflow }) {
		st := c.do(map[string]any{"verb": "status"})
		t.Fatalf("no cellular subflow with theta1 0 on %v: %+v", b.RemoteAddr(), st)
	}
	get(b, 20_000_000)
	r := record(b)
	cell := linkBytes(t, cli, "va2") - before
	t.Logf("theta2 %d: subflow counted %d at the cap (window %d), link va2 carried %d bytes (frames, both ways)",
		theta2, r.CellBytes, r.WindowAtCap, cell)
	if !r.Capped || r.CellBytes < theta2 {
		t.Fatalf("not capped: %+v", r)
	}
	// After the helper closed the subflow at most one window more may cross the link. Frames add 66 bytes per
	// 1448-byte segment in both directions (Ethernet + IP + TCP with timestamps, ACKs included), about 10 %.
	// The window the kernel reports (cwnd + receive window) can reach megabytes, so the bound also takes what the
	// shaped link carries in 100 ms after the cap, whichever is less.
	after := min(r.WindowAtCap, 50_000_000/8/10)
	if limit := uint64(float64(r.CellBytes+after) * 1.10); cell > limit {
		t.Fatalf("cellular link carried %d bytes; %d at the cap + %d after it (+10 %% framing) = %d", cell, r.CellBytes, after, limit)
	}
	if cell < theta2/2 {
		t.Fatalf("cellular link carried only %d bytes: the scheduler never used the subflow, so the cap was not tested", cell)
	}

	// A stall: the cellular link stops delivering data in the middle of a 20 MB
	// download; the helper closes the subflow after stallAfter without a byte while WiFi carries on, and the
	// download completes over WiFi. A second, idle connection's subflow, as silent, goes with it: the path
	// stalled.
	s, idle := dial("10.77.1.7"), dial("10.77.1.7")
	get(s, 1)
	get(idle, 1)
	if !waitUntil(2*time.Second, func() bool { return record(s).Subflow && record(idle).Subflow }) {
		t.Fatalf("no cellular subflows with theta1 0: %+v %+v", record(s), record(idle))
	}
	done := make(chan struct{})
	go func() { defer close(done); get(s, 20_000_000) }()
	time.Sleep(400 * time.Millisecond)
	stallAt := time.Now()
	// A bucket smaller than a data segment drops every one (tbf drops packets over its burst) and lets the
	// 66-byte ACKs through: an outage for data. A trickle instead (8 kbit/s with a 1600-byte bucket) lets a
	// retransmission through every 1.5 s or so, which resets the one-second silence by chance.
	run(t, "tc", "-n", srv.Name, "qdisc", "change", "dev", "vb2", "root", "tbf", "rate", "8kbit", "burst", "200", "latency", "1ms")
	if !waitUntil(5*time.Second, func() bool { return record(s).Stalled }) {
		t.Fatalf("the stalled cellular subflow was not closed: %+v", record(s))
	}
	r = record(s)
	closedAfter := time.Unix(0, r.StalledNS).Sub(stallAt)
	t.Logf("cellular link stalled; the helper closed its subflow %v later", closedAfter)
	if closedAfter < stallAfter/2 {
		t.Fatalf("closed %v after the stall began, before stallAfter could have passed", closedAfter)
	}
	if !waitUntil(time.Second, func() bool { return record(idle).Stalled }) {
		t.Fatalf("the idle connection kept its subflow on the stalled path: %+v", record(idle))
	}
	select {
	case <-done:
		t.Logf("the download completed %v after the stall began", time.Since(stallAt))
	case <-time.After(30 * time.Second):
		t.Fatal("the download did not complete over WiFi after the cellular subflow was closed")
	}
}

// TestIntegrationDisabledMPTCPFailsSockets is the evidence behind the sysctl backend's refusal under mptcpize:
// with net.mptcp.enabled=0, socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP), which mptcpize substitutes for every
// TCP socket, fails with ENOPROTOOPT instead of falling back to TCP, so the wrapped browser loads nothing.
func TestIntegrationDisabledMPTCPFailsSockets(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "off")
	open := func() error {
		return ns.In(func() error {
			fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 262) // IPPROTO_MPTCP
			if err == nil {
				syscall.Close(fd)
			}
			return err
		})
	}
	if err := open(); err != nil {
		t.Fatalf("enabled=1: %v", err)
	}
	ns.Sysctl(t, "net.mptcp.enabled", "0")
	if err := open(); err != syscall.ENOPROTOOPT {
		t.Fatalf("enabled=0: socket() = %v, want ENOPROTOOPT", err)
	}
}

// TestIntegrationConnPolicy: connections to one address (as all of the relay's go to the proxy) get their own
// decisions with set-conn-policy, ahead of the address's; another uid's connection is refused and keeps what it
// had.
func TestIntegrationConnPolicy(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	cli, srv := newNS(t, "pc"), newNS(t, "ps")
	vethPair(t, cli, srv, 1)
	vethPair(t, cli, srv, 2)
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	h := startHelper(t, cli, dir, map[string]any{"Backend": BackendUserspace, "Cell": "10.77.2.1"})
	port := thetaServer(t, srv)
	proxy := net.JoinHostPort("10.77.1.2", fmt.Sprint(port))
	c := h.conn()
	hello := c.hello()
	// The address itself is single path: only a connection's own policy can give it a subflow.
	if r := c.do(map[string]any{"verb": VerbOrigin, "session": hello.Session, "lease_ms": 10000,
		"addrs": []string{"10.77.1.2"}, "multipath": false}); !r.OK {
		t.Fatalf("%+v", r)
	}
	records := func() map[string]ConnRecord {
		st := c.do(map[string]any{"verb": "status"})
		b, _ := json.Marshal(st.Result)
		var res struct {
			Backend struct {
				Connections []ConnRecord `json:"connections"`
			} `json:"backend"`
		}
		json.Unmarshal(b, &res)
		m := map[string]ConnRecord{}
		for _, r := range res.Backend.Connections {
			if r.Open {
				m[r.Dst+" "+fmt.Sprint(r.Token)] = r
			}
		}
		return m
	}
	subflowOf := func(conn net.Conn) (ConnRecord, bool) {
		// The helper's records name the destination; the local port tells two connections to one proxy apart.
		for _, r := range records() {
			if r.Dst == proxy && r.PerConn && r.Subflow {
				return r, true
			}
		}
		return ConnRecord{}, false
	}
	setConn := func(conn net.Conn, multipath bool) Response {
		return c.do(map[string]any{"verb": VerbConn, "session": hello.Session, "lease_ms": 10000,
			"local": conn.LocalAddr().String(), "remote": conn.RemoteAddr().String(), "multipath": multipath})
	}
	a := cli.DialMPTCP(t, proxy)
	b := cli.DialMPTCP(t, proxy)
	for _, conn := range []net.Conn{a, b} {
		conn.Write([]byte{0, 0, 0, 0, 0, 0, 0, 1}) // a one-byte request: MPTCP's ESTABLISHED needs data
		io.ReadFull(conn, make([]byte, 1))
	}
	if r := setConn(a, true); !r.OK {
		t.Fatalf("own connection refused: %+v", r)
	}
	if r := setConn(b, false); !r.OK {
		t.Fatalf("own connection refused: %+v", r)
	}
	if !waitUntil(3*time.Second, func() bool { _, ok := subflowOf(a); return ok }) {
		t.Fatalf("no cellular subflow for the connection decided multipath: %+v", records())
	}
	time.Sleep(300 * time.Millisecond)
	n := 0
	for _, r := range records() {
		if r.Dst == proxy && r.Subflow {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d connections to %s have a cellular subflow, want only the one decided multipath: %+v", n, proxy, records())
	}

	// One page's tunnels in one group pass θ1 on their sum: 200 KB + 50 KB stay under 300 KB, 100 KB more on the
	// second cross it, and both get their subflow.
	const theta1 = 300_000
	bySrc := func(conn net.Conn) ConnRecord {
		for _, r := range records() {
			if r.Src == conn.LocalAddr().String() {
				return r
			}
		}
		return ConnRecord{}
	}
	get := func(conn net.Conn, n uint64) {
		var req [8]byte
		binary.BigEndian.PutUint64(req[:], n)
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := conn.Write(req[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, conn, int64(n)); err != nil {
			t.Fatal(err)
		}
	}
	g1, g2 := cli.DialMPTCP(t, proxy), cli.DialMPTCP(t, proxy)
	get(g1, 1)
	get(g2, 1)
	for _, conn := range []net.Conn{g1, g2} {
		if r := c.do(map[string]any{"verb": VerbConn, "session": hello.Session, "lease_ms": 10000, "local": conn.LocalAddr().String(),
			"remote": conn.RemoteAddr().String(), "multipath": true, "theta1": theta1, "group": 9}); !r.OK {
			t.Fatalf("grouped connection refused: %+v", r)
		}
	}
	get(g1, 200_000)
	get(g2, 50_000)
	time.Sleep(300 * time.Millisecond)
	if r1, r2 := bySrc(g1), bySrc(g2); r1.Subflow || r2.Subflow {
		t.Fatalf("a subflow below theta1 summed over the group's connections: %+v %+v", r1, r2)
	}
	get(g2, 100_000)
	// Past θ1, each joins once its own receive buffer has grown (the receive-buffer gate, userspace_rcvbuf.go),
	// which a transfer of its own brings about.
	get(g1, 1_000_000)
	get(g2, 1_000_000)
	if !waitUntil(3*time.Second, func() bool { return bySrc(g1).Subflow && bySrc(g2).Subflow }) {
		t.Fatalf("no cellular subflows once the group's connections received theta1: %+v %+v", bySrc(g1), bySrc(g2))
	}
	if b, err := os.ReadFile(rmemPath); err == nil {
		rb0, _ := parseRmemDefault(string(b))
		for _, r := range []ConnRecord{bySrc(g1), bySrc(g2)} {
			if r.GatedNS == 0 || r.RcvbufAtRequest <= rb0 || r.AskedNS < r.GatedNS {
				t.Errorf("a connection that had received data joined without the receive-buffer gate (start size %d): %+v", rb0, r)
			}
		}
	}

	// Another uid's connection: refused, and it stays single path.
	exe, _ := os.Executable()
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	dialer := filepath.Join(dir, "dialer")
	if err := os.WriteFile(dialer, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	r := c.do(map[string]any{"verb": VerbConn, "session": hello.Session, "lease_ms": 10000,
		"local": dialAs(t, cli, 65534, dialer, proxy), "remote": proxy, "multipath": true})
	if r.OK || r.Code != CodeRefused || !strings.Contains(r.Error, "uid 65534") {
		t.Fatalf("another uid's connection: %+v", r)
	}
	// A connection that does not exist is refused too.
	if r := c.do(map[string]any{"verb": VerbConn, "session": hello.Session, "lease_ms": 10000,
		"local": "10.77.1.1:1", "remote": proxy, "multipath": true}); r.OK || r.Code != CodeBadArgument {
		t.Fatalf("no such connection: %+v", r)
	}
	audit, _ := os.ReadFile(filepath.Join(dir, "state", "audit.jsonl"))
	if !strings.Contains(string(audit), `"verb":"set-conn-policy"`) || !strings.Contains(string(audit), "belongs to uid 65534") {
		t.Fatalf("audit log lacks the set-conn-policy requests: %s", audit)
	}
}

// TestIntegrationPreferCellular: with prefer_cellular, by set-origin-policy or by set-conn-policy, the helper marks
// a connection's initial (WiFi) subflow backup once its cellular subflow is established. The test reads that back
// from the kernel, not from the helper: the client subflow's local backup flag (sock_diag) and the server's
// SUB_PRIORITY event (the MP_PRIO it received); the server then sends a download on cellular alone. A connection
// without prefer_cellular keeps its WiFi subflow active and gets data on both links. Release gives WiFi its
// priority back.
func TestIntegrationPreferCellular(t *testing.T) {
	needRoot(t)
	// Two equal downlinks: a download needs both to go at full speed, so the scheduler uses WiFi unless it is
	// backup; each subflow's bytes cross its own link, so the link counters tell the paths apart.
	cli, srv := shapedTwoPaths(t, "f", 5)
	// MP_PRIO is reported where it is received: on the server.
	srvEvents, err := mptcp.Subscribe(srv.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer srvEvents.Close()
	var mu sync.Mutex
	var prios []mptcp.Event
	go func() {
		for {
			ev, err := srvEvents.Next()
			if err != nil {
				return
			}
			if ev.Type == mptcp.EventSubPriority {
				mu.Lock()
				prios = append(prios, ev)
				mu.Unlock()
			}
		}
	}()
	// lastPrio is the server's latest SUB_PRIORITY for the subflow whose client end is local, if any.
	lastPrio := func(local netip.AddrPort) (ev mptcp.Event, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range prios {
			if e.Dst() == local {
				ev, ok = e, true
			}
		}
		return ev, ok
	}

	h := startHelper(t, cli, t.TempDir(), map[string]any{"Backend": BackendUserspace, "Cell": "10.77.2.1"})
	port := thetaServer(t, srv)
	c := h.conn()
	hello := c.hello()
	for _, r := range []map[string]any{
		{"addrs": []string{"10.77.1.2"}, "multipath": true, "prefer_cellular": true},
		{"addrs": []string{"10.77.1.3"}, "multipath": true},
		{"addrs": []string{"10.77.1.4"}, "multipath": false}, // only the connection's own policy gives it a subflow
	} {
		r["verb"], r["session"], r["lease_ms"] = VerbOrigin, hello.Session, 10000
		if resp := c.do(r); !resp.OK {
			t.Fatalf("%v: %+v", r, resp)
		}
	}
	get := func(conn net.Conn, n uint64) {
		t.Helper()
		var req [8]byte
		binary.BigEndian.PutUint64(req[:], n)
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := conn.Write(req[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, conn, int64(n)); err != nil {
			t.Fatal(err)
		}
	}
	type ends struct{ local, remote netip.AddrPort }
	dial := func(addr string) (net.Conn, ends) {
		conn := cli.DialMPTCP(t, net.JoinHostPort(addr, fmt.Sprint(port)))
		get(conn, 1) // MPTCP's ESTABLISHED needs data
		return conn, ends{conn.LocalAddr().(*net.TCPAddr).AddrPort(), conn.RemoteAddr().(*net.TCPAddr).AddrPort()}
	}
	status := func() (recs map[netip.AddrPort]ConnRecord, stats usStats) {
		st := c.do(map[string]any{"verb": "status"})
		b, _ := json.Marshal(st.Result)
		var res struct {
			Backend struct {
				Connections []ConnRecord `json:"connections"`
				Stats       usStats      `json:"stats"`
			} `json:"backend"`
		}
		json.Unmarshal(b, &res)
		recs = map[netip.AddrPort]ConnRecord{}
		for _, r := range res.Backend.Connections {
			if r.Open {
				recs[netip.MustParseAddrPort(r.Src)] = r
			}
		}
		return recs, res.Backend.Stats
	}
	pref, prefE := dial("10.77.1.2") // prefer_cellular by its origin's policy
	plain, plainE := dial("10.77.1.3")
	_, ownE := dial("10.77.1.4") // prefer_cellular by its own policy
	if r := c.do(map[string]any{"verb": VerbConn, "session": hello.Session, "lease_ms": 10000, "local": ownE.local.String(),
		"remote": ownE.remote.String(), "multipath": true, "prefer_cellular": true}); !r.OK {
		t.Fatalf("set-conn-policy with prefer_cellular: %+v", r)
	}
	if !waitUntil(3*time.Second, func() bool {
		recs, _ := status()
		return recs[prefE.local].PrimaryBackup && recs[ownE.local].PrimaryBackup && recs[plainE.local].Subflow
	}) {
		recs, stats := status()
		t.Fatalf("no cellular subflows, or WiFi not made backup: %+v, stats %+v", recs, stats)
	}

	// The kernel's view. The server heard MP_PRIO(backup) on the two connections' initial subflows, and the client
	// holds them as backup; the connection without prefer_cellular has neither.
	for _, e := range []ends{prefE, ownE} {
		waitFor(t, 2*time.Second, "the server's SUB_PRIORITY(backup) for "+e.local.String(), func() bool {
			ev, ok := lastPrio(e.local)
			return ok && ev.Backup && ev.Src() == e.remote
		})
		if !cli.SubflowLocalBackup(t, e.local, e.remote) {
			t.Fatalf("initial subflow %s -> %s is not backup in the client's kernel", e.local, e.remote)
		}
	}
	if cli.SubflowLocalBackup(t, plainE.local, plainE.remote) {
		t.Fatal("the connection without prefer_cellular has a backup initial subflow")
	}
	if ev, ok := lastPrio(plainE.local); ok {
		t.Fatalf("the server heard MP_PRIO on the connection without prefer_cellular: %+v", ev)
	}

	// The effect: with WiFi backup the server sends the download on cellular; without, on both links.
	const size = 8_000_000
	wifiShare := func(conn net.Conn) float64 {
		before := linkBytes(t, cli, "va1")
		get(conn, size)
		return float64(linkBytes(t, cli, "va1")-before) / size
	}
	prefShare, plainShare := wifiShare(pref), wifiShare(plain)
	t.Logf("WiFi link carried %.1f %% of %d bytes with prefer_cellular, %.1f %% without", 100*prefShare, size, 100*plainShare)
	if prefShare > 0.05 {
		t.Fatalf("with WiFi backup the WiFi link still carried %.1f %% of the download", 100*prefShare)
	}
	if plainShare < 0.2 {
		t.Fatalf("without prefer_cellular the WiFi link carried only %.1f %%: the comparison says nothing", 100*plainShare)
	}
	if _, stats := status(); stats.PrimaryBackups != 2 || stats.PrimaryBackupErrors != 0 {
		t.Fatalf("stats %+v, want 2 initial subflows made backup and no error", stats)
	}

	// A cellular subflow that goes (here closed at θ2) gives WiFi its priority back: a connection must not be left
	// with a backup subflow alone.
	if r := c.do(map[string]any{"verb": VerbOrigin, "session": hello.Session, "lease_ms": 10000, "addrs": []string{"10.77.1.5"},
		"multipath": true, "prefer_cellular": true, "theta2": 300_000}); !r.OK {
		t.Fatalf("prefer_cellular with θ2: %+v", r)
	}
	capped, cappedE := dial("10.77.1.5")
	waitFor(t, 3*time.Second, "WiFi made backup on the capped connection", func() bool {
		recs, _ := status()
		return recs[cappedE.local].PrimaryBackup
	})
	get(capped, 2_000_000)
	waitFor(t, 2*time.Second, "the server's SUB_PRIORITY(not backup) once θ2 closed the cellular subflow", func() bool {
		ev, ok := lastPrio(cappedE.local)
		return ok && !ev.Backup
	})
	if cli.SubflowLocalBackup(t, cappedE.local, cappedE.remote) {
		t.Fatal("the capped connection's WiFi subflow is still backup with no cellular subflow beside it")
	}
	if recs, _ := status(); !recs[cappedE.local].Capped {
		t.Fatalf("θ2 did not close the cellular subflow: %+v", recs[cappedE.local])
	}

	// Release closes the cellular subflows and gives WiFi its priority back.
	if r := c.do(map[string]any{"verb": VerbRelease, "session": hello.Session}); !r.OK {
		t.Fatalf("release: %+v", r)
	}
	for _, e := range []ends{prefE, ownE} {
		waitFor(t, 2*time.Second, "the server's SUB_PRIORITY(not backup) for "+e.local.String(), func() bool {
			ev, ok := lastPrio(e.local)
			return ok && !ev.Backup
		})
		if cli.SubflowLocalBackup(t, e.local, e.remote) {
			t.Fatalf("initial subflow %s -> %s still backup after release", e.local, e.remote)
		}
	}
	get(pref, 100_000) // the connection goes on over WiFi
}

// TestIntegrationEndpointsIgnoredUnderUserspace is the evidence behind warning about NetworkManager's subflow
// endpoints rather than refusing to start: while the helper selects the userspace path manager, an in-kernel
// endpoint with the subflow flag (what NetworkManager ≥ 1.40 adds per connection) gives a new connection no
// subflow; once the helper stops and the in-kernel path manager is back, the same endpoint does.
func TestIntegrationEndpointsIgnoredUnderUserspace(t *testing.T) {
	needRoot(t)
	cli, srv := newNS(t, "ec"), newNS(t, "es")
	vethPair(t, cli, srv, 1)
	vethPair(t, cli, srv, 2)
	run(t, "ip", "-n", cli.Name, "mptcp", "endpoint", "add", "10.77.2.1", "dev", "va2", "subflow")
	run(t, "ip", "-n", cli.Name, "mptcp", "limits", "set", "subflows", "2")
	run(t, "ip", "-n", srv.Name, "mptcp", "limits", "set", "subflows", "2")
	port := thetaServer(t, srv)
	addr := net.JoinHostPort("10.77.1.2", fmt.Sprint(port))
	cellSubflows := func() int { return establishedFrom(cli, "10.77.2.1") }
	connect := func() net.Conn {
		c := cli.DialMPTCP(t, addr)
		c.Write([]byte{0, 0, 0, 0, 0, 0, 0, 1}) // MPTCP's ESTABLISHED needs data
		io.ReadFull(c, make([]byte, 1))
		return c
	}
	h := startHelper(t, cli, t.TempDir(), map[string]any{"Backend": BackendUserspace, "Cell": "10.77.2.1"})
	a := connect()
	time.Sleep(500 * time.Millisecond)
	if n := cellSubflows(); n != 0 {
		t.Fatalf("under the helper's userspace path manager the endpoint opened %d subflows", n)
	}
	a.Close()
	h.cmd.Process.Signal(syscall.SIGTERM)
	h.cmd.Wait()
	if pm := readMPTCP(cli, t, "path_manager"); pm != "kernel" {
		t.Fatalf("path_manager %s after the helper stopped", pm)
	}
	b := connect()
	defer b.Close()
	waitFor(t, 3*time.Second, "the endpoint's subflow under the in-kernel path manager", func() bool { return cellSubflows() == 1 })
}
