package actuate

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/native-host/diag"
)

// The receive-buffer gate: a cellular subflow joins a connection only once the kernel has grown the connection's
// receive buffer past the size every new connection starts with.
//
// Why: an MPTCP connection moves data off its subflows only while the data it holds, in order or not, takes at
// most its receive buffer (net/mptcp/protocol.c, __mptcp_move_skbs). A fast cellular subflow joining a slow WiFi
// one delivers data ahead of what WiFi still owes; if that out-of-order data fills the buffer before autotuning
// first grows it, the in-order data that would fill the hole can never move up, the application has nothing to
// read, and the connection waits for ever while the server retransmits into the subflow's queue. In the testbed
// (Linux 6.18, poor-wifi-fast-lte: 2 Mbit/s WiFi beside 33.9 Mbit/s LTE, mp-rule, shop-product-2 and
// news-gallery-1) 3 of 38 loads hung so. Each stuck connection had its receive buffer still at tcp_rmem's default,
// 131072 bytes, held 132608, its rcv_nxt stood still and its WiFi subflow queued megabytes; raising one such
// socket's SO_RCVBUF from outside let its page finish at once. Each had received about 2 kB when its subflow was
// asked for: a third party's connection, opened early, joined when the page's θ1 group passed θ1. On connections
// that finished, the buffer grew within 0.3 s of the join on the page's busy connection and 0.5-1.9 s after it
// on such an idle one (ss -M every 0.1 s over 30 loads). Once autotuning has begun, it grows the buffer with the
// out-of-order data too, so the gate waits for its first step. With the gate, 0 of 30 such loads hung.
//
// The gate costs the time until that first step: a connection already receiving passes it within a round trip
// or two, an idle one only once its own transfer has run a while. Beside the fast LTE the gated loads took
// 0.34-0.35 s longer at the median (e2e/RESULTS.md, Hangs).

// gatePoll is how often a connection held back by the gate is read: the buffer grows within a round trip of
// the data flowing, and a join comes at most this much after it.
const gatePoll = 20 * time.Millisecond

// rmemPath holds net.ipv4.tcp_rmem: min, default, max. The default is every new MPTCP connection's receive buffer
// (mptcp_init_sock). Read once, at start, and never written.
const rmemPath = "/proc/sys/net/ipv4/tcp_rmem"

// initialRcvbuf reads the receive buffer a new connection starts with; 0 (no gate) if it cannot be read.
func initialRcvbuf(log func(string, ...any)) uint32 {
	b, err := os.ReadFile(rmemPath)
	if err == nil {
		if v, ok := parseRmemDefault(string(b)); ok {
			return v
		}
	}
	log("no receive-buffer gate: net.ipv4.tcp_rmem unreadable; subflows join at θ1", "path", rmemPath, "err", err)
	return 0
}

// parseRmemDefault takes tcp_rmem's second field ("4096\t131072\t6291456\n").
func parseRmemDefault(s string) (uint32, bool) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[1], 10, 32)
	return uint32(v), err == nil && v > 0
}

// rcvbufGated says whether the gate holds back token's join: the connection has received data already (a late
// join), and its receive buffer (msks, this poll's read; nil outside a poll) has not grown past rcvbuf0 yet, or
// was not read. It records the wait. A connection that has received nothing joins at once: both subflows then
// start together, as under the in-kernel path manager (mp-always), which hung in none of 177 loads of the large
// pages beside the fast LTE. It is not proof against the deadlock: mp-always hung in 2 of 215 such loads beside a
// 1.5 Mbit/s hotspot and a 50 Mbit/s LTE (held-out runs), and holding every join until the buffer grows would
// cost a slow WiFi's first second of multipath on every page. Caller holds u.mu.
func (u *userspaceBackend) rcvbufGated(token uint32, c *conn, msks map[uint32]diag.MPTCPSock) bool {
	if u.rcvbuf0 == 0 || c.rx == 0 {
		return false
	}
	if s, ok := msks[token]; ok && s.RcvBuf > u.rcvbuf0 {
		c.rec.RcvbufAtRequest = s.RcvBuf
		return false
	}
	if !c.gated {
		c.gated = true
		c.rec.GatedNS = time.Now().UnixNano()
		u.stats.RcvbufWaits++
	}
	return true
}

// readMPTCP reads every connection's receive buffer for this poll, by token; nil if no connection is held back by
// the gate, or if the kernel has no MPTCP socket diagnostics (then the gate is off from now on, and says so once).
// It runs without u.mu.
func (u *userspaceBackend) readMPTCP(need bool, buf []diag.MPTCPSock) ([]diag.MPTCPSock, map[uint32]diag.MPTCPSock) {
	if !need {
		return buf, nil
	}
	buf, err := u.diag.DumpMPTCP(buf[:0])
	if err != nil {
		u.mu.Lock()
		u.rcvbuf0 = 0
		u.stats.LastError = err.Error()
		u.mu.Unlock()
		u.log("no receive-buffer gate: MPTCP socket diagnostics unavailable (mptcp_diag); subflows join at θ1", "err", err)
		return buf, nil
	}
	m := make(map[uint32]diag.MPTCPSock, len(buf))
	for _, s := range buf {
		m[s.Token] = s
	}
	return buf, m
}
