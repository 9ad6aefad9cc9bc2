package actuate

import (
	"container/list"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpsurf/mpsurf/native-host/diag"
	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// The userspace backend: it selects the kernel's userspace path manager, follows the MPTCP connections' events
// (handle), and keeps one record per connection (userspace_conns.go); what it does with them is split by job: the
// decisions it holds (userspace_policy.go), θ1 polling and opening the cellular subflow (userspace_theta.go), and
// closing it at θ2 or when it stalls (userspace_stall.go).

// pathManager is what the userspace backend asks of the kernel's userspace path manager: to open and close a
// connection's subflows and to mark one backup, the commands sharing the deadline SetDeadline sets. *mptcp.Client
// (generic netlink) is the real one; the tests' is a double of pure logic, so that the θ1 and stall rules run
// without root.
type pathManager interface {
	SetDeadline(t time.Time) error
	SubflowCreate(token uint32, local mptcp.Endpoint, remote netip.AddrPort) error
	SubflowDestroy(token uint32, local, remote netip.AddrPort) error
	SubflowSetBackup(token uint32, local, remote netip.AddrPort, backup bool) error
	Close() error
}

// sockets is what the userspace backend reads of the sockets: every established TCP socket's counters (Dump), every
// MPTCP connection's receive buffer (DumpMPTCP) and one connection's owner (Find). *diag.Conn (sock_diag) is the
// real one; the tests' is a double of pure logic.
type sockets interface {
	Dump(out []diag.Sock) ([]diag.Sock, error)
	DumpMPTCP(out []diag.MPTCPSock) ([]diag.MPTCPSock, error)
	Find(local, remote netip.AddrPort) (diag.Sock, bool, error)
	Close() error
}

// userspaceBackend selects the userspace path manager for the helper's network namespace and opens the
// cellular subflow only for connections to addresses of origins decided multipath, once they have received θ1
// bytes, and closes it again when it has carried θ2 bytes: seed 001's server-side policy, carried out by the
// client so that it works with any MPTCP server.
type userspaceBackend struct {
	j    *Journal
	cell cellSource
	log  func(string, ...any)

	events  *mptcp.Events
	done    chan struct{}
	closing atomic.Bool
	diag    sockets          // subflow byte counters (each subflow is a TCP socket); the poll goroutine's alone
	mbuf    []diag.MPTCPSock // the poll goroutine's buffer for the connections' receive buffers
	wake    chan struct{}    // a connection started to need polling
	stop    chan struct{}
	pollEnd chan struct{}

	mu     sync.Mutex
	pm     pathManager
	lookup sockets                      // a connection's owner, at ESTABLISHED; the event goroutine's, under mu
	policy map[netip.Addr]*list.Element // of *addrEntry, in polOrder
	// polOrder is the addresses, most recently set first.
	polOrder *list.List
	// connPol holds per-connection decisions (set-conn-policy), keyed by the initial subflow's two ends; they
	// take precedence over the destination address's, for a connection of the uid that set them only.
	connPol map[flow]connEntry
	conns   map[uint32]*conn
	stats   usStats
	closed  []closedConn // the most recent closed connections, oldest first
	// cellStalled: when an owner's cellular subflow was last closed as stalled (stallWatch), by uid; an entry
	// goes once stallAfter has passed, so only owners with a stall in the last second are kept.
	cellStalled map[uint32]time.Time
	// link: when any open cellular subflow last received a byte (a stall is the link's, not one subflow's).
	link linkWatch
	// rcvbuf0: the receive buffer the kernel gives a new connection (net.ipv4.tcp_rmem's default); a subflow
	// joins only a connection whose buffer has grown past it (rcvbufGated). 0: unknown, or the kernel has no MPTCP
	// socket diagnostics (set at the first failed dump): no gate.
	rcvbuf0 uint32
}

func startUserspace(cfg BackendConfig, j *Journal) (*userspaceBackend, error) {
	// The path manager is fixed when a connection is created, so select it before subscribing.
	if _, err := j.ReadSysctl("path_manager"); err == nil {
		if err := j.SetSysctl(ScopeSession, "path_manager", "userspace"); err != nil {
			return nil, err
		}
	} else if err := j.SetSysctl(ScopeSession, "pm_type", "1"); err != nil {
		return nil, fmt.Errorf("select the userspace path manager: %w", err)
	}
	dg, err := diag.Open()
	if err != nil {
		return nil, err
	}
	lk, err := diag.Open()
	if err != nil {
		dg.Close()
		return nil, err
	}
	pm, err := mptcp.Dial(0)
	if err != nil {
		dg.Close()
		lk.Close()
		return nil, err
	}
	// NetworkManager ≥ 1.40 adds subflow endpoints per connection. Under the userspace path manager the kernel
	// ignores them for new connections (TestIntegrationEndpointsIgnoredUnderUserspace), so the helper says so and
	// goes on; they act again once it stops and the in-kernel path manager is back.
	if eps, err := pm.Endpoints(); err == nil {
		var sub []string
		for _, e := range eps {
			if e.Flags&mptcp.FlagSubflow != 0 {
				sub = append(sub, e.Addr.String())
			}
		}
		if len(sub) > 0 && cfg.Log != nil {
			cfg.Log("in-kernel subflow endpoints (NetworkManager's connection.mptcp-flags?) are ignored while the userspace path manager is selected; they act again when the helper stops", "endpoints", sub)
		}
	}
	ev, err := mptcp.Subscribe(0)
	if err != nil {
		pm.Close()
		dg.Close()
		lk.Close()
		return nil, err
	}
	u := newUserspace(j, cellSource{cfg.CellAddr, cfg.CellIf}, cfg.Log, pm, dg, lk)
	u.rcvbuf0 = initialRcvbuf(u.log)
	u.events = ev
	go u.loop()
	go u.pollLoop()
	return u, nil
}

// newUserspace assembles the backend around its kernel interfaces: pm's commands, counters read by the poll
// goroutine, owners looked up by the event goroutine. It starts nothing.
func newUserspace(j *Journal, cell cellSource, log func(string, ...any), pm pathManager, counters, owners sockets) *userspaceBackend {
	u := &userspaceBackend{j: j, cell: cell, log: log, done: make(chan struct{}), pm: pm,
		diag: counters, lookup: owners, wake: make(chan struct{}, 1), stop: make(chan struct{}), pollEnd: make(chan struct{}),
		policy: map[netip.Addr]*list.Element{}, polOrder: list.New(), connPol: map[flow]connEntry{}, conns: map[uint32]*conn{},
		cellStalled: map[uint32]time.Time{}}
	if u.log == nil {
		u.log = func(string, ...any) {}
	}
	return u
}

func (u *userspaceBackend) Name() string { return BackendUserspace }

func (u *userspaceBackend) loop() {
	defer close(u.done)
	for {
		ev, err := u.events.Next()
		if err != nil {
			if u.closing.Load() {
				return
			}
			// One undecodable message is not fatal; pause so that a broken socket cannot spin.
			u.log("event", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		u.handle(ev)
	}
}

func (u *userspaceBackend) handle(ev mptcp.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch ev.Type {
	case mptcp.EventCreated:
		if ev.ServerSide {
			return
		}
		u.stats.Connections++
		if len(u.conns) >= maxConnRecords {
			u.dropOldestConn()
		}
		u.conns[ev.Token] = &conn{dst: ev.Dst(), initial: ev.Src(), theta2: noCap, created: time.Now(),
			rec: ConnRecord{Token: ev.Token, Dst: ev.Dst().String(), Src: ev.Src().String()}}
		u.bindConnPol(flow{ev.Src(), ev.Dst()}, time.Now())
	case mptcp.EventEstablished:
		c := u.conns[ev.Token]
		if c == nil {
			return
		}
		c.established, c.estAt = true, time.Now()
		c.rec.EstNS = c.estAt.UnixNano()
		// Whose connection it is: a decision applies to its owner's connections, and status shows each user
		// only theirs. A subflow socket carries the uid of the process that made the connection.
		if s, ok, err := u.lookup.Find(c.initial, c.dst); err == nil && ok {
			c.uid, c.uidKnown = s.UID, true
		}
		u.maybeCreate(ev.Token, c, nil, nil)
	case mptcp.EventSubEstablished:
		if c := u.conns[ev.Token]; c != nil && c.cellSrc.IsValid() && ev.Saddr == c.cellSrc {
			c.subflow = ev.Src()
			c.rec.Subflow = true
			if !c.estAt.IsZero() {
				c.rec.DelayUS = time.Since(c.estAt).Microseconds()
			}
			if p, _ := u.policyOf(c); p.multipath {
				u.maybePreferCell(ev.Token, c, p)
			}
			if c.needsPoll() {
				u.kick()
			}
		}
	case mptcp.EventSubClosed:
		c := u.conns[ev.Token]
		if c == nil {
			return
		}
		if c.subflow == ev.Src() {
			c.subflow = netip.AddrPort{}
			if c.backupSet {
				// WiFi must not stay a backup with no cellular subflow beside it: in the testbed, a connection
				// left so reinjected the same data over its WiFi subflow for two minutes (11 MB for 0.3 MB).
				u.restorePrimary(ev.Token, c)
			}
		} else if c.initial == ev.Src() {
			c.backupSet = false // nothing left to give its priority back to
		} else if c.cellSrc.IsValid() && ev.Saddr == c.cellSrc && !c.rec.Subflow && c.rec.Error == "" {
			// The join the helper asked for failed (refused by the server, or the connection went first).
			c.rec.Error = fmt.Sprintf("cellular subflow closed before it was established (error %d)", ev.Error)
		}
	case mptcp.EventClosed:
		if c := u.conns[ev.Token]; c != nil {
			delete(u.connPol, flow{c.initial, c.dst})
			c.rec.ClosedNS = time.Now().UnixNano()
			if len(u.closed) >= closedKept {
				u.closed = u.closed[1:]
			}
			u.closed = append(u.closed, closedConn{c.rec, c.uid, c.uidKnown})
		}
		delete(u.conns, ev.Token)
	}
}

// dropOldestConn forgets the connection created first. Caller holds u.mu.
func (u *userspaceBackend) dropOldestConn() {
	var tok uint32
	var first time.Time
	for t, c := range u.conns {
		if first.IsZero() || c.created.Before(first) {
			tok, first = t, c.created
		}
	}
	delete(u.conns, tok)
}

func (u *userspaceBackend) SetEndpointSubflow(bool) error {
	return unsupported(u, VerbEndpoint, "the userspace path manager opens subflows per connection")
}
func (u *userspaceBackend) SetEnabled(int, func() (bool, error)) error {
	return unsupported(u, VerbEnabled, "use --backend sysctl")
}

// Release forgets every origin decision, closes the cellular subflows this helper opened, and gives back their
// normal priority to the initial subflows it made backup (a later decision may open a subflow again and not
// prefer cellular).
func (u *userspaceBackend) Release() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.policy, u.polOrder = map[netip.Addr]*list.Element{}, list.New()
	u.connPol = map[flow]connEntry{}
	var errs []error
	u.pm.SetDeadline(time.Now().Add(2 * time.Second))
	for tok, c := range u.conns {
		if c.subflow.IsValid() {
			if err := u.pm.SubflowDestroy(tok, c.subflow, c.dst); err != nil {
				errs = append(errs, err)
			}
		}
		if c.backupSet {
			if err := u.pm.SubflowSetBackup(tok, c.initial, c.dst, false); err != nil {
				errs = append(errs, err)
			}
			c.backupSet = false
		}
		c.requested, c.waiting, c.backupAsked = false, false, false
	}
	return errors.Join(errs...)
}

func (u *userspaceBackend) Status(viewer uint32) any {
	u.mu.Lock()
	defer u.mu.Unlock()
	multi := 0
	for _, e := range u.policy {
		if e.Value.(*addrEntry).p.multipath {
			multi++
		}
	}
	var recs []ConnRecord
	for _, r := range u.closed {
		if r.uidKnown && r.uid == viewer {
			recs = append(recs, r.ConnRecord)
		}
	}
	for _, c := range u.conns {
		if c.uidKnown && c.uid == viewer {
			r := c.rec
			r.Open = true
			recs = append(recs, r)
		}
	}
	cell := u.cell.ifname
	if u.cell.addr.IsValid() {
		cell = u.cell.addr.String()
	}
	return map[string]any{"cell": cell, "addresses": len(u.policy), "multipath_addresses": multi, "conn_policies": len(u.connPol),
		"open_connections": len(u.conns), "stats": u.stats, "connections": recs, "rcvbuf_gate": u.rcvbuf0}
}

func (u *userspaceBackend) Close() error {
	err := u.Release()
	u.closing.Store(true)
	close(u.stop)
	<-u.pollEnd
	u.events.Close()
	<-u.done
	u.pm.Close()
	u.diag.Close()
	u.lookup.Close()
	return err
}
