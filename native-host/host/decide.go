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
	s.paused.mu.Lock()
	paused := s.paused.why // pause.go: single path while the user (or a cap) paused multipath
	s.paused.mu.Unlock()
	dec, err := s.dec.Decide(context.Background(), decide.Request{Origin: d.Origin, Path: d.Path, Tab: d.Tab, Nav: d.Nav, Paused: paused})
	if err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodePolicyUnavailable, "%v", err))
	}
	s.act.Carry(context.Background(), &dec)
	if dec.Paused == "" {
		s.proxy.route(d.Origin, relayRoute(dec)) // proxy.go: the relay applies it to the origin's tunnels
	} else {
		// A pause says nothing of the site: its tunnels are decided at run time, single path while the pause
		// lasts and by the model after it, and the host does not stay DIRECT once multipath is back.
		s.proxy.forget(d.Origin)
	}
	// Off the reply's path: the decide reply gates the page's header, and a third party connects only once the
	// page has loaded enough to name it, hundreds of milliseconds later.
	go s.restorePeers(d.Origin, dec)
	body := dec.Body()
	s.decisions.Add(1)
	meta := store.DecisionMeta{PathClass: dec.PathClass, Basis: string(dec.Basis), CellRxStart: dec.CellRxStart}
	return s.logged(req, body.Decision, body, meta) // the reply goes out once the decision is committed
}
