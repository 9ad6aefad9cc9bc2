package host

import (
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

func (s *Server) status(req protocol.Request) protocol.Reply {
	snap, perr := s.snapshot()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	return protocol.OK(req, protocol.StatusReply{
		Host:      protocol.HostName,
		Version:   Version,
		Protocol:  protocol.Version,
		PID:       s.pid,
		UptimeMS:  time.Since(s.start).Milliseconds(),
		Decisions: s.decisions.Load(),
		Policy:    snap.Policy,
	})
}
