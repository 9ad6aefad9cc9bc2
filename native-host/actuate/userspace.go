package actuate

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// userspaceBackend selects the userspace path manager for the helper's network namespace and opens the
// cellular subflow only for connections to addresses of origins decided multipath.
type userspaceBackend struct {
	j    *Journal
	cell netip.Addr
	log  func(string, ...any)

	events  *mptcp.Events
	done    chan struct{}
	closing atomic.Bool

	mu     sync.Mutex
	pm     *mptcp.Client
	policy map[netip.Addr]bool // destination address -> multipath
	conns  map[uint32]*conn
	stats  usStats
	closed []ConnRecord // the most recent closed connections, oldest first
}

// ConnRecord is one client connection as the helper saw it: what the benchmark and the testbed's
// verification read from status.
type ConnRecord struct {
	Token     uint32 `json:"token"`
	Dst       string `json:"dst"`
	Multipath bool   `json:"multipath"`        // the destination's decision when last looked at
	Subflow   bool   `json:"subflow"`          // a cellular subflow was established
	EstNS     int64  `json:"established_ns"`   // unix ns of ESTABLISHED; 0 if never
	DelayUS   int64  `json:"subflow_delay_us"` // ESTABLISHED to the cellular SUB_ESTABLISHED; 0 if none
	Error     string `json:"error,omitempty"`  // SUBFLOW_CREATE's error
	Open      bool   `json:"open"`
}

// closedKept bounds the closed-connection records status returns.
const closedKept = 2048

type conn struct {
	dst         netip.AddrPort
	established bool
	subflow     netip.AddrPort // local side of the cellular subflow we created; zero if none
	requested   bool
	createdAt   time.Time
	estAt       time.Time
	rec         ConnRecord
}

type usStats struct {
	Connections     int     `json:"connections"`
	SubflowsCreated int     `json:"subflows_created"`
	SubflowErrors   int     `json:"subflow_errors"`
	LastError       string  `json:"last_error,omitempty"`
	CreateDelaysUS  []int64 `json:"-"`
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
	pm, err := mptcp.Dial(0)
	if err != nil {
		return nil, err
	}
	ev, err := mptcp.Subscribe(0)
	if err != nil {
		pm.Close()
		return nil, err
	}
	u := &userspaceBackend{j: j, cell: cfg.CellAddr, log: cfg.Log, events: ev, done: make(chan struct{}), pm: pm,
		policy: map[netip.Addr]bool{}, conns: map[uint32]*conn{}}
	if u.log == nil {
		u.log = func(string, ...any) {}
	}
	go u.loop()
	return u, nil
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
		u.conns[ev.Token] = &conn{dst: ev.Dst(), createdAt: time.Now(), rec: ConnRecord{Token: ev.Token, Dst: ev.Dst().String()}}
	case mptcp.EventEstablished:
		c := u.conns[ev.Token]
		if c == nil {
			return
		}
		c.established, c.estAt = true, time.Now()
		c.rec.EstNS = c.estAt.UnixNano()
		u.maybeCreate(ev.Token, c)
	case mptcp.EventSubEstablished:
		if c := u.conns[ev.Token]; c != nil && ev.Saddr == u.cell {
			c.subflow = ev.Src()
			c.rec.Subflow = true
			if !c.estAt.IsZero() {
				c.rec.DelayUS = time.Since(c.estAt).Microseconds()
				u.stats.CreateDelaysUS = append(u.stats.CreateDelaysUS, time.Since(c.estAt).Microseconds())
				if len(u.stats.CreateDelaysUS) > 4096 {
					u.stats.CreateDelaysUS = u.stats.CreateDelaysUS[1:]
				}
			}
		}
	case mptcp.EventSubClosed:
		if c := u.conns[ev.Token]; c != nil && c.subflow == ev.Src() {
			c.subflow = netip.AddrPort{}
		}
	case mptcp.EventClosed:
		if c := u.conns[ev.Token]; c != nil {
			if len(u.closed) >= closedKept {
				u.closed = u.closed[1:]
			}
			u.closed = append(u.closed, c.rec)
		}
		delete(u.conns, ev.Token)
	}
}

// maybeCreate opens the cellular subflow if the connection's destination belongs to a multipath origin.
// Caller holds u.mu.
func (u *userspaceBackend) maybeCreate(token uint32, c *conn) {
	c.rec.Multipath = u.policy[c.dst.Addr()]
	if !c.established || c.requested || !c.rec.Multipath {
		return
	}
	if c.dst.Addr().Is4() != u.cell.Is4() {
		return // a cellular subflow of the other family cannot join this connection
	}
	c.requested = true
	u.pm.SetDeadline(time.Now().Add(2 * time.Second))
	if err := u.pm.SubflowCreate(token, mptcp.Endpoint{Addr: u.cell}, c.dst); err != nil {
		u.stats.SubflowErrors++
		u.stats.LastError = err.Error()
		c.rec.Error = err.Error()
		u.log("subflow create", "token", token, "dst", c.dst, "err", err)
		return
	}
	u.stats.SubflowsCreated++
}

// ErrThetaNotYet is why a multipath policy with a run-time threshold is refused: enforcing θ1 (add the
// subflow after θ1 received bytes) and θ2 (cap cellular bytes) needs per-connection byte counts from the
// MPTCP sock_diag interface, which this helper does not read yet.
const ErrThetaNotYet = "theta1 > 0 or a theta2 cap needs per-subflow byte counts (MPTCP sock_diag), which this helper does not read yet; send theta1 0 and no theta2, or decide single path"

func (u *userspaceBackend) SetOrigin(p OriginPolicy) error {
	if p.Multipath && (p.Theta1 > 0 || (p.Theta2 != nil && *p.Theta2 > 0)) {
		return errorf(CodeNotYet, "%s", ErrThetaNotYet)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, a := range p.Addrs {
		u.policy[a] = p.Multipath
	}
	// Connections that opened before the decision arrived follow it too.
	for tok, c := range u.conns {
		u.maybeCreate(tok, c)
	}
	return nil
}

func (u *userspaceBackend) SetEndpointSubflow(bool) error {
	return unsupported(u, VerbEndpoint, "the userspace path manager opens subflows per connection")
}
func (u *userspaceBackend) SetEnabled(int, bool) error {
	return unsupported(u, VerbEnabled, "use --backend sysctl")
}

// Release forgets every origin decision and closes the cellular subflows this helper opened.
func (u *userspaceBackend) Release() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.policy = map[netip.Addr]bool{}
	var errs []error
	u.pm.SetDeadline(time.Now().Add(2 * time.Second))
	for tok, c := range u.conns {
		if c.subflow.IsValid() {
			if err := u.pm.SubflowDestroy(tok, c.subflow, c.dst); err != nil {
				errs = append(errs, err)
			}
		}
		c.requested = false
	}
	return errors.Join(errs...)
}

func (u *userspaceBackend) Status() any {
	u.mu.Lock()
	defer u.mu.Unlock()
	multi := 0
	for _, m := range u.policy {
		if m {
			multi++
		}
	}
	recs := append([]ConnRecord(nil), u.closed...)
	for _, c := range u.conns {
		r := c.rec
		r.Open = true
		recs = append(recs, r)
	}
	return map[string]any{"cell_addr": u.cell.String(), "addresses": len(u.policy), "multipath_addresses": multi,
		"open_connections": len(u.conns), "stats": u.stats, "connections": recs}
}

// Delays returns the measured delays from ESTABLISHED to the cellular SUB_ESTABLISHED.
func (u *userspaceBackend) Delays() []time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]time.Duration, len(u.stats.CreateDelaysUS))
	for i, d := range u.stats.CreateDelaysUS {
		out[i] = time.Duration(d) * time.Microsecond
	}
	return out
}

func (u *userspaceBackend) Close() error {
	err := u.Release()
	u.closing.Store(true)
	u.events.Close()
	<-u.done
	u.pm.Close()
	return err
}
