package host

import (
	"context"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

func (s *Server) decide(req protocol.Request) protocol.Reply {
	d, perr := protocol.ParseDecide(req.Body)
	if perr != nil {
		s.log.Warn("decide refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	if _, perr := s.snapshot(); perr != nil {
		return protocol.Fail(req, perr)
	}
	// Single path while the user (or a cap) paused multipath.
	dec, err := s.dec.Decide(context.Background(), decide.Request{Origin: d.Origin, Path: d.Path, Tab: d.Tab, Nav: d.Nav, Paused: s.carry.Paused()})
	if err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodePolicyUnavailable, "%v", err))
	}
	s.carry.Carry(context.Background(), &dec)
	body := dec.Body()
	s.decisions.Add(1)
	meta := store.DecisionMeta{PathClass: dec.PathClass, Basis: string(dec.Basis), CellRxStart: dec.CellRxStart}
	return s.logged(req, body.Decision, body, meta) // the reply goes out once the decision is committed
}
