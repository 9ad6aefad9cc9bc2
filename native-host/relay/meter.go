package relay

import (
	"net"
	"net/netip"
	"sync"

	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// meter follows one upstream connection's subflows and the bytes each carried (received + acknowledged, as the
// helper counts them against θ2), keeping the highest reading of each: a subflow that closed is no longer listed.
type meter struct {
	raw      *net.TCPConn
	cellular func(netip.Addr) bool

	mu       sync.Mutex
	subflows map[netip.AddrPort]uint64
	fellBack bool // the proxy did not speak MPTCP: one TCP connection
	tcpBytes uint64
	mptcp    bool // MPTCP_FULL_INFO answered at least once
	maxSeen  int  // most subflows seen at once
}

func newMeter(raw *net.TCPConn, cellular func(netip.Addr) bool) *meter {
	if cellular == nil {
		cellular = func(netip.Addr) bool { return false }
	}
	return &meter{raw: raw, cellular: cellular, subflows: map[netip.AddrPort]uint64{}}
}

// read takes one reading of the socket's counters.
func (m *meter) read() {
	rc, err := m.raw.SyscallConn()
	if err != nil {
		return
	}
	var fi mptcp.FullInfo
	var ferr error
	var ti mptcp.TCPInfo
	var terr error
	rc.Control(func(fd uintptr) {
		fi, ferr = mptcp.GetFullInfo(int(fd))
		if ferr != nil {
			ti, terr = tcpInfo(int(fd))
		}
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	if ferr == nil && fi.MPTCP.Flags&mptcp.InfoFlagFallback == 0 {
		m.mptcp = true
		m.maxSeen = max(m.maxSeen, len(fi.Subflows))
		for _, sf := range fi.Subflows {
			n := sf.TCP.BytesReceived + sf.TCP.BytesAcked
			if n > m.subflows[sf.Local] {
				m.subflows[sf.Local] = n
			}
		}
		return
	}
	if terr == nil {
		m.fellBack = true
		m.tcpBytes = max(m.tcpBytes, ti.BytesReceived+ti.BytesAcked)
	}
}

// totals splits what was counted into the cellular interface's subflows and the others.
func (m *meter) totals() (cell, other uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for local, n := range m.subflows {
		if m.cellular(local.Addr()) {
			cell += n
		} else {
			other += n
		}
	}
	if len(m.subflows) == 0 && m.fellBack {
		local := m.raw.LocalAddr().(*net.TCPAddr).AddrPort()
		if m.cellular(local.Addr().Unmap()) {
			cell = m.tcpBytes
		} else {
			other = m.tcpBytes
		}
	}
	return cell, other
}

// subflowsSeen reports whether the connection is MPTCP and how many subflows it had at most, and whether one of
// them left from a cellular address.
func (m *meter) subflowsSeen() (isMPTCP bool, most int, cellular bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for local := range m.subflows {
		if m.cellular(local.Addr()) {
			cellular = true
		}
	}
	return m.mptcp, m.maxSeen, cellular
}
