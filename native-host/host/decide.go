package host

import (
	"context"
	"time"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// decide answers a navigation: parse, decide (single path while multipath is paused), carry the decision out,
// reply, and log. The log row is returned beside the reply, to be written after it goes out (decisionlog.go).
func (s *Server) decide(req protocol.Request) (protocol.Reply, *store.DecisionRow) {
	d, perr := protocol.ParseDecide(req.Body)
	if perr != nil {
		s.log.Warn("decide refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr), nil
	}
	if _, perr := s.snapshot(); perr != nil {
		return protocol.Fail(req, perr), nil
	}
	ctx := context.Background()
	at := time.Now()
	dec, err := s.dec.Decide(ctx, decide.Request{Origin: d.Origin, Path: d.Path, Tab: d.Tab, Nav: d.Nav, Paused: s.carry.Paused()})
	if err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodePolicyUnavailable, "%v", err)), nil
	}
	s.carry.Carry(ctx, &dec)
	body := dec.Body()
	s.decisions.Add(1)
	// The log keeps the model's input for replay; the reply carries it only when asked: it is about a fifth of the
	// reply's bytes for a page with history, encoded on the navigation's path, and the extension does not read it.
	sent := body
	if !d.ModelInput {
		sent.ModelInput = nil
	}
	return protocol.OK(req, sent), s.logRow(req.Body, dec, body, at)
}
