package actuate

import (
	"container/list"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpsurf/mpsurf/native-host/diag"
	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// pollEvery is how often the byte counters of capped cellular subflows, and of connections about to reach θ1,
// are read while any exist (and never otherwise). Polling adds at most rate × pollEvery to a θ2 overshoot: 6 KiB
// at the testbed's 10 Mbit/s LTE profile, well under one congestion window.
const pollEvery = 5 * time.Millisecond

// pollIdle is the longest wait between reads while a connection waits for θ1. A connection far from θ1, or idle
// (a small page's kept-alive HTTP/2 connection waits for θ1 until it closes, minutes later), is read only as
// often as it could get near θ1: reading every connection every 5 ms for its whole life made the helper wake
// 200 times a second beside every page load. An idle connection that wakes up passes θ1 by at most its rate ×
// pollIdle: 62 kB at 10 Mbit/s.
const pollIdle = 50 * time.Millisecond

// pollHeadroom is how much faster than its last measured rate a waiting connection is assumed able to receive
// before the next read: slow start doubles the rate every round trip, twice within a few tens of milliseconds.
const pollHeadroom = 4

// nextPoll is how long a connection that has received rx of theta1 bytes, at rate bytes per second since the
// last read, may go unread.
func nextPoll(rx, theta1 uint64, rate float64) time.Duration {
	if rx >= theta1 {
		return pollEvery
	}
	if rate <= 0 {
		return pollIdle
	}
	d := time.Duration(float64(theta1-rx) / (pollHeadroom * rate) * float64(time.Second))
	return min(max(d, pollEvery), pollIdle)
}

// noCap is a policy's θ2 when the decision sets no cellular byte cap.
const noCap = -1

// addrPolicy is an origin's decision as it applies to one destination address.
type addrPolicy struct {
	multipath bool
	theta1    int64 // open the cellular subflow once the connection has received this many bytes; 0: at once
	theta2    int64 // close the cellular subflow once it has carried this many bytes; noCap: never
	uid       uint32
	group     uint32 // the θ1 group the address's bytes count in (OriginPolicy.Group); 0: its own
	// preferCell: once the cellular subflow is established, the initial (WiFi) subflow becomes backup
	// (OriginPolicy.PreferCellular).
	preferCell bool
}

// Bounds of the backend's maps: whatever clients send, its memory stays bounded. An address forgotten (the least
// recently set goes first) falls back to no policy, single path, the safe default; a browsing session's recent
// origins hold a few hundred addresses. Connections are the kernel's: the bound only matters if CLOSED events
// were lost (a netlink overrun), and then the oldest record goes.
const (
	maxAddrPolicies = 8192
	maxConnRecords  = 65536
)

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
	diag    *diag.Conn    // subflow byte counters (each subflow is a TCP socket); the poll goroutine's alone
	wake    chan struct{} // a connection started to need polling
	stop    chan struct{}
	pollEnd chan struct{}

	mu     sync.Mutex
	pm     *mptcp.Client
	lookup *diag.Conn                   // a connection's owner, at ESTABLISHED; the event goroutine's, under mu
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
}

// ConnRecord is one client connection as the helper saw it: what the benchmark and the testbed's
// verification read from status.
type ConnRecord struct {
	Token     uint32 `json:"token"`
	Dst       string `json:"dst"`
	Src       string `json:"src"`                 // the initial subflow's local address:port
	Multipath bool   `json:"multipath"`           // the destination's decision when last looked at
	PerConn   bool   `json:"per_conn,omitempty"`  // the decision was the connection's own (set-conn-policy)
	Subflow   bool   `json:"subflow"`             // a cellular subflow was established
	EstNS     int64  `json:"established_ns"`      // unix ns of ESTABLISHED; 0 if never
	ClosedNS  int64  `json:"closed_ns,omitempty"` // unix ns of CLOSED; 0 while open
	AskedNS   int64  `json:"asked_ns,omitempty"`  // unix ns of the SUBFLOW_CREATE; 0 if never asked
	DelayUS   int64  `json:"subflow_delay_us"`    // ESTABLISHED to the cellular SUB_ESTABLISHED; 0 if none
	Error     string `json:"error,omitempty"`     // the last kernel error: SUBFLOW_CREATE's, SUBFLOW_DESTROY's or SET_FLAGS's
	Open      bool   `json:"open"`
	// Run-time thresholds. RxAtRequest: bytes the connection had received when the subflow was asked for
	// (at least θ1 when θ1 > 0). CellBytes: the cellular subflow's bytes received plus acknowledged, when last
	// read (read only under a cap). Capped: it reached θ2 and was closed.
	Theta1      int64  `json:"theta1,omitempty"`
	Theta2      *int64 `json:"theta2,omitempty"`
	RxAtRequest uint64 `json:"rx_at_request,omitempty"`
	// GroupRxAtRequest: what the connections of its θ1 group had received then (θ1 counts a page's bytes, not
	// one connection's; see groupRx).
	GroupRxAtRequest uint64 `json:"group_rx_at_request,omitempty"`
	CellBytes        uint64 `json:"cell_bytes,omitempty"`
	Capped           bool   `json:"capped,omitempty"`
	CappedNS         int64  `json:"capped_ns,omitempty"`
	// WindowAtCap is what could still be in flight on the subflow when it was closed: the client's
	// congestion window (upload) plus the receive window it advertised (download), in bytes.
	WindowAtCap uint64 `json:"window_at_cap,omitempty"`
	// Stalled: the cellular subflow received nothing for stallAfter while WiFi carried the connection, and was
	// closed (stallWatch); StalledNS is when.
	Stalled   bool  `json:"stalled,omitempty"`
	StalledNS int64 `json:"stalled_ns,omitempty"`
	// PrimaryBackup: the policy preferred cellular (PreferCellular) and the helper marked the initial (WiFi)
	// subflow backup once the cellular subflow was established; PrimaryBackupNS is when. A failed SET_FLAGS
	// leaves it false and says why in Error. It stays set after Release gives the subflow its priority back.
	PrimaryBackup   bool  `json:"primary_backup,omitempty"`
	PrimaryBackupNS int64 `json:"primary_backup_ns,omitempty"`
}

// closedKept bounds the closed-connection records status returns.
const closedKept = 2048

// closedConn is a closed connection's record and its owner.
type closedConn struct {
	ConnRecord
	uid      uint32
	uidKnown bool
}

type conn struct {
	uid         uint32 // the owner of the connection's initial subflow; valid when uidKnown
	uidKnown    bool
	dst         netip.AddrPort
	initial     netip.AddrPort // local side of the initial subflow
	established bool
	subflow     netip.AddrPort // local side of the cellular subflow we created; zero if none
	cellSrc     netip.Addr     // the cellular address the subflow was asked from
	requested   bool
	waiting     bool  // multipath, but the connection has not received θ1 bytes yet
	theta2      int64 // the cap the subflow was opened under; noCap if none
	capped      bool  // θ2 reached, or the subflow stalled: it was closed and is not reopened
	backupAsked bool  // SET_FLAGS backup was sent for the initial subflow (once per connection and lease)
	backupSet   bool  // the initial subflow is backup by the helper's doing, and still open: Release undoes it
	stall       stallWatch
	rx          uint64
	readAt      time.Time // when rx was read
	estAt       time.Time
	created     time.Time
	rec         ConnRecord
}

// needsPoll reports whether the connection's byte counters must be read. Caller holds u.mu.
func (c *conn) needsPoll() bool {
	return c.waiting || (c.subflow.IsValid() && !c.capped)
}

type usStats struct {
	Connections         int    `json:"connections"`
	SubflowsCreated     int    `json:"subflows_created"`
	SubflowErrors       int    `json:"subflow_errors"`
	Theta1Waits         int    `json:"theta1_waits"` // connections whose subflow waited for θ1 bytes
	Capped              int    `json:"capped"`       // cellular subflows closed at θ2
	Stalled             int    `json:"stalled"`      // cellular subflows closed because they stalled (stallWatch)
	Polls               int    `json:"polls"`        // sock_diag reads
	PollErrors          int    `json:"poll_errors"`
	AddrsForgotten      int    `json:"addrs_forgotten"` // addresses whose policy went beyond maxAddrPolicies
	PrimaryBackups      int    `json:"primary_backups"` // initial subflows marked backup (PreferCellular)
	PrimaryBackupErrors int    `json:"primary_backup_errors"`
	LastError           string `json:"last_error,omitempty"`
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
	u := &userspaceBackend{j: j, cell: cellSource{cfg.CellAddr, cfg.CellIf}, log: cfg.Log, events: ev, done: make(chan struct{}), pm: pm,
		diag: dg, lookup: lk, wake: make(chan struct{}, 1), stop: make(chan struct{}), pollEnd: make(chan struct{}),
		policy: map[netip.Addr]*list.Element{}, polOrder: list.New(), connPol: map[flow]connEntry{}, conns: map[uint32]*conn{},
		cellStalled: map[uint32]time.Time{}}
	if u.log == nil {
		u.log = func(string, ...any) {}
	}
	go u.loop()
	go u.pollLoop()
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
		u.maybeCreate(ev.Token, c, nil)
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

// group is the connections one θ1 counts together: one owner's to the addresses of one page's decision (the
// origin and the third parties its pages reached, under one OriginPolicy.Group), or to one destination address
// when the decision names no group.
type group struct {
	addr netip.Addr // zero when id is set
	id   uint32
	uid  uint32
}

// groupOf is the connection's θ1 group, and false when it has none: its owner is unknown, or it has a decision
// of its own (set-conn-policy) that names no group, so it counts alone. Caller holds u.mu.
func (u *userspaceBackend) groupOf(c *conn) (group, bool) {
	if !c.uidKnown {
		return group{}, false
	}
	if e, own := u.connPol[flow{c.initial, c.dst}]; own && e.p.uid == c.uid {
		return group{id: e.p.group, uid: c.uid}, e.p.group != 0
	}
	// Only the owner's own decision puts its connections in a named group: another user's policy for the same
	// address must not make them count with this user's other connections.
	if e := u.policy[c.dst.Addr()]; e != nil {
		if ap := e.Value.(*addrEntry).p; ap.group != 0 && ap.uid == c.uid {
			return group{id: ap.group, uid: c.uid}, true
		}
	}
	return group{addr: c.dst.Addr(), uid: c.uid}, true
}

// groupRx sums, by group (groupOf), what the connections have received when last read. θ1 is the smallest
// transfer worth multipath (seed 001 §4.2), a page's bytes: an HTTP/1.1 page spreads them over up to six
// connections, so a per-connection θ1 let a 2 MB page reach θ1 on none of them, or late (testbed decisions grid:
// forum-album-1 at θ1 = 256 kB put 120 kB of 2 MB on cellular, as slow as single path). A page's third parties
// carry 25-45 % of the corpus's large pages; counted apart, each waited for its own θ1 after the origin had
// passed it (poor-wifi-fast-lte, shop-product-2's first visit: the third party's subflow came 2.0 s after the
// origin's), so a decision's group counts them with the origin. Caller holds u.mu.
func (u *userspaceBackend) groupRx() map[group]uint64 {
	sums := make(map[group]uint64)
	for _, c := range u.conns {
		if g, ok := u.groupOf(c); ok && c.established {
			sums[g] += c.rx
		}
	}
	return sums
}

// maybeCreate opens the cellular subflow if the connection's destination belongs to a multipath origin and
// the connection, or with the rest of its group (groupRx, nil: summed here), has received θ1 bytes; until then it
// leaves the connection to the poll loop. Caller holds u.mu.
func (u *userspaceBackend) maybeCreate(token uint32, c *conn, sums map[group]uint64) {
	p, own := u.policyOf(c)
	c.rec.Multipath, c.rec.PerConn = p.multipath, own
	if p.multipath {
		// A decision that prefers cellular may come after the subflow it prefers (set-conn-policy once more).
		u.maybePreferCell(token, c, p)
	}
	if !c.established || c.requested || c.capped || !p.multipath {
		c.waiting = false
		return
	}
	c.rec.Theta1 = p.theta1
	c.theta2, c.rec.Theta2 = p.theta2, nil
	if p.theta2 != noCap {
		v := p.theta2
		c.rec.Theta2 = &v
	}
	if p.theta2 == 0 {
		// A zero cap allows no cellular byte: the subflow is never worth opening.
		c.capped, c.rec.Capped, c.waiting = true, true, false
		return
	}
	got := c.rx
	if g, ok := u.groupOf(c); ok && p.theta1 > 0 && got < uint64(p.theta1) {
		if sums == nil {
			sums = u.groupRx()
		}
		got = max(got, sums[g])
	}
	if p.theta1 > 0 && got < uint64(p.theta1) {
		if !c.waiting {
			c.waiting = true
			u.stats.Theta1Waits++
			u.kick()
		}
		return
	}
	c.waiting = false
	c.requested = true
	c.rec.RxAtRequest, c.rec.GroupRxAtRequest = c.rx, got
	// A subflow joins with an address of the connection's own family.
	src, err := u.cell.lookup(c.dst.Addr().Is4())
	if err != nil {
		u.stats.SubflowErrors++
		u.stats.LastError = err.Error()
		c.rec.Error = err.Error()
		return
	}
	c.cellSrc = src
	c.rec.AskedNS = time.Now().UnixNano()
	u.pm.SetDeadline(time.Now().Add(2 * time.Second))
	if err := u.pm.SubflowCreate(token, mptcp.Endpoint{Addr: src}, c.dst); err != nil {
		u.stats.SubflowErrors++
		u.stats.LastError = err.Error()
		c.rec.Error = err.Error()
		u.log("subflow create", "token", token, "dst", c.dst, "err", err)
		return
	}
	u.stats.SubflowsCreated++
}

// policyOf is the decision that applies to the connection: its own (set-conn-policy, own true), else its owner's
// for its destination address, else none (the zero addrPolicy: single path). Caller holds u.mu.
func (u *userspaceBackend) policyOf(c *conn) (p addrPolicy, own bool) {
	if e, ok := u.connPol[flow{c.initial, c.dst}]; ok && c.uidKnown && e.p.uid == c.uid {
		return e.p, true
	}
	if e := u.policy[c.dst.Addr()]; e != nil && c.uidKnown && e.Value.(*addrEntry).p.uid == c.uid {
		return e.Value.(*addrEntry).p, false
	}
	return addrPolicy{}, false
}

// maybePreferCell marks the connection's initial (WiFi) subflow backup once its cellular subflow is established,
// when the decision p prefers cellular (OriginPolicy.PreferCellular says why). The kernel sends MP_PRIO, and the
// server then sends on WiFi only while no cellular subflow can carry the data: the kernel marks a subflow stale
// after net.mptcp.stale_loss_cnt retransmission timeouts, and its scheduler takes a backup subflow when no other
// is active, so a dead cellular path falls back to WiFi without the helper. It is asked once per connection: a
// failure (the initial subflow already gone, a kernel without the userspace PM's SET_FLAGS) leaves the
// connection as plain multipath, recorded, and the helper goes on. The θ2 cap is unchanged; the stall rule is off
// while WiFi is a backup (watchStall). Caller holds u.mu.
func (u *userspaceBackend) maybePreferCell(token uint32, c *conn, p addrPolicy) {
	if !p.preferCell || c.backupAsked || !c.subflow.IsValid() || c.capped {
		return
	}
	c.backupAsked = true
	if !u.setPrimaryBackup(token, c, true) {
		return
	}
	u.stats.PrimaryBackups++
	c.rec.PrimaryBackup, c.rec.PrimaryBackupNS = true, time.Now().UnixNano()
}

// restorePrimary gives the initial subflow its priority back (maybePreferCell took it) once the cellular subflow
// is gone, so that the connection goes on over WiFi as plain single path. Caller holds u.mu.
func (u *userspaceBackend) restorePrimary(token uint32, c *conn) {
	u.setPrimaryBackup(token, c, false)
}

// setPrimaryBackup sets the initial subflow's backup flag, records a failure (stats, the connection's record, the
// log) and says whether it took. Caller holds u.mu.
func (u *userspaceBackend) setPrimaryBackup(token uint32, c *conn, backup bool) bool {
	u.pm.SetDeadline(time.Now().Add(2 * time.Second))
	if err := u.pm.SubflowSetBackup(token, c.initial, c.dst, backup); err != nil {
		u.stats.PrimaryBackupErrors++
		u.stats.LastError = err.Error()
		c.rec.Error = err.Error()
		u.log("initial subflow backup flag", "backup", backup, "token", token, "src", c.initial, "dst", c.dst, "err", err)
		c.backupSet = false
		return false
	}
	c.backupSet = backup
	return true
}

// kick wakes the poll goroutine. Caller holds u.mu.
func (u *userspaceBackend) kick() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// pollLoop reads byte counters every pollEvery while a connection needs them, and sleeps otherwise: an idle
// helper makes no system call.
func (u *userspaceBackend) pollLoop() {
	defer close(u.pollEnd)
	t := time.NewTimer(pollIdle)
	defer t.Stop()
	var buf []diag.Sock
	for {
		select {
		case <-u.stop:
			return
		case <-u.wake:
		}
		for {
			var next time.Duration
			buf, next = u.poll(buf[:0])
			if next == 0 {
				break
			}
			t.Reset(next)
			// A new connection to watch (kick) is read at once, not after the others' wait.
			select {
			case <-u.stop:
				return
			case <-t.C:
			case <-u.wake:
			}
		}
	}
}

// flow keys a TCP socket by its two ends.
type flow struct{ local, remote netip.AddrPort }

// poll reads the counters once and acts on them: opens the subflows whose connection has now received θ1
// bytes, closes those that have carried θ2. It returns how long until the next read (0: none needs one).
func (u *userspaceBackend) poll(buf []diag.Sock) ([]diag.Sock, time.Duration) {
	u.mu.Lock()
	need := false
	for _, c := range u.conns {
		if c.needsPoll() {
			need = true
			break
		}
	}
	u.mu.Unlock()
	if !need {
		return buf, 0
	}
	// The dump runs without the lock so that events are never held up by it.
	buf, err := u.diag.Dump(buf)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stats.Polls++
	if err != nil {
		u.stats.PollErrors++
		u.stats.LastError = err.Error()
		return buf, pollEvery
	}
	socks := make(map[flow]*diag.Sock, len(buf))
	for i := range buf {
		socks[flow{buf[i].Local, buf[i].Remote}] = &buf[i]
	}
	now := time.Now()
	// Every waiting connection's count first, then the decisions: θ1 counts a group's connections together.
	type read struct {
		first bool
		rate  float64
	}
	reads := make(map[uint32]read)
	for tok, c := range u.conns {
		if !c.waiting {
			continue
		}
		if s := socks[flow{c.initial, c.dst}]; s != nil {
			r := read{first: c.readAt.IsZero()}
			if !r.first && s.BytesReceived > c.rx {
				r.rate = float64(s.BytesReceived-c.rx) / now.Sub(c.readAt).Seconds()
			}
			c.rx, c.readAt = s.BytesReceived, now
			reads[tok] = r
		}
	}
	sums := u.groupRx()
	for uid, at := range u.cellStalled {
		if now.Sub(at) >= stallAfter {
			delete(u.cellStalled, uid)
		}
	}
	cellRx := make(map[flow]uint64)
	for _, c := range u.conns {
		if c.subflow.IsValid() && !c.capped {
			if s := socks[flow{c.subflow, c.dst}]; s != nil {
				cellRx[flow{c.subflow, c.dst}] = delivered(s)
			}
		}
	}
	u.link.observe(now, cellRx)
	var next time.Duration
	stalledBefore := u.stats.Stalled
	for tok, c := range u.conns {
		wait := pollEvery
		if r, ok := reads[tok]; ok {
			u.maybeCreate(tok, c, sums)
			if c.waiting && !r.first { // the first read has no rate yet: the next comes soon
				got := c.rx
				if g, ok := u.groupOf(c); ok {
					got = max(got, sums[g])
				}
				wait = nextPoll(got, uint64(c.rec.Theta1), r.rate)
			}
		}
		if c.subflow.IsValid() && c.theta2 != noCap && !c.capped {
			if s := socks[flow{c.subflow, c.dst}]; s != nil {
				c.rec.CellBytes = s.BytesReceived + s.BytesAcked
				if c.rec.CellBytes >= uint64(c.theta2) {
					c.rec.WindowAtCap = uint64(s.SndCwnd)*uint64(s.SndMSS) + uint64(s.RcvWnd)
					u.capSubflow(tok, c)
				}
			}
		}
		if c.subflow.IsValid() && !c.capped && !c.waiting {
			wait = u.watchStall(tok, c, socks, now)
		}
		if c.subflow.IsValid() && c.theta2 != noCap && !c.capped {
			wait = pollEvery
		}
		if c.needsPoll() && (next == 0 || wait < next) {
			next = wait
		}
	}
	if u.stats.Stalled > stalledBefore {
		// A subflow closed as stalled in this pass marks its owner's cellular path (cellStalled); the owner's
		// other silent subflows go with it now, whichever order the map gave, not at their next idle read a
		// second later, when the mark has lapsed.
		for tok, c := range u.conns {
			if c.subflow.IsValid() && !c.capped && !c.waiting {
				u.watchStall(tok, c, socks, now)
			}
		}
	}
	return buf, next
}

// watchStall reads the connection's two subflows for a stall (stallWatch), closes the cellular one if it
// stalled, and says when to read them again. Not while the WiFi subflow is a backup (PreferCellular): the
// kernel's stale-subflow logic (net.mptcp.stale_loss_cnt) moves a dead cellular path's data to WiFi, and a
// cellular subflow closed for any reason gives WiFi its priority back (restorePrimary). Caller holds u.mu.
func (u *userspaceBackend) watchStall(tok uint32, c *conn, socks map[flow]*diag.Sock, now time.Time) time.Duration {
	cell, wifi := socks[flow{c.subflow, c.dst}], socks[flow{c.initial, c.dst}]
	if cell == nil || wifi == nil || c.backupSet {
		// WiFi gone: cellular is all there is. WiFi a backup: what it receives is the kernel's retransmissions
		// and reinjections, not a working path beside a silent one (in the testbed, connections whose cellular
		// subflows had gone under WiFi as backup hung). Read again, seldom.
		return stallIdle
	}
	stalled, busy := c.stall.observe(now, delivered(cell), wifi.BytesReceived)
	if c.uidKnown && !stalled {
		// The cellular path stalled under another connection of this owner within the last stallAfter: one
		// silent as long is stuck behind the same outage, busy or not (a connection whose data waits on its
		// cellular subflow soon has nothing on WiFi either: the receive window fills).
		at, ok := u.cellStalled[c.uid]
		stalled = ok && now.Sub(at) < stallAfter && c.stall.silent(now) >= stallAfter
	}
	if stalled && u.link.silent(now) < stallAfter {
		// Another cellular subflow received meanwhile: the link delivers, and this one is only idle, its
		// server sending this connection's data over WiFi (decisions grid at 9dd847b: of five loads where the
		// helper closed subflows as stalled, four had the cellular link delivering 60-500 kB in the second
		// before, and those pages took 0.2-2.0 s longer than mp-always's; the fifth, in a 1 s outage of the
		// AT&T trace, took 3.9 s less).
		stalled = false
	}
	switch {
	case stalled:
		if c.uidKnown {
			u.cellStalled[c.uid] = now
		}
		c.rec.Stalled, c.rec.StalledNS = true, now.UnixNano()
		u.stats.Stalled++
		u.closeSubflow(tok, c, "stalled")
		return 0 // closed: nothing more to read
	case busy:
		return stallPoll
	default:
		return stallIdle
	}
}

// capSubflow closes a cellular subflow that reached θ2. Caller holds u.mu.
func (u *userspaceBackend) capSubflow(token uint32, c *conn) {
	c.rec.Capped, c.rec.CappedNS = true, time.Now().UnixNano()
	u.stats.Capped++
	u.closeSubflow(token, c, "theta2")
}

// closeSubflow closes the connection's cellular subflow for good. The kernel moves its unacknowledged data back
// to the WiFi subflow (MPTCP reinjection), so the page loses nothing. Caller holds u.mu.
func (u *userspaceBackend) closeSubflow(token uint32, c *conn, why string) {
	c.capped = true
	u.pm.SetDeadline(time.Now().Add(2 * time.Second))
	if err := u.pm.SubflowDestroy(token, c.subflow, c.dst); err != nil {
		u.stats.LastError = err.Error()
		c.rec.Error = err.Error()
		u.log("subflow destroy", "why", why, "token", token, "err", err)
	}
}

// A cellular subflow that stops delivering while WiFi carries the connection holds the page's data: what the
// server sent on it waits for its retransmission timeouts, and in-order delivery waits for it (testbed decisions
// grid, AT&T LTE driving trace: gov's first visit took 8.8 s against 3.8 s single path after its subflow joined
// just before an outage). MPTCP gives up on such a subflow only after net.mptcp.stale_loss_cnt (4) timeouts,
// about 3 s; the helper closes it once it has received nothing for stallAfter while the WiFi subflow of the same
// connection received stallWifiBytes, and the kernel reinjects what it held on WiFi.
const (
	// stallAfter: Linux's minimum retransmission timeout is 200 ms (TCP_RTO_MIN), so a subflow with data in
	// flight that receives nothing for a second has waited through at least two timeouts (0.2 + 0.4 s), and a
	// live LTE link delivers a packet every round trip (70 ms on the testbed's LTE).
	stallAfter = time.Second
	// stallWifiBytes: the connection was busy meanwhile, so the cellular subflow's silence is not an idle page.
	stallWifiBytes = 64 << 10
	// stallPoll and stallIdle: how often an open subflow is read while its connection receives, and while it
	// is idle (a kept-alive connection between pages).
	stallPoll = 100 * time.Millisecond
	stallIdle = time.Second
)

// delivered is a cellular subflow's progress counter: bytes received in order plus data segments received at
// all. After an outage the server's retransmissions and the data sent behind them arrive out of order, and
// bytes_received stays put until the first hole is filled, a retransmission timeout or more later; counted by
// bytes alone, a link that delivers again looks silent (held-out check at e3f028f, T-Mobile trace: three subflows
// closed as stalled 2.3 s into a load, after a 0.5 s outage, the page 7.3 s against mp-always's 4.7 s).
func delivered(s *diag.Sock) uint64 { return s.BytesReceived + uint64(s.DataSegsIn) }

// linkWatch follows the cellular link as a whole, through the subflows the helper opened on it.
type linkWatch struct {
	rx map[flow]uint64 // each open cellular subflow's progress (delivered) at the previous poll
	at time.Time       // the last poll at which one of them had received more; zero if none ever did
}

// observe takes one poll's reading of the open cellular subflows. A subflow first seen with data counts as
// progress: it received since it joined.
func (l *linkWatch) observe(now time.Time, rx map[flow]uint64) {
	for f, n := range rx {
		if n != l.rx[f] { // != and not >: delivered wraps with its 32-bit segment count
			l.at = now
		}
	}
	l.rx = rx
}

// silent says how long no cellular subflow has received a byte; forever if none ever did.
func (l *linkWatch) silent(now time.Time) time.Duration {
	if l.at.IsZero() {
		return time.Duration(math.MaxInt64)
	}
	return now.Sub(l.at)
}

// stallWatch follows one connection's cellular and WiFi subflows' received bytes.
type stallWatch struct {
	since    time.Time // the cellular subflow's last progress, or the first observation
	cellRx   uint64    // its progress (delivered) then
	wifiRx   uint64    // the WiFi subflow's bytes then
	lastWifi uint64    // the WiFi subflow's bytes at the previous observation
	lastCell uint64
}

// observe takes one reading of the cellular subflow's progress (delivered) and the WiFi subflow's received bytes at
// now. stalled: the cellular subflow has received nothing for stallAfter while WiFi received stallWifiBytes; busy:
// either subflow received since the last reading.
func (w *stallWatch) observe(now time.Time, cellRx, wifiRx uint64) (stalled, busy bool) {
	if w.since.IsZero() {
		w.since, w.cellRx, w.wifiRx, w.lastWifi, w.lastCell = now, cellRx, wifiRx, wifiRx, cellRx
		return false, true
	}
	busy = cellRx != w.lastCell || wifiRx != w.lastWifi
	w.lastWifi, w.lastCell = wifiRx, cellRx
	if cellRx != w.cellRx || wifiRx < w.wifiRx {
		w.since, w.cellRx, w.wifiRx = now, cellRx, wifiRx
		return false, busy
	}
	return now.Sub(w.since) >= stallAfter && wifiRx-w.wifiRx >= stallWifiBytes, busy
}

// silent is how long the cellular subflow has received nothing, as of the last observation.
func (w *stallWatch) silent(now time.Time) time.Duration {
	if w.since.IsZero() {
		return 0
	}
	return now.Sub(w.since)
}

// addrEntry is one address's policy in polOrder.
type addrEntry struct {
	addr netip.Addr
	p    addrPolicy
}

// setAddr sets one address's policy, forgetting the least recently set address beyond maxAddrPolicies. Caller
// holds u.mu.
func (u *userspaceBackend) setAddr(a netip.Addr, p addrPolicy) {
	if e := u.policy[a]; e != nil {
		e.Value.(*addrEntry).p = p
		u.polOrder.MoveToFront(e)
		return
	}
	if u.polOrder.Len() >= maxAddrPolicies {
		old := u.polOrder.Back()
		delete(u.policy, old.Value.(*addrEntry).addr)
		u.polOrder.Remove(old)
		u.stats.AddrsForgotten++
	}
	u.policy[a] = u.polOrder.PushFront(&addrEntry{addr: a, p: p})
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

func (u *userspaceBackend) SetOrigin(p OriginPolicy) error {
	ap := addrPolicy{multipath: p.Multipath, theta1: p.Theta1, theta2: noCap, uid: p.UID, group: p.Group, preferCell: p.PreferCellular}
	if p.Theta2 != nil {
		ap.theta2 = *p.Theta2
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, a := range p.Addrs {
		u.setAddr(a, ap)
	}
	// Connections that opened before the decision arrived follow it too. One that turns an address single path
	// closes the cellular subflows its owner's open connections to it have (say, opened under another page's
	// decision that reported the address first): the later, own decision holds.
	var errs []error
	sums := u.groupRx()
	for tok, c := range u.conns {
		if !ap.multipath && c.subflow.IsValid() && c.uidKnown && c.uid == ap.uid && slices.Contains(p.Addrs, c.dst.Addr()) {
			u.pm.SetDeadline(time.Now().Add(2 * time.Second))
			if err := u.pm.SubflowDestroy(tok, c.subflow, c.dst); err != nil {
				errs = append(errs, err)
			}
			c.rec.Multipath = false
		}
		u.maybeCreate(tok, c, sums)
	}
	return errors.Join(errs...)
}

// connEntry is one connection's own policy: whose it is (p.uid), when it was set, and whether an MPTCP connection
// with its two ends has been seen since (bound); an entry that is never bound is dropped after connPolUnbound.
type connEntry struct {
	p     addrPolicy
	at    time.Time
	bound bool
}

// connPolUnbound is how long a per-connection policy waits for its MPTCP connection. The caller sets it for a
// connection that exists already (the server checks its owner through sock_diag), so its CREATED event is at most
// on its way; a connection that never becomes an MPTCP one (a proxy leg that fell back to TCP) would otherwise
// leave its policy behind for good, for the next connection that happens to have the same ends.
const connPolUnbound = 5 * time.Second

// bindConnPol marks the policy of a new MPTCP connection's two ends as taken by it, or drops it when it waited
// longer than connPolUnbound: then it was set for another connection that has gone. It also drops every other
// entry that waited too long. Caller holds u.mu.
func (u *userspaceBackend) bindConnPol(f flow, now time.Time) {
	for k, e := range u.connPol {
		if !e.bound && now.Sub(e.at) > connPolUnbound {
			delete(u.connPol, k)
		}
	}
	if e, ok := u.connPol[f]; ok {
		e.bound = true
		u.connPol[f] = e
	}
}

// SetConn gives one connection its own decision. The connection may already be known (the usual order: the
// caller learns its local port once connected) or not yet (its CREATED event is still on the way).
func (u *userspaceBackend) SetConn(p ConnPolicy) error {
	ap := addrPolicy{multipath: p.Multipath, theta1: p.Theta1, theta2: noCap, uid: p.UID, group: p.Group, preferCell: p.PreferCellular}
	if p.Theta2 != nil {
		ap.theta2 = *p.Theta2
	}
	key := flow{p.Local, p.Remote}
	now := time.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.bindConnPol(flow{}, now) // drops the entries that waited too long
	if _, ok := u.connPol[key]; !ok && len(u.connPol) >= MaxConnPolicies {
		// Entries of connections that never showed up go first.
		open := map[flow]bool{}
		for _, c := range u.conns {
			open[flow{c.initial, c.dst}] = true
		}
		for k := range u.connPol {
			if !open[k] {
				delete(u.connPol, k)
			}
		}
		if len(u.connPol) >= MaxConnPolicies {
			return errorf(CodeBadArgument, "more than %d connections with their own policy", MaxConnPolicies)
		}
	}
	e := connEntry{p: ap, at: now}
	for _, c := range u.conns {
		if c.initial == p.Local && c.dst == p.Remote && (!c.uidKnown || c.uid == p.UID) {
			e.bound = true
		}
	}
	u.connPol[key] = e
	for tok, c := range u.conns {
		if c.initial == p.Local && c.dst == p.Remote {
			u.maybeCreate(tok, c, nil)
		}
	}
	return nil
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
		"open_connections": len(u.conns), "stats": u.stats, "connections": recs}
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
