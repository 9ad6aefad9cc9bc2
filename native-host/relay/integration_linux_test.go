//go:build linux

package relay

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/nstest"
)

// The test binary doubles as the client side (MPSURF_RELAY_CHILD: a JSON childConfig): the helper (userspace path
// manager) and the relay must live in the client namespace as a process, since both open sockets as they go.
func TestMain(m *testing.M) {
	if cfg := os.Getenv("MPSURF_RELAY_CHILD"); cfg != "" {
		os.Exit(child(cfg))
	}
	os.Exit(m.Run())
}

type childConfig struct {
	Upstream Upstream
	Cell     string
	Dir      string
}

type childReport struct {
	Usage []Usage
	Conns []actuate.ConnRecord
}

// child runs the helper and the relay; it prints the relay's address and credentials, and once stdin closes what
// each origin's tunnels carried and the helper's connection records.
func child(raw string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cell := netip.MustParseAddr(cfg.Cell)
	sock := filepath.Join(cfg.Dir, "a.sock")
	srv, err := actuate.Start(actuate.Config{Socket: sock, StateDir: filepath.Join(cfg.Dir, "state"), AllowUIDs: []uint32{0},
		Backend: actuate.BackendUserspace, CellAddr: cell, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go srv.Serve(ctx)
	h, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	hr := bufio.NewReader(h)
	call := func(req map[string]any) actuate.Response {
		b, _ := json.Marshal(req)
		h.Write(append(b, '\n'))
		line, _ := hr.ReadBytes('\n')
		var r actuate.Response
		json.Unmarshal(line, &r)
		return r
	}
	hello := call(map[string]any{"verb": "hello"})
	calls := make(chan func(), 16)
	go func() { // one request at a time on the helper's socket, the lease renewed in between
		t := time.NewTicker(300 * time.Millisecond)
		for {
			select {
			case f := <-calls:
				f()
			case <-t.C:
				call(map[string]any{"verb": "lease-renew", "session": hello.Session, "lease_ms": 2000})
			}
		}
	}()
	policies := map[string]Policy{"big.test": {Multipath: true}, "small.test": {Multipath: false}}
	r, err := Start(Config{
		Upstream: cfg.Upstream,
		Policy:   func(host string) (Policy, bool) { p, ok := policies[host]; return p, ok },
		Conn: func(ctx context.Context, local, remote netip.AddrPort, p Policy) string {
			done := make(chan string, 1)
			calls <- func() {
				resp := call(map[string]any{"verb": actuate.VerbConn, "session": hello.Session, "lease_ms": 2000,
					"local": local.String(), "remote": remote.String(), "multipath": p.Multipath, "theta1": p.Theta1})
				done <- fmt.Sprintf("%v %s", resp.OK, resp.Error)
			}
			return <-done
		},
		Cellular: func(a netip.Addr) bool { return a == cell },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	u, p := r.Credentials()
	json.NewEncoder(os.Stdout).Encode(map[string]string{"addr": r.Addr().String(), "user": u, "password": p})
	io.Copy(io.Discard, os.Stdin)
	done := make(chan actuate.Response, 1)
	calls <- func() { done <- call(map[string]any{"verb": "status"}) }
	st := <-done
	r.Close()
	var rep childReport
	rep.Usage = r.Usage(10)
	b, _ := json.Marshal(st.Result)
	var res struct {
		Backend struct {
			Connections []actuate.ConnRecord `json:"connections"`
		} `json:"backend"`
	}
	json.Unmarshal(b, &res)
	rep.Conns = res.Backend.Connections
	json.NewEncoder(os.Stdout).Encode(rep)
	stop()
	return 0
}

// TestIntegrationRelaySquid: the relay over two emulated links (veth pairs between a client and a proxy namespace)
// to the real Squid that packaging/proxy/mpsurf-proxy-setup configures, under its drop-in's LD_PRELOAD. Two origins
// behind the one proxy address: the one decided multipath gets a cellular subflow on its tunnel (set-conn-policy)
// and its cellular bytes are counted; the one decided single path gets none. Then Squid is stopped: the next
// tunnel is reset within the budget.
func TestIntegrationRelaySquid(t *testing.T) {
	const originAddr = "10.77.9.9"
	nstest.NeedRoot(t)
	for _, c := range []string{"squid", "htpasswd", "openssl"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed (scripts/setup.sh installs squid, apache2-utils, openssl)", c)
		}
	}
	script, _ := filepath.Abs("../../packaging/proxy/mpsurf-proxy-setup")
	cli, px := nstest.New(t, "mpsrl", "c"), nstest.New(t, "mpsrl", "p")
	nstest.VethPair(t, cli, px, 1) // "WiFi": 10.77.1.1 (client) - 10.77.1.2 (proxy)
	nstest.VethPair(t, cli, px, 2) // "cellular": 10.77.2.1 - 10.77.2.2
	// Source routing as on a phone: what leaves from the cellular address goes out the cellular link.
	nstest.Run(t, "ip", "-n", cli.Name, "rule", "add", "from", "10.77.2.1", "table", "102")
	nstest.Run(t, "ip", "-n", cli.Name, "route", "add", "10.77.1.0/24", "via", "10.77.2.2", "dev", "va2", "table", "102")
	nstest.Run(t, "ip", "-n", px.Name, "route", "add", "10.77.2.1/32", "dev", "vb2")
	// Downlinks shaped to 50 Mbit/s each (tbf): a bare veth moved the whole download over WiFi before the
	// cellular subflow had joined whenever the machine was busy, and the check measured the machine's load.
	for _, dev := range []string{"vb1", "vb2"} {
		nstest.Run(t, "tc", "-n", px.Name, "qdisc", "add", "dev", dev, "root", "tbf", "rate", "50mbit", "burst", "32kb", "latency", "20ms")
	}
	nstest.Run(t, "ip", "-n", px.Name, "mptcp", "limits", "set", "subflows", "2")

	// Squid, set up for real and started as its systemd drop-in would start it.
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	// The origin sits on a private address of the proxy's own network, which the setup shuts to proxy users unless
	// the operator opens it (--allow-dst), as the testbed does for its origins.
	nstest.Run(t, "ip", "-n", px.Name, "addr", "add", originAddr+"/32", "dev", "lo")
	out, err := exec.Command(script, "--root", dir, "--no-install", "--name", "10.77.1.2", "--port", "8443", "--allow-dst", "10.77.9.0/24").CombinedOutput()
	if err != nil {
		t.Fatalf("mpsurf-proxy-setup: %v\n%s", err, out)
	}
	field := func(k string) string {
		m := regexp.MustCompile(`(?m)^\s*` + k + `\s+(\S+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no %s in:\n%s", k, out)
		}
		return string(m[1])
	}
	up := Upstream{Addr: "10.77.1.2:8443", User: field("user"), Password: field("password"), Pin: field("pin")}
	conf := filepath.Join(dir, "etc", "squid", "squid.conf")
	hosts := filepath.Join(dir, "etc", "hosts")
	os.WriteFile(hosts, []byte(originAddr+" big.test small.test\n"), 0o644)
	f, _ := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "hosts_file %s\ndns_nameservers 127.0.0.1\nshutdown_lifetime 1 seconds\n", hosts)
	f.Close()
	dropIn, _ := os.ReadFile(filepath.Join(dir, "etc", "systemd", "system", "squid.service.d", "mpsurf-mptcp.conf"))
	preload := regexp.MustCompile(`(?m)^Environment=(LD_PRELOAD=\S+)$`).FindSubmatch(dropIn)
	if preload == nil {
		t.Fatalf("no LD_PRELOAD in the drop-in:\n%s", dropIn)
	}
	squid := exec.Command("ip", "netns", "exec", px.Name, "env", string(preload[1]), "squid", "-N", "-f", conf)
	squid.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := squid.Start(); err != nil {
		t.Fatal(err)
	}
	squidDone := make(chan error, 1)
	go func() { squidDone <- squid.Wait() }()
	t.Cleanup(func() { syscall.Kill(-squid.Process.Pid, syscall.SIGKILL); <-squidDone })

	// The origin: plain TCP on originAddr:443 in the proxy's namespace; each request is an 8-byte count, answered
	// with that many bytes.
	var origin net.Listener
	if err := px.In(func() (err error) {
		var lc net.ListenConfig
		lc.SetMultipathTCP(false)
		origin, err = lc.Listen(context.Background(), "tcp4", originAddr+":443")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { origin.Close() })
	go func() {
		for {
			c, err := origin.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var req [8]byte
				buf := make([]byte, 64<<10)
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
	deadline := time.Now().Add(20 * time.Second)
	for {
		var c net.Conn
		err := cli.In(func() (err error) { c, err = net.DialTimeout("tcp4", "10.77.1.2:8443", time.Second); return })
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("squid not listening: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The helper and the relay in the client namespace.
	cfg, _ := json.Marshal(childConfig{Upstream: up, Cell: "10.77.2.1", Dir: dir})
	exe, _ := os.Executable()
	cmd := exec.Command("ip", "netns", "exec", cli.Name, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "MPSURF_RELAY_CHILD="+string(cfg))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	dec := json.NewDecoder(stdout)
	var access struct{ Addr, User, Password string }
	if err := dec.Decode(&access); err != nil {
		t.Fatalf("child: %v", err)
	}
	auth := basic(access.User, access.Password)

	// tunnel opens a CONNECT through the relay from the client namespace, as Chromium does.
	tunnel := func(host string) (net.Conn, int, time.Duration) {
		var c net.Conn
		if err := cli.In(func() (err error) { c, err = net.DialTimeout("tcp4", access.Addr, time.Second); return }); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\nProxy-Authorization: %s\r\n\r\n", host, host, auth)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReaderSize(c, 1) // nothing of the tunnel is read ahead
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			c.Close()
			return nil, 0, time.Since(start)
		}
		return c, resp.StatusCode, time.Since(start)
	}
	get := func(c net.Conn, n uint64) {
		var req [8]byte
		binary.BigEndian.PutUint64(req[:], n)
		c.Write(req[:])
		if got, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			t.Fatalf("download: %d of %d: %v", got, n, err)
		}
	}
	const size = 10_000_000 // 0.8 s over both shaped links, 1.6 s over one
	for _, host := range []string{"big.test", "small.test"} {
		c, code, _ := tunnel(host)
		if code != http.StatusOK {
			t.Fatalf("%s: CONNECT answered %d", host, code)
		}
		get(c, 1) // MPTCP's ESTABLISHED needs data; the helper gets the tunnel's policy meanwhile
		time.Sleep(200 * time.Millisecond)
		get(c, size)
		c.Close()
	}
	time.Sleep(300 * time.Millisecond) // the relay counts a tunnel when it ends

	// Squid stopped: a tunnel is reset within the budget, so that the browser goes DIRECT.
	killedNS := time.Now().UnixNano()
	syscall.Kill(-squid.Process.Pid, syscall.SIGKILL)
	<-squidDone
	squidDone <- nil
	if c, code, took := tunnel("big.test"); c != nil || code != 0 || took > DefaultBudget+300*time.Millisecond {
		t.Fatalf("with Squid gone: status %d after %v, want a reset within %v", code, took, DefaultBudget)
	}

	stdin.Close()
	var rep childReport
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("child report: %v", err)
	}
	use := map[string]Usage{}
	for _, u := range rep.Usage {
		use[u.Host] = u
	}
	t.Logf("big.test: %d cellular + %d WiFi bytes; small.test: %d + %d", use["big.test"].CellBytes, use["big.test"].OtherBytes,
		use["small.test"].CellBytes, use["small.test"].OtherBytes)
	if b := use["big.test"]; b.CellBytes < size/4 || b.CellBytes+b.OtherBytes < size {
		t.Errorf("big.test (multipath): %+v: the cellular subflow carried too little", b)
	}
	if s := use["small.test"]; s.CellBytes != 0 || s.OtherBytes < size {
		t.Errorf("small.test (single path): %+v", s)
	}
	perConn := 0
	for _, r := range rep.Conns {
		// The spare connection a tunnel took after Squid was gone got its policy and died before a subflow could
		// join: it carried nothing, and says nothing about whether decisions are carried out.
		if r.Dst == up.Addr && r.PerConn && r.AskedNS < killedNS {
			perConn++
			if r.Multipath != r.Subflow {
				t.Errorf("connection %+v: decision and subflow disagree", r)
			}
		}
	}
	if perConn < 2 {
		t.Errorf("the helper holds %d connections with their own policy, want the 2 tunnels: %+v", perConn, rep.Conns)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "var", "log", "squid", "access.log"))
	if !strings.Contains(string(log), "CONNECT big.test:443 "+up.User) || !strings.Contains(string(log), "CONNECT small.test:443 "+up.User) {
		t.Errorf("Squid did not log both authenticated tunnels:\n%s", log)
	}
}
