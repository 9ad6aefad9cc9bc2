package origin

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// subflowCounters are one subflow's cumulative send counters (tcp_info).
type subflowCounters struct {
	ID            uint32
	Local, Remote netip.AddrPort
	Acked         uint64 // tcpi_bytes_acked
	Sent          uint64 // tcpi_bytes_sent, retransmissions included
	Retrans       uint64 // tcpi_bytes_retrans
}

// SubflowLine is one subflow in a log line: counters since the response started (request
// lines) or since the connection opened (connection lines). BytesSent is what the path
// carried (retransmissions included, TLS records as written); BytesAcked what the client
// acknowledged on that subflow, which at a response's end can lag: a data-level ack on
// one subflow may cover bytes another subflow has not had acknowledged yet.
type SubflowLine struct {
	ID           uint32 `json:"id"`
	Local        string `json:"local"`
	Remote       string `json:"remote"`
	Path         string `json:"path,omitempty"` // client interface named by --paths
	BytesAcked   uint64 `json:"bytes_acked"`
	BytesSent    uint64 `json:"bytes_sent"`
	BytesRetrans uint64 `json:"bytes_retrans"`
}

// trackedConn is an accepted socket that counts what the server writes and reads the
// kernel's per-subflow counters on demand.
type trackedConn struct {
	net.Conn
	raw      syscall.RawConn
	id       uint64
	listener string
	opened   time.Time
	soProto  int
	srv      *Server
	written  atomic.Uint64 // bytes handed to the socket (TLS records included)

	// readMu orders reads: without it a slower, older reading could be merged after a
	// newer one and move a response's start back in time.
	readMu sync.Mutex

	mu        sync.Mutex
	closed    bool
	base      uint64 // acknowledged bytes at accept (TCP counts its SYN)
	seen      map[uint32]subflowCounters
	seenOrder []uint32
	mptcp     bool
	reinject  uint64 // mptcpi_bytes_retrans: data sent again, on the same or another subflow
	infoErr   string
	alpn      string
	requests  int
	bodyBytes int64
	active    map[*response]struct{}
	pending   []*response
	watching  bool
	closeOnce sync.Once
	closeErr  error
}

// response is one request's accounting from its start to the acknowledgement of its
// last byte.
type response struct {
	line     RequestLine
	start    map[uint32]subflowCounters
	reinject uint64 // c.reinject at the start
	target   uint64 // c.written when the handler finished
	deadline time.Time
	conc     int
}

func newTrackedConn(srv *Server, listener string, tc *net.TCPConn) *trackedConn {
	c := &trackedConn{
		Conn:     tc,
		id:       srv.nextConn.Add(1),
		listener: listener,
		opened:   time.Now(),
		srv:      srv,
		seen:     map[uint32]subflowCounters{},
		active:   map[*response]struct{}{},
	}
	var err error
	if c.raw, err = tc.SyscallConn(); err == nil {
		c.raw.Control(func(fd uintptr) {
			c.soProto, err = socketProtocol(int(fd))
		})
	}
	if err != nil {
		c.infoErr = err.Error()
	}
	if acked, err := c.read(); err == nil {
		c.base = acked
	}
	return c
}

func (c *trackedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written.Add(uint64(n))
	return n, err
}

// read takes the kernel's counters, merges them into c.seen and returns the bytes the
// peer acknowledged so far: MPTCP data-level bytes_acked, or the TCP socket's.
func (c *trackedConn) read() (uint64, error) {
	if c.raw == nil {
		return 0, errors.New("no socket")
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	var (
		fi         FullInfo
		ti         TCPInfo
		ferr, terr error
		isMPTCP    bool
	)
	cerr := c.raw.Control(func(fd uintptr) {
		if c.soProto == ipprotoMPTCP {
			fi, ferr = getFullInfo(int(fd))
			if ferr == nil && fi.MPTCP.Flags&mptcpInfoFlagFallback == 0 {
				isMPTCP = true
				return
			}
		}
		ti, terr = getTCPInfo(int(fd))
	})
	if cerr != nil {
		return 0, cerr
	}
	if !isMPTCP && terr != nil {
		return 0, terr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mptcp = isMPTCP
	if ferr != nil {
		c.infoErr = "MPTCP_FULL_INFO: " + ferr.Error()
	}
	if !isMPTCP {
		local, _ := netip.ParseAddrPort(c.LocalAddr().String())
		remote, _ := netip.ParseAddrPort(c.RemoteAddr().String())
		c.merge(subflowCounters{Local: unmap(local), Remote: unmap(remote), Acked: ti.BytesAcked, Sent: ti.BytesSent, Retrans: ti.BytesRetrans})
		return ti.BytesAcked, nil
	}
	c.reinject = fi.MPTCP.BytesRetrans
	for _, s := range fi.Subflows {
		if s.Remote.Port() == 0 {
			// A subflow being torn down: once the peer closes, the kernel resets the first
			// subflow (id 0, peer port 0, counters zeroed) before releasing it. Its last
			// real counters are already in c.seen.
			continue
		}
		c.merge(subflowCounters{ID: s.ID, Local: s.Local, Remote: s.Remote, Acked: s.TCP.BytesAcked, Sent: s.TCP.BytesSent, Retrans: s.TCP.BytesRetrans})
	}
	return fi.MPTCP.BytesAcked, nil
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }

// merge keeps the last counters of every subflow ever seen: the kernel stops listing a
// subflow once it closes, but the bytes it carried still count.
func (c *trackedConn) merge(s subflowCounters) {
	if _, ok := c.seen[s.ID]; !ok {
		c.seenOrder = append(c.seenOrder, s.ID)
	}
	c.seen[s.ID] = s
}

func (c *trackedConn) copySeen() map[uint32]subflowCounters {
	m := make(map[uint32]subflowCounters, len(c.seen))
	for k, v := range c.seen {
		m[k] = v
	}
	return m
}

// begin starts a response's accounting. The same reading first ends the responses
// already acknowledged, so a connection serving one response at a time (HTTP/1.1) splits
// its bytes exactly at request boundaries rather than at the watcher's next poll.
func (c *trackedConn) begin(line RequestLine) *response {
	acked, err := c.read()
	c.mu.Lock()
	var done []RequestLine
	if len(c.pending) > 0 {
		done = c.complete(acked, err == nil, false)
	}
	r := &response{line: line, start: c.copySeen(), reinject: c.reinject}
	c.active[r] = struct{}{}
	// In flight: being written, or written and not yet acknowledged.
	n := len(c.active) + len(c.pending)
	for a := range c.active {
		a.conc = max(a.conc, n)
	}
	for _, p := range c.pending {
		p.conc = max(p.conc, n)
	}
	c.requests++
	if line.ALPN != "" {
		c.alpn = line.ALPN
	}
	c.mu.Unlock()
	c.srv.logLines(done)
	return r
}

// acctTimeout bounds the wait for a response's acknowledgement (a 1 MB object on seed
// 001's 3G path takes about 9 s).
const acctTimeout = 60 * time.Second

// pollInterval is how often a busy connection's counters are read: a fraction of the
// testbed's smallest RTT (50 ms on WiFi, seed 000 Table 2).
const pollInterval = 5 * time.Millisecond

// finish records that the handler wrote everything; the log line follows once the peer
// has acknowledged all bytes written so far.
func (c *trackedConn) finish(r *response) {
	target := c.written.Load()
	c.mu.Lock()
	c.bodyBytes += r.line.Bytes
	delete(c.active, r)
	if c.closed {
		c.mu.Unlock()
		r.line.Acct = "closed"
		c.srv.logLine(r.line)
		return
	}
	r.target = target
	r.deadline = time.Now().Add(acctTimeout)
	c.pending = append(c.pending, r)
	start := !c.watching
	c.watching = true
	c.mu.Unlock()
	if start {
		go c.watch()
	}
}

func (c *trackedConn) watch() {
	for {
		time.Sleep(pollInterval)
		acked, err := c.read()
		c.mu.Lock()
		if c.closed {
			c.watching = false
			c.mu.Unlock()
			return // close completed the rest
		}
		done := c.complete(acked, err == nil, false)
		if len(c.pending) == 0 {
			c.watching = false
		}
		stop := !c.watching
		c.mu.Unlock()
		c.srv.logLines(done)
		if stop {
			return
		}
	}
}

// complete fills in and removes the pending responses whose bytes are all acknowledged,
// or all of them when closing. Called with c.mu held.
func (c *trackedConn) complete(acked uint64, ok, closing bool) []RequestLine {
	now := time.Now()
	var done []RequestLine
	keep := c.pending[:0]
	for _, r := range c.pending {
		acct := ""
		switch {
		case ok && acked-c.base >= r.target:
			acct = "acked"
		case closing:
			acct = "closed"
		case now.After(r.deadline):
			acct = "timeout"
		default:
			keep = append(keep, r)
			continue
		}
		l := r.line
		l.Done = now.UnixNano()
		l.Acct = acct
		l.MPTCP = c.mptcp
		l.Concurrent = r.conc
		l.Subflows, l.SubflowBytes = c.srv.subflowLines(c.seenOrder, c.seen, r.start)
		l.Reinjected = sub(c.reinject, r.reinject)
		done = append(done, l)
	}
	clear(c.pending[len(keep):])
	c.pending = keep
	return done
}

// Close reads the counters one last time, logs the pending responses and the connection,
// then closes the socket.
func (c *trackedConn) Close() error {
	c.closeOnce.Do(func() {
		acked, err := c.read()
		c.mu.Lock()
		c.closed = true
		done := c.complete(acked, err == nil, true)
		subs, total := c.srv.subflowLines(c.seenOrder, c.seen, nil)
		line := ConnLine{
			Type:         "conn",
			Time:         time.Now().UnixNano(),
			Opened:       c.opened.UnixNano(),
			Conn:         c.id,
			Listener:     c.listener,
			Local:        c.LocalAddr().String(),
			Remote:       c.RemoteAddr().String(),
			SOProtocol:   c.soProto,
			MPTCP:        c.mptcp,
			ALPN:         c.alpn,
			Requests:     c.requests,
			Bytes:        c.bodyBytes,
			Written:      c.written.Load(),
			Subflows:     subs,
			SubflowBytes: total,
			Reinjected:   c.reinject,
			InfoError:    c.infoErr,
		}
		if err == nil {
			line.Acked = acked - c.base
		}
		// Bytes written that no reading of a subflow covers: sent after the last reading
		// of a subflow the kernel had already dropped (a peer that closes first).
		carried := total - c.reinject
		for _, s := range subs {
			carried -= s.BytesRetrans
		}
		line.Unaccounted = sub(line.Written, carried)
		c.mu.Unlock()
		c.srv.logLines(done)
		c.srv.logLine(line)
		c.closeErr = c.Conn.Close()
	})
	return c.closeErr
}

// trackingListener wraps accepted sockets in trackedConns.
type trackingListener struct {
	*net.TCPListener
	srv  *Server
	name string
}

func (l *trackingListener) Accept() (net.Conn, error) {
	tc, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	return newTrackedConn(l.srv, l.name, tc), nil
}
