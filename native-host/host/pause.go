package host

import (
	"sync"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// TypePause turns all multipath off or back on (PROTOCOL.md §4 Pause): the user's one-click pause, a cellular cap
// reached, roaming, or no consent yet. The extension sends it after every hello and on every change; the host
// keeps it in memory only, so a new host starts unpaused until the extension says otherwise (it says so before
// its first decide: requests are answered in order).
const TypePause = "pause"

// Reasons a pause may give.
var pauseReasons = []string{"user", "consent", "cap_daily", "cap_monthly", "roaming", "none"}

// PauseReply is the body of a successful pause reply.
type PauseReply struct {
	Paused bool   `json:"paused"`
	Why    string `json:"why"`
}

type pauseState struct {
	mu  sync.Mutex
	why string // "" while not paused
}

func (s *Server) pause(req protocol.Request) protocol.Reply {
	obj, perr := protocol.AsObject(req.Body, "body")
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	paused, perr := obj.Bool("paused")
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	why, perr := obj.OneOf("why", pauseReasons...)
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	if paused == (why == "none") {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeBadRequest, "why: %q does not go with paused %v", why, paused))
	}
	if !paused {
		why = ""
	}
	s.paused.mu.Lock()
	changed := s.paused.why != why
	s.paused.why = why
	s.paused.mu.Unlock()
	if changed {
		s.log.Info("pause", "paused", paused, "why", why)
	}
	if !paused {
		why = "none"
	}
	return protocol.OK(req, PauseReply{Paused: paused, Why: why})
}
