//go:build linux

package topo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mpsurf/mpsurf/e2e/linkem"
	"github.com/mpsurf/mpsurf/e2e/profiles"
	"golang.org/x/sys/unix"
)

// RunDir holds the lock file (and the testbed command's control socket) of
// each running instance.
const RunDir = "/run/mpsurf"

// Options configure Up.
type Options struct {
	Prefix      string            // namespace name prefix; "" means DefaultPrefix
	Profile     *profiles.Profile // link conditions (required)
	TimelineDir string            // write <iface>.csv timelines here; "" for none
	Seed        uint64            // random-loss seed
	Mode        Mode              // initial mode; "" means SPWiFi
	// CongestionControl sets the default TCP congestion control in the
	// client and server namespaces; "" keeps the one a new namespace
	// inherits from the host. The kernel lets a namespace other than the
	// root one choose only algorithms listed in the (global)
	// net.ipv4.tcp_allowed_congestion_control; any other needs a per-socket
	// TCP_CONGESTION setsockopt by a process with CAP_NET_ADMIN.
	CongestionControl string
	// Proxy adds the proxy host's namespace (Names.Proxy, ProxyAddr) beside the server, with MPTCP enabled and
	// the same limits and congestion control as the server.
	Proxy bool
}

// Testbed is a running topology with its link emulators.
type Testbed struct {
	names     Names
	lock      *os.File
	links     map[string]*linkem.Link // by client interface
	timelines []*linkem.Timeline
	built     bool

	mu      sync.Mutex
	profile *profiles.Profile
	closed  bool
}

// linkSpec pairs a client interface with its router-side peer and addresses.
type linkSpec struct {
	client, router  string
	addr, gateway   string
	table, rulePref int
}

var linkSpecs = []linkSpec{
	{WiFiIf, RouterWiFiIf, WiFiAddr, WiFiGateway, WiFiTable, WiFiRulePref},
	{CellIf, RouterCellIf, CellAddr, CellGateway, CellTable, CellRulePref},
}

// Up removes what a killed instance with the same prefix left behind, builds
// the topology, starts the emulators and applies the initial mode. On error
// everything created so far is removed again.
func Up(opts Options) (tb *Testbed, err error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if err := ValidPrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if opts.Profile == nil {
		return nil, errors.New("topo: no profile")
	}
	if opts.Mode == "" {
		opts.Mode = SPWiFi
	}
	if _, err := ParseMode(string(opts.Mode)); err != nil {
		return nil, err
	}
	if err := CheckSupport(); err != nil {
		return nil, err
	}
	lock, err := acquire(opts.Prefix)
	if err != nil {
		return nil, err
	}
	tb = &Testbed{names: NamesFor(opts.Prefix), lock: lock, links: map[string]*linkem.Link{}, profile: opts.Profile}
	defer func() {
		if err != nil {
			if cerr := tb.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
			}
		}
	}()
	if err := removeNamespaces(opts.Prefix); err != nil {
		return tb, fmt.Errorf("removing leftovers: %w", err)
	}
	tb.built = true
	if err := build(tb.names, opts.CongestionControl); err != nil {
		return tb, err
	}
	if opts.Proxy {
		if err := buildProxy(tb.names, opts.CongestionControl); err != nil {
			return tb, err
		}
	}
	if opts.TimelineDir != "" {
		if err := os.MkdirAll(opts.TimelineDir, 0o755); err != nil {
			return tb, err
		}
	}
	for i, s := range linkSpecs {
		if err := tb.startLink(s, opts, uint64(i)); err != nil {
			return tb, err
		}
	}
	if err := SetMode(opts.Prefix, opts.Mode); err != nil {
		return tb, err
	}
	return tb, nil
}

// CheckSupport reports what this machine lacks for a testbed.
func CheckSupport() error {
	if os.Geteuid() != 0 {
		return errors.New("topo: must run as root (network namespaces, TUN devices)")
	}
	if _, err := os.Stat("/proc/sys/net/mptcp/enabled"); err != nil {
		return errors.New("topo: kernel without MPTCP (/proc/sys/net/mptcp missing)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return errors.New("topo: /dev/net/tun missing")
	}
	return nil
}

// addNamespace creates a namespace with loopback up and no IPv6: router
// solicitations and MLD reports would otherwise show up as radio traffic in
// the counters and timelines.
func addNamespace(ns string) error {
	if _, err := ip("netns", "add", ns); err != nil {
		return err
	}
	for _, kv := range [][2]string{
		{"net.ipv6.conf.all.disable_ipv6", "1"},
		{"net.ipv6.conf.default.disable_ipv6", "1"},
	} {
		if err := writeSysctl(ns, kv[0], kv[1]); err != nil {
			return err
		}
	}
	_, err := ipNS(ns, "link", "set", "lo", "up")
	return err
}

// setupMPTCP enables MPTCP in an end host's namespace with the testbed's
// limits and, if cc is set, its default congestion control.
func setupMPTCP(ns, cc string) error {
	if err := writeSysctl(ns, "net.mptcp.enabled", "1"); err != nil {
		return err
	}
	if _, err := ipNS(ns, "mptcp", "limits", "set", "subflows", strconv.Itoa(MPTCPSubflows),
		"add_addr_accepted", strconv.Itoa(MPTCPAddAddrOK)); err != nil {
		return err
	}
	if cc == "" {
		return nil
	}
	if err := writeSysctl(ns, "net.ipv4.tcp_congestion_control", cc); err != nil {
		if errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("%w (a namespace may only default to one of net.ipv4.tcp_allowed_congestion_control)", err)
		}
		return err
	}
	return nil
}

// buildProxy adds the proxy host: a namespace behind the router on a veth
// pair of its own, like the server.
func buildProxy(n Names, cc string) error {
	if err := addNamespace(n.Proxy); err != nil {
		return err
	}
	if err := setupMPTCP(n.Proxy, cc); err != nil {
		return err
	}
	cidr := func(a string) string { return a + "/" + strconv.Itoa(PrefixLen) }
	return ipSteps([][]string{
		{n.Router, "link", "add", RouterProxyIf, "type", "veth", "peer", "name", ProxyIf, "netns", n.Proxy},
		{n.Router, "addr", "add", cidr(ProxyGateway), "dev", RouterProxyIf},
		{n.Router, "link", "set", RouterProxyIf, "up"},
		{n.Proxy, "addr", "add", cidr(ProxyAddr), "dev", ProxyIf},
		{n.Proxy, "link", "set", ProxyIf, "up"},
		{n.Proxy, "route", "add", "default", "via", ProxyGateway, "dev", ProxyIf},
	})
}

// ipSteps runs `ip -n NS ARGS...` for each step, stopping at the first error.
func ipSteps(steps [][]string) error {
	for _, s := range steps {
		if _, err := ipNS(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func build(n Names, cc string) error {
	for _, ns := range n.all() {
		if err := addNamespace(ns); err != nil {
			return err
		}
	}
	for _, ns := range []string{n.Client, n.Server} {
		if err := setupMPTCP(ns, cc); err != nil {
			return err
		}
	}
	if err := writeSysctl(n.Router, "net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	cidr := func(a string) string { return a + "/" + strconv.Itoa(PrefixLen) }
	return ipSteps([][]string{
		{n.Router, "link", "add", RouterServerIf, "type", "veth", "peer", "name", ServerIf, "netns", n.Server},
		{n.Router, "addr", "add", cidr(ServerGateway), "dev", RouterServerIf},
		{n.Router, "link", "set", RouterServerIf, "up"},
		{n.Server, "addr", "add", cidr(ServerAddr), "dev", ServerIf},
		{n.Server, "link", "set", ServerIf, "up"},
		{n.Server, "route", "add", "default", "via", ServerGateway, "dev", ServerIf},
	})
}

// startLink creates the TUN pair of one emulated link, configures it and
// starts its emulator.
func (tb *Testbed) startLink(s linkSpec, opts Options, index uint64) error {
	n := tb.names
	cfd, err := openTUN(n.Client, s.client)
	if err != nil {
		return err
	}
	rfd, err := openTUN(n.Router, s.router)
	if err != nil {
		unix.Close(cfd)
		return err
	}
	pl := opts.Profile.Links[s.client]
	cfg := linkem.Config{
		Name: s.client, ClientFd: cfd, RouterFd: rfd,
		Down: pl.Params(pl.Down), Up: pl.Params(pl.Up),
		Seed: opts.Seed*16 + index,
	}
	if opts.TimelineDir != "" {
		tl, err := linkem.CreateTimeline(filepath.Join(opts.TimelineDir, s.client+".csv"))
		if err != nil {
			unix.Close(cfd)
			unix.Close(rfd)
			return err
		}
		tb.timelines = append(tb.timelines, tl)
		cfg.Timeline = tl
	}
	l, err := linkem.Start(cfg)
	if err != nil {
		return err
	}
	tb.links[s.client] = l
	cidr := func(a string) string { return a + "/" + strconv.Itoa(PrefixLen) }
	table := strconv.Itoa(s.table)
	steps := [][]string{
		{n.Client, "addr", "add", cidr(s.addr), "dev", s.client},
		{n.Client, "link", "set", s.client, "mtu", strconv.Itoa(linkem.MTU), "up"},
		{n.Router, "addr", "add", cidr(s.gateway), "dev", s.router},
		{n.Router, "link", "set", s.router, "mtu", strconv.Itoa(linkem.MTU), "up"},
		// Source-based routing: whatever the default route, traffic from
		// this interface's address leaves through it.
		{n.Client, "route", "add", "default", "via", s.gateway, "dev", s.client, "table", table},
		{n.Client, "rule", "add", "from", s.addr, "table", table, "pref", strconv.Itoa(s.rulePref)},
	}
	for _, st := range steps {
		if _, err := ipNS(st[0], st[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// Names returns the instance's namespace names.
func (tb *Testbed) Names() Names { return tb.names }

// Profile returns the profile in force.
func (tb *Testbed) Profile() *profiles.Profile {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.profile
}

// SetProfile changes the link conditions of both links from their next
// packet on.
func (tb *Testbed) SetProfile(p *profiles.Profile) error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.closed {
		return errors.New("topo: testbed closed")
	}
	for _, s := range linkSpecs {
		pl := p.Links[s.client]
		if err := tb.links[s.client].SetParams(pl.Params(pl.Down), pl.Params(pl.Up)); err != nil {
			return err
		}
	}
	tb.profile = p
	return nil
}

// Rewind puts every trace-driven link at offset into its trace from its next packet on, and restarts every link's
// random loss for that offset (linkem.Link.Rewind).
func (tb *Testbed) Rewind(offset time.Duration) error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.closed {
		return errors.New("topo: testbed closed")
	}
	for _, l := range tb.links {
		l.Rewind(offset)
	}
	return nil
}

// Stats returns each link's emulator counters, by client interface.
func (tb *Testbed) Stats() map[string]linkem.Stats {
	out := map[string]linkem.Stats{}
	for name, l := range tb.links {
		out[name] = l.Stats()
	}
	return out
}

// Flush writes buffered timeline lines to their files.
func (tb *Testbed) Flush() error {
	var errs []error
	for _, tl := range tb.timelines {
		errs = append(errs, tl.Flush())
	}
	return errors.Join(errs...)
}

// Close stops the emulators (which removes the TUN devices), flushes the
// timelines, ends processes left in the namespaces and deletes them. It is
// safe to call more than once.
func (tb *Testbed) Close() error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.closed {
		return nil
	}
	tb.closed = true
	var errs []error
	for _, l := range tb.links {
		errs = append(errs, l.Close())
	}
	for _, tl := range tb.timelines {
		errs = append(errs, tl.Close())
	}
	if tb.built {
		errs = append(errs, removeNamespaces(tb.names.Prefix))
	}
	errs = append(errs, release(tb.lock))
	return errors.Join(errs...)
}

// SetMode switches the client between single-path WiFi, single-path
// cellular and multipath. Connections already open keep their subflows.
func SetMode(prefix string, m Mode) error {
	if _, err := ParseMode(string(m)); err != nil {
		return err
	}
	client := NamesFor(prefix).Client
	via, dev := WiFiGateway, WiFiIf
	if m == SPCell {
		via, dev = CellGateway, CellIf
	}
	if _, err := ipNS(client, "route", "replace", "default", "via", via, "dev", dev); err != nil {
		return err
	}
	if _, err := ipNS(client, "mptcp", "endpoint", "flush"); err != nil {
		return err
	}
	if m == MP {
		if _, err := ipNS(client, "mptcp", "endpoint", "add", CellAddr, "dev", CellIf, "subflow"); err != nil {
			return err
		}
	}
	return nil
}

// CurrentMode reads the mode back from the client's routes and endpoints.
func CurrentMode(prefix string) (Mode, error) {
	client := NamesFor(prefix).Client
	route, err := ipNS(client, "route", "show", "default")
	if err != nil {
		return "", err
	}
	eps, err := ipNS(client, "mptcp", "endpoint", "show")
	if err != nil {
		return "", err
	}
	hasEP := strings.Contains(eps, CellAddr+" ") && strings.Contains(eps, "subflow")
	switch {
	case strings.Contains(route, "dev "+WiFiIf) && hasEP:
		return MP, nil
	case strings.Contains(route, "dev "+WiFiIf) && strings.TrimSpace(eps) == "":
		return SPWiFi, nil
	case strings.Contains(route, "dev "+CellIf) && strings.TrimSpace(eps) == "":
		return SPCell, nil
	}
	return "", fmt.Errorf("client routes/endpoints match no mode: route %q, endpoints %q", strings.TrimSpace(route), strings.TrimSpace(eps))
}

// IfCounters are the kernel's counters of one client interface.
type IfCounters struct {
	RxBytes   uint64 `json:"rx_bytes"`
	TxBytes   uint64 `json:"tx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	TxPackets uint64 `json:"tx_packets"`
}

var counterFiles = []string{"rx_bytes", "tx_bytes", "rx_packets", "tx_packets"}

// Counters reads /sys/class/net/IF/statistics of wlan0 and wwan0 inside the
// client namespace (through `ip netns exec`, which mounts that namespace's
// sysfs).
func Counters(prefix string) (map[string]IfCounters, error) {
	args := []string{"netns", "exec", NamesFor(prefix).Client, "cat"}
	ifs := []string{WiFiIf, CellIf}
	for _, ifn := range ifs {
		for _, f := range counterFiles {
			args = append(args, "/sys/class/net/"+ifn+"/statistics/"+f)
		}
	}
	out, err := ip(args...)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(out)
	if len(fields) != len(ifs)*len(counterFiles) {
		return nil, fmt.Errorf("counters: got %d values, want %d", len(fields), len(ifs)*len(counterFiles))
	}
	res := map[string]IfCounters{}
	for i, ifn := range ifs {
		var v [4]uint64
		for j := range v {
			if v[j], err = strconv.ParseUint(fields[i*4+j], 10, 64); err != nil {
				return nil, fmt.Errorf("counters: %w", err)
			}
		}
		res[ifn] = IfCounters{RxBytes: v[0], TxBytes: v[1], RxPackets: v[2], TxPackets: v[3]}
	}
	return res, nil
}

// removeNamespaces ends the processes inside every namespace named
// prefix-* and deletes the namespaces. Deleting a namespace removes the
// devices in it (the veth pair with it).
func removeNamespaces(prefix string) error {
	names, err := listNetns(prefix)
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range names {
		if ino, err := NetnsInode(ns); err == nil {
			killAll(PidsInNetns(ino))
		}
		if _, err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killAll sends SIGTERM, waits up to 2 s, then sends SIGKILL to what is left.
// These are processes started inside the testbed's namespaces (an origin
// server, a browser); once the namespace is deleted they could reach nothing.
func killAll(pids []int) {
	if len(pids) == 0 {
		return
	}
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGTERM)
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		alive := 0
		for _, p := range pids {
			if syscall.Kill(p, 0) == nil {
				alive++
			}
		}
		if alive == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
}
