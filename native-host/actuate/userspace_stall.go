package actuate

import (
	"math"
	"time"

	"github.com/mpsurf/mpsurf/native-host/diag"
)

// Closing a cellular subflow: at θ2, or once it has stalled while WiFi carries the connection.

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
		// server sending this connection's data over WiFi. Closing such a subflow costs the page: in a decisions
		// grid, of five loads where the helper closed subflows as stalled, four had the cellular link delivering
		// 60-500 kB in the second before, and those pages took 0.2-2.0 s longer than mp-always's; the fifth, in a
		// 1 s outage of the AT&T trace, took 3.9 s less (e2e/results/ARCHIVE-2026.md, Decisions).
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
// bytes alone, a link that delivers again looks silent: on the T-Mobile trace a held-out check saw three subflows
// closed as stalled 2.3 s into a load, after a 0.5 s outage, the page 7.3 s against mp-always's 4.7 s
// (e2e/results/ARCHIVE-2026.md, Decisions).
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
