package host

import (
	"context"
	"time"

	"github.com/mpsurf/mpsurf/native-host/decide"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// StatusBody is the status reply: the required fields, what the decision pipeline measures and remembers, and
// the health of the privileged helper and of the browser's MPTCP wrapping.
type StatusBody struct {
	protocol.StatusReply
	decide.Status
	Actuator     *ActuatorHealth `json:"actuator,omitempty"`
	BrowserMPTCP *BrowserMPTCP   `json:"browser_mptcp,omitempty"`
}

func (s *Server) status(req protocol.Request) protocol.Reply {
	snap, perr := s.snapshot()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	body := StatusBody{StatusReply: protocol.StatusReply{
		Host:      protocol.HostName,
		Version:   Version,
		Protocol:  protocol.Version,
		PID:       s.pid,
		UptimeMS:  time.Since(s.start).Milliseconds(),
		Decisions: s.decisions.Load(),
		Policy:    snap.Policy,
	}}
	body.Status = s.dec.Status(context.Background())
	act, mp := s.act.health(), browserMPTCP()
	body.Actuator, body.BrowserMPTCP = &act, &mp
	return protocol.OK(req, body)
}
