package host

import (
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

func (s *Server) decide(req protocol.Request) protocol.Reply {
	d, perr := protocol.ParseDecide(req.Body)
	if perr != nil {
		s.log.Warn("decide refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	snap, perr := s.snapshot()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	out := policy.Decide(policy.Input{
		Origin: d.Origin, Model: snap.File, Source: snap.Source, Revision: snap.Policy.Revision,
	})
	s.decisions.Add(1)
	return protocol.OK(req, out.Decision(d.Origin, d.Tab, d.Nav))
}
