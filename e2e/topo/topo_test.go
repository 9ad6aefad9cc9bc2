//go:build linux

package topo

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/e2e/profiles"

	"github.com/mpsurf/mpsurf/native-host/netns"
)

func TestNamesAndModes(t *testing.T) {
	n := NamesFor(DefaultPrefix)
	if n.Client != ClientNS || n.Router != RouterNS || n.Server != ServerNS {
		t.Errorf("NamesFor(%q) = %+v", DefaultPrefix, n)
	}
	for _, p := range []string{"", "MPS", "mps-x", strings.Repeat("a", 21)} {
		if ValidPrefix(p) == nil {
			t.Errorf("ValidPrefix(%q) accepted", p)
		}
	}
	for _, m := range Modes {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("wifi"); err == nil {
		t.Error("ParseMode(wifi) accepted")
	}
}

// needRoot skips integration tests where they cannot run.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and TUN devices")
	}
	if _, err := os.Stat("/proc/sys/net/mptcp/enabled"); err != nil {
		t.Skip("kernel without MPTCP (/proc/sys/net/mptcp missing)")
	}
}

// testPrefix gives each test process its own namespaces, so tests can run
// beside a live testbed and beside each other.
func testPrefix(tag string) string {
	return "t" + tag + strconv.Itoa(os.Getpid()%100000)
}

func up(t *testing.T, prefix string, mode Mode) *Testbed {
	t.Helper()
	p, err := profiles.Load("baseline")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Up(Options{Prefix: prefix, Profile: p, Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}

func rootLinks(t *testing.T) []string {
	t.Helper()
	out, err := ip("-o", "link", "show")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 {
			names = append(names, strings.TrimSuffix(f[1], ":"))
		}
	}
	slices.Sort(names)
	return names
}

var ourLinks = []string{WiFiIf, CellIf, ServerIf, RouterWiFiIf, RouterCellIf, RouterServerIf}

func mustIP(t *testing.T, args ...string) string {
	t.Helper()
	out, err := ip(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestIntegrationUpDown(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("ud")
	linksBefore := rootLinks(t)
	goroutinesBefore := runtime.NumGoroutine()
	tb := up(t, prefix, MP)
	n := tb.Names()

	for ns, want := range map[string][]string{
		n.Client: {WiFiIf + ":", CellIf + ":"},
		n.Router: {RouterWiFiIf + ":", RouterCellIf + ":", RouterServerIf + "@"},
		n.Server: {ServerIf + "@"},
	} {
		out := mustIP(t, "-n", ns, "-o", "link", "show")
		for _, w := range want {
			if !strings.Contains(out, " "+w) {
				t.Errorf("%s has no link %s:\n%s", ns, w, out)
			}
		}
	}
	if out := mustIP(t, "-n", n.Client, "rule", "show"); !strings.Contains(out, "from "+WiFiAddr+" lookup 101") || !strings.Contains(out, "from "+CellAddr+" lookup 102") {
		t.Errorf("client rules:\n%s", out)
	}
	for _, ns := range []string{n.Client, n.Server} {
		if out := mustIP(t, "-n", ns, "mptcp", "limits", "show"); !strings.Contains(out, "add_addr_accepted 2 subflows 2") {
			t.Errorf("%s mptcp limits: %s", ns, out)
		}
		if v, err := readSysctl(ns, "net.mptcp.enabled"); err != nil || v != "1" {
			t.Errorf("%s net.mptcp.enabled = %q, %v", ns, v, err)
		}
	}
	if v, err := readSysctl(n.Router, "net.ipv4.ip_forward"); err != nil || v != "1" {
		t.Errorf("router ip_forward = %q, %v", v, err)
	}
	if m, err := CurrentMode(prefix); err != nil || m != MP {
		t.Errorf("CurrentMode = %v, %v; want mp", m, err)
	}
	if r, pid := Running(prefix); !r || pid != os.Getpid() {
		t.Errorf("Running = %v, %d; want true, %d", r, pid, os.Getpid())
	}
	// A second instance with the same prefix must refuse, not tear down
	// the first.
	p, _ := profiles.Load("baseline")
	if _, err := Up(Options{Prefix: prefix, Profile: p}); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Up: %v", err)
	}
	// The client reaches the server from both addresses. Nothing listens
	// on port 9, so "connection refused" proves the round trip.
	for _, src := range []string{WiFiAddr, CellAddr} {
		d := net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		_, err := Dial(n.Client, d, "tcp4", ServerAddr+":9")
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("connect from %s to the server: %v, want connection refused", src, err)
		}
	}
	// A process left inside a namespace is ended by teardown.
	sleeper := exec.Command("ip", "netns", "exec", n.Server, "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	var inodes []uint64
	for _, ns := range n.all() {
		ino, err := NetnsInode(ns)
		if err != nil {
			t.Fatal(err)
		}
		inodes = append(inodes, ino)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(PidsInNetns(inodes[2])) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}

	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Error("process in the server namespace survived teardown")
		sleeper.Process.Kill()
	}
	if left, _ := listNetns(prefix); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
	for _, ino := range inodes {
		if pids := PidsInNetns(ino); len(pids) != 0 {
			t.Errorf("processes still in netns %d: %v", ino, pids)
		}
	}
	// Other tests may add links to the root namespace meanwhile; none of
	// ours may be there.
	for _, l := range rootLinks(t) {
		base, _, _ := strings.Cut(l, "@")
		if slices.Contains(ourLinks, base) && !slices.Contains(linksBefore, l) {
			t.Errorf("link %s appeared in the root namespace", l)
		}
	}
	if r, _ := Running(prefix); r {
		t.Error("lock still held after Close")
	}
	// Emulator goroutines end with Close (a few may still be unwinding).
	deadline = time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > goroutinesBefore+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > goroutinesBefore+2 {
		t.Errorf("%d goroutines after Close, %d before", g, goroutinesBefore)
	}
	if err := Down(prefix, time.Second); err != nil {
		t.Errorf("Down after Close: %v", err)
	}
}

func TestIntegrationUpRemovesLeftovers(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("lo")
	n := NamesFor(prefix)
	// What a killed instance leaves: its namespaces (TUN devices die with
	// the process) and maybe a stray one.
	for _, ns := range []string{n.Client, n.Router, prefix + "-stray"} {
		mustIP(t, "netns", "add", ns)
	}
	mustIP(t, "-n", n.Router, "link", "add", RouterServerIf, "type", "veth", "peer", "name", "x0")
	tb := up(t, prefix, SPWiFi)
	if _, err := os.Stat(filepath.Join(netns.Dir, prefix+"-stray")); err == nil {
		t.Error("stray namespace not removed")
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := listNetns(prefix); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
}

func TestIntegrationUpFailureCleansUp(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("uf")
	p, _ := profiles.Load("baseline")
	// An unknown congestion control fails after the namespaces exist.
	_, err := Up(Options{Prefix: prefix, Profile: p, CongestionControl: "nonexistent"})
	if err == nil || !strings.Contains(err.Error(), "tcp_congestion_control") {
		t.Fatalf("Up with a bad congestion control: %v", err)
	}
	if left, _ := listNetns(prefix); len(left) != 0 {
		t.Errorf("namespaces left after a failed Up: %v", left)
	}
	if r, _ := Running(prefix); r {
		t.Error("lock held after a failed Up")
	}
}

func TestIntegrationDownIsIdempotent(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("dn")
	for i := 0; i < 2; i++ {
		if err := Down(prefix, time.Second); err != nil {
			t.Fatalf("Down #%d with nothing up: %v", i+1, err)
		}
	}
}

// transfer downloads size bytes over MPTCP from a server in the server
// namespace and returns how many bytes each client interface received.
func transfer(t *testing.T, tb *Testbed, size int) (wifi, cell uint64, mptcp bool) {
	t.Helper()
	n := tb.Names()
	var lc net.ListenConfig
	lc.SetMultipathTCP(true)
	ln, err := Listen(n.Server, lc, "tcp4", ServerAddr+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 32<<10)
		for sent := 0; sent < size; sent += len(buf) {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	before, err := Counters(n.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	d.SetMultipathTCP(true)
	c, err := Dial(n.Client, d, "tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		mptcp, _ = tc.MultipathTCP()
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	got, err := io.Copy(io.Discard, c)
	if err != nil || got < int64(size) {
		t.Fatalf("received %d of %d bytes: %v", got, size, err)
	}
	after, err := Counters(n.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	return after[WiFiIf].RxBytes - before[WiFiIf].RxBytes, after[CellIf].RxBytes - before[CellIf].RxBytes, mptcp
}

func TestIntegrationModes(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("md")
	tb := up(t, prefix, MP)
	// 2 MB take about 1 s over both baseline paths (7.04 + 9.185 Mbit/s).
	const size = 2 << 20
	// Closing the previous test's connection can still put a few
	// FIN/ACK packets on the other interface.
	const control = 2000
	tests := []struct {
		mode             Mode
		wifiMin, cellMin uint64 // at least this many bytes received
		wifiMax, cellMax uint64 // at most
	}{
		// The cellular subflow must carry a real share of the data.
		{MP, 200 << 10, 200 << 10, size, size},
		// Single-path modes leave the other interface silent.
		{SPWiFi, size, 0, 2 * size, control},
		{SPCell, 0, size, control, 2 * size},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			if err := SetMode(prefix, tt.mode); err != nil {
				t.Fatal(err)
			}
			if m, err := CurrentMode(prefix); err != nil || m != tt.mode {
				t.Fatalf("CurrentMode = %v, %v", m, err)
			}
			wifi, cell, mptcp := transfer(t, tb, size)
			t.Logf("%s: wlan0 %d bytes, wwan0 %d bytes, MPTCP %v", tt.mode, wifi, cell, mptcp)
			if !mptcp {
				t.Errorf("connection fell back to TCP")
			}
			if wifi < tt.wifiMin || wifi > tt.wifiMax || cell < tt.cellMin || cell > tt.cellMax {
				t.Errorf("wlan0 got %d bytes (want %d..%d), wwan0 got %d (want %d..%d)",
					wifi, tt.wifiMin, tt.wifiMax, cell, tt.cellMin, tt.cellMax)
			}
		})
	}
}

func TestIntegrationLock(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("lk")
	f, err := acquire(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if r, pid := Running(prefix); !r || pid != os.Getpid() {
		t.Errorf("Running = %v, %d", r, pid)
	}
	if _, err := acquire(prefix); err == nil || !strings.Contains(err.Error(), "already running (pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("second acquire: %v", err)
	}
	if err := release(f); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lockPath(prefix)); !os.IsNotExist(err) {
		t.Errorf("lock file left after release: %v", err)
	}
	if r, _ := Running(prefix); r {
		t.Error("Running after release")
	}
	f, err = acquire(prefix)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	release(f)
}

func TestIntegrationProxyHost(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("px")
	p, _ := profiles.Load("baseline")
	tb, err := Up(Options{Prefix: prefix, Profile: p, Proxy: true})
	if err != nil {
		t.Fatal(err)
	}
	n := tb.Names()
	if v, err := readSysctl(n.Proxy, "net.mptcp.enabled"); err != nil || v != "1" {
		t.Errorf("proxy net.mptcp.enabled = %q, %v", v, err)
	}
	if out := mustIP(t, "-n", n.Proxy, "mptcp", "limits", "show"); !strings.Contains(out, "subflows 2") {
		t.Errorf("proxy mptcp limits: %s", out)
	}
	// The client reaches the proxy over either link, and the proxy reaches the origin server. Nothing listens on
	// port 9, so "connection refused" proves each round trip.
	for _, src := range []string{WiFiAddr, CellAddr} {
		d := net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		if _, err := Dial(n.Client, d, "tcp4", ProxyAddr+":9"); err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("connect from %s to the proxy: %v, want connection refused", src, err)
		}
	}
	if _, err := Dial(n.Proxy, net.Dialer{Timeout: 3 * time.Second}, "tcp4", ServerAddr+":9"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("connect from the proxy to the server: %v, want connection refused", err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := listNetns(prefix); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
}
