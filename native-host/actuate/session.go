package actuate

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/mpsurf/mpsurf/native-host/limit"
)

// hello starts a session on the client's connection. One client holds the session at a time, and no other
// process may take a live one over: a hello from another connection is refused with CodeBusy while the
// session's connection is open and its lease held (or its first lease not yet due). The old session gives way
// as soon as its connection closes (its host exited, killed or not: the kernel closes the socket) or its lease
// lapses (its host hung; leaseWatch then ends it). So when the browser restarts, the new host's hello succeeds
// once the old host is gone, within one lease if it hangs, and the changes the old session held are undone
// before the new one starts.
func (s *Server) hello(cl *client, resp *Response) (any, error) {
	b := make([]byte, sessionLen/2)
	rand.Read(b)
	sess := hex.EncodeToString(b)
	now := time.Now()
	s.mu.Lock()
	if o := s.owner; s.session != "" && o != cl && !o.closed.Load() &&
		(s.expiry.After(now) || now.Sub(s.began) < MinLeaseMS*time.Millisecond) {
		left := max(s.expiry.Sub(now), s.began.Add(MinLeaseMS*time.Millisecond).Sub(now))
		s.mu.Unlock()
		return nil, errorf(CodeBusy, "another client (pid %d, uid %d) holds a live session; it ends when that client's connection closes, or in %d ms unless renewed",
			o.peer.Pid, o.peer.Uid, left.Milliseconds())
	}
	old := s.session
	held := !s.expiry.IsZero()
	s.session, s.owner, s.began, s.expiry = sess, cl, now, time.Time{}
	s.sessLimit = limit.Full(s.cfg.Burst, now)
	s.mu.Unlock()
	if old != "" && held {
		if err := s.release(); err != nil {
			s.log.Warn("release on new session", "err", err)
		}
	}
	resp.Session, resp.Backend = sess, s.backend.Name()
	return map[string]any{"lease_ms_min": MinLeaseMS, "lease_ms_max": MaxLeaseMS}, nil
}
