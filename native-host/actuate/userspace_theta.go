package actuate

import (
	"time"

	"github.com/mpsurf/mpsurf/native-host/diag"
	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// θ polling: the userspace backend reads the byte counters of connections waiting for θ1, as often as they could
// get near it, and opens their cellular subflow once they (or their group) have received θ1 bytes.

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

// maybeCreate opens the cellular subflow if the connection's destination belongs to a multipath origin, the
// connection, or with the rest of its group (groupRx, nil: summed here), has received θ1 bytes, and its receive
// buffer has grown (rcvbufGated, read into msks by the poll loop; nil: not read); until then it leaves the
// connection to the poll loop. Caller holds u.mu.
func (u *userspaceBackend) maybeCreate(token uint32, c *conn, sums map[group]uint64, msks map[uint32]diag.MPTCPSock) {
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
	if u.rcvbufGated(token, c, msks) {
		c.waiting = true
		u.kick()
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
			buf, next = u.poll(buf[:0], time.Now)
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

// poll reads the counters once and acts on them: opens the subflows whose connection has now received θ1
// bytes, closes those that have carried θ2. It returns how long until the next read (0: none needs one). clock
// reads the time the counters are taken at (time.Now; tests give their own).
func (u *userspaceBackend) poll(buf []diag.Sock, clock func() time.Time) ([]diag.Sock, time.Duration) {
	u.mu.Lock()
	need, gated := false, false
	for _, c := range u.conns {
		need = need || c.needsPoll()
		gated = gated || (c.gated && c.waiting)
	}
	u.mu.Unlock()
	if !need {
		return buf, 0
	}
	// The dumps run without the lock so that events are never held up by them.
	var msks map[uint32]diag.MPTCPSock
	u.mbuf, msks = u.readMPTCP(gated, u.mbuf)
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
	now := clock()
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
			u.maybeCreate(tok, c, sums, msks)
			if c.waiting && c.gated {
				// An idle connection's buffer does not grow: it is read as seldom as one far from θ1.
				wait = gatePoll
				if !r.first && r.rate == 0 {
					wait = pollIdle
				}
			} else if c.waiting && !r.first { // the first read has no rate yet: the next comes soon
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
