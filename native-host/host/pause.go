package host

import "github.com/mpsurf/mpsurf/native-host/protocol"

// pause turns all multipath off or back on (PROTOCOL.md §4 Pause): the user's one-click pause, a cellular cap
// reached, roaming, or no consent yet. The extension sends it after every hello and on every change; the host
// keeps it in memory only, so a new host starts unpaused until the extension says otherwise (it says so before
// its first decide: requests are answered in order).
func (s *Server) pause(req protocol.Request) protocol.Reply {
	p, perr := protocol.ParsePause(req.Body)
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	// The helper and the relay (carry.Carrier.SetPause), then running downloads, which drop their cellular path,
	// and the meter, which sends no probe over cellular.
	if s.carry.SetPause(p.Why) {
		if p.Paused {
			s.downloads.pause()
		}
		if s.hold != nil {
			s.hold(p.Paused)
		}
	}
	why := p.Why
	if !p.Paused {
		why = protocol.PauseNone
	}
	return protocol.OK(req, protocol.PauseReply{Paused: p.Paused, Why: why})
}
