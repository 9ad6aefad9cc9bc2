package relay

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// DefaultSpareIdle is how long the spare connection waits for a tunnel before the relay closes it. A page's
// tunnels, its third parties' and the next click's come within seconds of each other; past half a minute without a
// new tunnel the user is reading, and the spare would only hold a socket at the proxy. Well inside Squid's own
// limit for a connection that sends no request (request_start_timeout, 5 minutes by default), so the proxy does not
// close it first.
const DefaultSpareIdle = 30 * time.Second

// spare is one connection to the proxy, TCP (MPTCP) and TLS done, no CONNECT sent yet: a new tunnel takes it and
// skips the handshakes' round trips, which made small pages through the proxy load about 0.25 s slower than
// direct (e2e/results/ARCHIVE-2026.md#proxy). There is at most one, made only after a tunnel (the user is browsing) and
// closed after SpareIdle without one.
type spare struct {
	conn *tls.Conn
	raw  *net.TCPConn
	idle *time.Timer // closes it when no tunnel took it
}

// takeSpare hands out the spare connection, if there is one.
func (r *Relay) takeSpare() (*tls.Conn, *net.TCPConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.spare
	if s == nil {
		return nil, nil
	}
	r.spare = nil
	s.idle.Stop()
	return s.conn, s.raw
}

// refill makes a new spare connection in the background, unless there is one, one is being made, the relay is
// closing, spares are off, or the proxy was just found down (then tunnels fail fast and a spare would only add a
// connection attempt).
func (r *Relay) refill() {
	if r.cfg.SpareIdle < 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.spare != nil || r.filling || (r.st.State == "down" && time.Since(r.downAt) < downFor) {
		return
	}
	r.filling = true
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Budget)
		conn, raw, err := r.connect(ctx)
		cancel()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.filling = false
		if err != nil {
			// Not a tunnel's failure: the next tunnel dials for itself and finds out what the proxy says.
			r.cfg.Log.Debug("spare connection not made", "err", err)
			return
		}
		if r.closed {
			conn.Close()
			return
		}
		s := &spare{conn: conn, raw: raw}
		s.idle = time.AfterFunc(r.cfg.SpareIdle, func() {
			r.mu.Lock()
			mine := r.spare == s // else a tunnel took it just now
			if mine {
				r.spare = nil
			}
			r.mu.Unlock()
			if mine {
				s.conn.Close()
			}
		})
		r.spare = s
	}()
}

// dropSpare closes the spare connection (the relay is closing).
func (r *Relay) dropSpare() {
	if c, _ := r.takeSpare(); c != nil {
		c.Close()
	}
}
