package host

import (
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// A page's peer reports are budgeted per page origin: a real page sends a few per load (PEERS_PER_PAGE pairs in
// requests of 64), a page that reloads itself in a loop would send many, each costing a sock_diag dump and a
// request to the helper. Past the budget the host answers rate_limited and changes nothing.
const (
	peersRate    = 10 // requests per second per page origin, after the burst
	peersBurst   = 20
	peersOrigins = 256 // page origins whose budget is remembered
)

// peers reports the hosts and addresses a tab's page actually talked to (PROTOCOL.md §4 Peers), so that the
// page's connections to third parties, and to addresses the host's own resolver would not have named, follow the
// page's decision (carry.Carrier.Peers), within the page origin's budget.
func (s *Server) peers(req protocol.Request) protocol.Reply {
	origin, peers, perr := protocol.ParsePeers(req.Body)
	if perr != nil {
		s.log.Warn("peers refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	s.peerMu.Lock()
	ok, wait := s.peerBudget.Allow(origin, time.Now())
	s.peerMu.Unlock()
	if !ok {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeRateLimited,
			"peers of %s: more than %d requests a second; nothing was changed; retry in %d ms", origin, peersRate, wait.Milliseconds()))
	}
	return protocol.OK(req, s.carry.Peers(origin, peers))
}
