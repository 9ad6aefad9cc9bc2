package actuate

import (
	"net/netip"
	"time"
)

// What the userspace backend keeps of each connection, and what status shows of it.

// Bounds of the backend's maps: whatever clients send, its memory stays bounded. An address forgotten (the least
// recently set goes first) falls back to no policy, single path, the safe default; a browsing session's recent
// origins hold a few hundred addresses. Connections are the kernel's: the bound only matters if CLOSED events
// were lost (a netlink overrun), and then the oldest record goes.
const (
	maxAddrPolicies = 8192
	maxConnRecords  = 65536
)

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
	// RcvbufAtRequest: the connection's receive buffer when the subflow was asked for (0: not read, the gate
	// off); GatedNS: when the receive-buffer gate first held the join back (0: never). See userspace_rcvbuf.go.
	RcvbufAtRequest uint32 `json:"rcvbuf_at_request,omitempty"`
	GatedNS         int64  `json:"gated_ns,omitempty"`
	CellBytes       uint64 `json:"cell_bytes,omitempty"`
	Capped          bool   `json:"capped,omitempty"`
	CappedNS        int64  `json:"capped_ns,omitempty"`
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
	waiting     bool  // multipath, but the connection has not received θ1 bytes yet, or the gate holds it
	gated       bool  // the receive-buffer gate held its join back at least once (rcvbufGated)
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
	RcvbufWaits         int    `json:"rcvbuf_waits"` // connections whose subflow waited for their receive buffer to grow
	Capped              int    `json:"capped"`       // cellular subflows closed at θ2
	Stalled             int    `json:"stalled"`      // cellular subflows closed because they stalled (stallWatch)
	Polls               int    `json:"polls"`        // sock_diag reads
	PollErrors          int    `json:"poll_errors"`
	AddrsForgotten      int    `json:"addrs_forgotten"` // addresses whose policy went beyond maxAddrPolicies
	PrimaryBackups      int    `json:"primary_backups"` // initial subflows marked backup (PreferCellular)
	PrimaryBackupErrors int    `json:"primary_backup_errors"`
	LastError           string `json:"last_error,omitempty"`
}
