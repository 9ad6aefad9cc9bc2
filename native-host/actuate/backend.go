package actuate

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/ifaces"
	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// Backend is one kernel lever. Each one carries out the verbs it can and answers CodeUnsupported for the rest.
// Changes go through the Journal so that Release (lease over) and the helper's exit undo them.
type Backend interface {
	Name() string
	// SetOrigin and SetConn: only the userspace backend carries them out, PreferCellular included (it needs the
	// userspace path manager's per-subflow SET_FLAGS); the endpoint and sysctl backends refuse both verbs with
	// CodeUnsupported, whatever the fields, and the dry run records PreferCellular with the rest.
	SetOrigin(p OriginPolicy) error
	// SetConn gives one connection its own decision, ahead of its destination address's.
	SetConn(p ConnPolicy) error
	SetEndpointSubflow(enabled bool) error
	// SetEnabled sets net.mptcp.enabled. mptcpize says whether the caller runs under mptcpize; it is asked only
	// when the answer matters (value 0), and an error means the helper cannot tell.
	SetEnabled(value int, mptcpize func() (bool, error)) error
	// Release drops every lease-scoped change (the Journal restores the kernel state; the backend forgets
	// its own bookkeeping and undoes what the Journal cannot see, such as subflows it created).
	Release() error
	// Status is the backend's state as the client of uid viewer may see it: its own connections only.
	Status(viewer uint32) any
	Close() error
}

// Backend names.
const (
	BackendAuto      = "auto"
	BackendUserspace = "userspace"
	BackendEndpoint  = "endpoint"
	BackendSysctl    = "sysctl"
	BackendDryRun    = "dryrun"
)

// BackendConfig is what the backends need besides the journal.
type BackendConfig struct {
	Name     string
	CellAddr netip.Addr // the cellular interface's local address: subflow source, endpoint address
	CellIf   string     // or the cellular interface, whose address is looked up when needed (it changes)
	Log      func(msg string, args ...any)
}

// chooseBackend resolves "auto": the userspace PM where the kernel has it, else the in-kernel endpoint, else
// a dry run. The sysctl backend is never chosen automatically: it is unsafe under mptcpize.
func chooseBackend(name string, j *Journal) (string, string) {
	if name != BackendAuto {
		return name, "asked for"
	}
	if _, err := os.Stat(j.sysctlDir + "/enabled"); err != nil {
		return BackendDryRun, "no MPTCP sysctls (kernel without MPTCP or not Linux)"
	}
	if avail, err := j.ReadSysctl("available_path_managers"); err == nil && strings.Contains(avail, "userspace") {
		return BackendUserspace, "kernel has the userspace path manager"
	}
	if _, err := j.ReadSysctl("pm_type"); err == nil {
		return BackendUserspace, "kernel has pm_type (userspace path manager)"
	}
	return BackendEndpoint, "no userspace path manager; in-kernel endpoint"
}

func newBackend(cfg BackendConfig, j *Journal) (Backend, error) {
	switch cfg.Name {
	case BackendDryRun:
		return &dryRun{}, nil
	case BackendSysctl:
		return &sysctlBackend{j: j}, nil
	case BackendEndpoint:
		// The endpoint is one global setting: its address is looked up once.
		a, err := cellSource{cfg.CellAddr, cfg.CellIf}.lookup(true)
		if err != nil {
			if a, err = (cellSource{cfg.CellAddr, cfg.CellIf}).lookup(false); err != nil {
				return nil, fmt.Errorf("the endpoint backend needs the cellular address: %w", err)
			}
		}
		return &endpointBackend{j: j, cell: a}, nil
	case BackendUserspace:
		if !cfg.CellAddr.IsValid() && cfg.CellIf == "" {
			return nil, errors.New("the userspace backend needs --cell-if (the cellular interface) or --cell-addr (its address)")
		}
		return startUserspace(cfg, j)
	}
	return nil, fmt.Errorf("unknown backend %q (auto|userspace|endpoint|sysctl|dryrun)", cfg.Name)
}

// cellSource is where the cellular subflow's source address comes from: a fixed address, or the current address
// of an interface (a modem's address changes with every attach).
type cellSource struct {
	addr   netip.Addr
	ifname string
}

// CellIfAuto as the cellular interface means the first cellular interface sysfs shows (package ifaces), looked
// up each time as a named one is: a packaged helper does not know the machine's modem in advance, and a modem's
// interface comes and goes.
const CellIfAuto = "auto"

// autoCell returns the first cellular interface that is up, by name.
func autoCell(sysRoot string) (string, error) {
	ifs, err := ifaces.Discover(sysRoot, nil)
	if err != nil {
		return "", err
	}
	for _, i := range ifs {
		if i.Kind == ifaces.Cellular && i.Up {
			return i.Name, nil
		}
	}
	return "", errors.New("no cellular interface is up (--cell-if auto found none in /sys/class/net)")
}

// lookup returns the cellular address of the wanted family.
func (c cellSource) lookup(want4 bool) (netip.Addr, error) {
	if c.addr.IsValid() {
		if c.addr.Is4() != want4 {
			return netip.Addr{}, fmt.Errorf("--cell-addr %s is not of the connection's family", c.addr)
		}
		return c.addr, nil
	}
	name := c.ifname
	if name == CellIfAuto {
		var err error
		if name, err = autoCell("/"); err != nil {
			return netip.Addr{}, err
		}
	}
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("cellular interface: %w", err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("cellular interface %s: %w", name, err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				if ip = ip.Unmap(); ip.Is4() == want4 && ip.IsGlobalUnicast() {
					return ip, nil
				}
			}
		}
	}
	fam := "IPv6"
	if want4 {
		fam = "IPv4"
	}
	return netip.Addr{}, fmt.Errorf("cellular interface %s has no %s address", name, fam)
}

func unsupported(b Backend, verb, instead string) error {
	return errorf(CodeUnsupported, "the %s backend does not do %s; %s", b.Name(), verb, instead)
}

// dryRun records what it was asked and changes nothing.
type dryRun struct {
	mu  sync.Mutex
	log []string
}

func (d *dryRun) Name() string { return BackendDryRun }
func (d *dryRun) note(s string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.log) >= 256 {
		d.log = d.log[1:]
	}
	d.log = append(d.log, time.Now().UTC().Format(time.RFC3339Nano)+" would "+s)
	return nil
}
func (d *dryRun) SetOrigin(p OriginPolicy) error {
	theta2 := "none"
	if p.Theta2 != nil {
		theta2 = fmt.Sprint(*p.Theta2)
	}
	group := ""
	if p.Group != 0 {
		group = fmt.Sprintf(" group=%d", p.Group)
	}
	return d.note(fmt.Sprintf("map %v to multipath=%v theta1=%d theta2=%s%s%s", p.Addrs, p.Multipath, p.Theta1, theta2, group, preferNote(p.PreferCellular)))
}
func (d *dryRun) SetConn(p ConnPolicy) error {
	return d.note(fmt.Sprintf("give connection %s -> %s multipath=%v theta1=%d%s", p.Local, p.Remote, p.Multipath, p.Theta1, preferNote(p.PreferCellular)))
}

// preferNote is what the dry run says of PreferCellular: nothing when it is off.
func preferNote(prefer bool) string {
	if prefer {
		return " prefer_cellular (the WiFi subflow becomes backup once the cellular one is up)"
	}
	return ""
}
func (d *dryRun) SetEndpointSubflow(on bool) error {
	return d.note(fmt.Sprintf("set endpoint subflow=%v", on))
}
func (d *dryRun) SetEnabled(v int, mptcpize func() (bool, error)) error {
	under, err := mptcpize()
	return d.note(fmt.Sprintf("set net.mptcp.enabled=%d (mptcpize=%v, %v)", v, under, err))
}
func (d *dryRun) Release() error { return d.note("release every change") }
func (d *dryRun) Status(uint32) any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return map[string]any{"would": append([]string(nil), d.log...)}
}
func (d *dryRun) Close() error { return nil }

// sysctlBackend toggles net.mptcp.enabled, the design's original lever. It only affects sockets created
// afterwards, and only applications that fall back to TCP survive enabled=0.
type sysctlBackend struct{ j *Journal }

func (s *sysctlBackend) Name() string { return BackendSysctl }
func (s *sysctlBackend) SetOrigin(OriginPolicy) error {
	return unsupported(s, VerbOrigin, "it acts globally: send set-mptcp-enabled before the origin's connections open")
}
func (s *sysctlBackend) SetConn(ConnPolicy) error {
	return unsupported(s, VerbConn, "it acts globally")
}
func (s *sysctlBackend) SetEndpointSubflow(bool) error {
	return unsupported(s, VerbEndpoint, "use --backend endpoint")
}

// ErrMptcpize explains the refusal. Checked by TestIntegrationDisabledMPTCPFailsSockets: with mptcpize's LD_PRELOAD
// wrapper, socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP) fails with ENOPROTOOPT once net.mptcp.enabled=0, and
// Chromium then loads nothing at all.
const ErrMptcpize = "net.mptcp.enabled=0 under mptcpize makes every socket() fail with ENOPROTOOPT (Chromium loads nothing); use the userspace or endpoint backend"

func (s *sysctlBackend) SetEnabled(v int, mptcpize func() (bool, error)) error {
	if v == 0 {
		// Fail closed: a caller whose environment the helper cannot read (under the unit, another uid's) may be
		// under mptcpize, and enabled=0 would break every socket it opens.
		under, err := mptcpize()
		if err != nil {
			return errorf(CodeRefused, "cannot tell whether the caller runs under mptcpize (%v); net.mptcp.enabled=0 is refused, since under mptcpize it makes every socket() fail with ENOPROTOOPT; use the userspace or endpoint backend", err)
		}
		if under {
			return errorf(CodeRefused, "%s", ErrMptcpize)
		}
	}
	return s.j.SetSysctl(ScopeLease, "enabled", fmt.Sprint(v))
}
func (s *sysctlBackend) Release() error { return nil } // the journal restores the sysctl
func (s *sysctlBackend) Status(uint32) any {
	v, err := s.j.ReadSysctl("enabled")
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	return map[string]any{"enabled": v}
}
func (s *sysctlBackend) Close() error { return nil }

// endpointBackend toggles the subflow flag of the in-kernel PM's endpoint for the cellular address. It is
// global and coarse: it applies to every MPTCP connection opened while it is on, whatever the origin, and
// the in-kernel PM adds the subflow only once a connection is fully established.
type endpointBackend struct {
	j    *Journal
	cell netip.Addr
}

func (e *endpointBackend) Name() string { return BackendEndpoint }
func (e *endpointBackend) SetOrigin(OriginPolicy) error {
	return unsupported(e, VerbOrigin, "the in-kernel endpoint is global: send set-endpoint-subflow")
}
func (e *endpointBackend) SetConn(ConnPolicy) error {
	return unsupported(e, VerbConn, "the in-kernel endpoint is global: send set-endpoint-subflow")
}
func (e *endpointBackend) SetEnabled(int, func() (bool, error)) error {
	return unsupported(e, VerbEnabled, "use --backend sysctl")
}

// find returns the endpoint for the cellular address, if any.
func (e *endpointBackend) find(pm *mptcp.Client) (*mptcp.Endpoint, error) {
	eps, err := pm.Endpoints()
	if err != nil {
		return nil, err
	}
	for _, ep := range eps {
		if ep.Addr == e.cell {
			return &ep, nil
		}
	}
	return nil, nil
}

func (e *endpointBackend) SetEndpointSubflow(on bool) error {
	pm, err := mptcp.Dial(0)
	if err != nil {
		return errorf(CodeKernel, "%v", err)
	}
	defer pm.Close()
	cur, err := e.find(pm)
	if err != nil {
		return errorf(CodeKernel, "%v", err)
	}
	switch {
	case cur == nil && !on:
		return nil
	case cur == nil:
		// No endpoint yet: create one with a fixed ID so that the undo record can name it.
		id, err := freeID(pm)
		if err != nil {
			return errorf(CodeKernel, "%v", err)
		}
		if err := e.j.NoteEndpoint(ScopeLease, id, nil); err != nil {
			return err
		}
		if err := pm.AddEndpoint(mptcp.Endpoint{ID: id, Addr: e.cell, Flags: mptcp.FlagSubflow}); err != nil {
			return errorf(CodeKernel, "%v", err)
		}
		return nil
	case (cur.Flags&mptcp.FlagSubflow != 0) == on:
		return nil
	}
	// The kernel's SET_FLAGS changes only backup and fullmesh, so the subflow flag takes a delete and an add.
	if err := e.j.NoteEndpoint(ScopeLease, cur.ID, cur); err != nil {
		return err
	}
	next := *cur
	next.Flags ^= mptcp.FlagSubflow
	if err := pm.DeleteEndpoint(cur.ID); err != nil {
		return errorf(CodeKernel, "%v", err)
	}
	if err := pm.AddEndpoint(next); err != nil {
		return errorf(CodeKernel, "%v", err)
	}
	return nil
}

func freeID(pm *mptcp.Client) (uint8, error) {
	eps, err := pm.Endpoints()
	if err != nil {
		return 0, err
	}
	used := map[uint8]bool{}
	for _, ep := range eps {
		used[ep.ID] = true
	}
	for id := uint8(200); id > 0; id-- {
		if !used[id] {
			return id, nil
		}
	}
	return 0, errors.New("no free endpoint ID")
}

func (e *endpointBackend) Release() error { return nil } // the journal restores the endpoint
func (e *endpointBackend) Status(uint32) any {
	pm, err := mptcp.Dial(0)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	defer pm.Close()
	cur, err := e.find(pm)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	if cur == nil {
		return map[string]any{"cell_addr": e.cell.String(), "endpoint": nil}
	}
	return map[string]any{"cell_addr": e.cell.String(), "id": cur.ID, "flags": cur.Flags.String()}
}
func (e *endpointBackend) Close() error { return nil }
