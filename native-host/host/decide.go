package host

import (
	"context"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// decide answers a navigation: parse, decide (single path while multipath is paused), carry the decision out,
// log it, reply. The reply goes out once the decision is in the log.
func (s *Server) decide(req protocol.Request) protocol.Reply {
	d, perr := protocol.ParseDecide(req.Body)
	if perr != nil {
		s.log.Warn("decide refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	if _, perr := s.snapshot(); perr != nil {
		return protocol.Fail(req, perr)
	}
	ctx := context.Background()
	dec, err := s.dec.Decide(ctx, decide.Request{Origin: d.Origin, Path: d.Path, Tab: d.Tab, Nav: d.Nav, Paused: s.carry.Paused()})
	if err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodePolicyUnavailable, "%v", err))
	}
	s.carry.Carry(ctx, &dec)
	body := dec.Body()
	s.logDecision(req, dec, body)
	s.decisions.Add(1)
	return protocol.OK(req, body)
}
