package host

import (
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// Announce budget per page origin: one request per page load that passes θ1, so a few per second is plenty; a
// page that reloads itself in a loop gets rate_limited and changes nothing.
const (
	announceRate  = 5
	announceBurst = 10
)

// announce tells the carrier that a page's responses have announced at least θ1 bytes (carry.Carrier.Announce),
// within the page origin's budget.
func (s *Server) announce(req protocol.Request) protocol.Reply {
	a, perr := protocol.ParseAnnounce(req.Body)
	if perr != nil {
		s.log.Warn("announce refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	s.peerMu.Lock()
	ok, wait := s.announceBudget.Allow(a.Origin, time.Now())
	s.peerMu.Unlock()
	if !ok {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeRateLimited,
			"announce of %s: more than %d requests a second; nothing was changed; retry in %d ms", a.Origin, announceRate, wait.Milliseconds()))
	}
	return protocol.OK(req, s.carry.Announce(a))
}
