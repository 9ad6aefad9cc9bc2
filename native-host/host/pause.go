package host

import (
	"strings"
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
	mu     sync.Mutex
	paused bool
	why    string
}

func (s *Server) pause(req protocol.Request) protocol.Reply {
	obj, perr := fields(req.Body)
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	paused, perr := getBool(obj, "paused")
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	why, perr := oneOf(obj, "why", pauseReasons...)
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	if paused == (why == "none") {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeBadRequest, "why: %q does not go with paused %v", why, paused))
	}
	s.paused.mu.Lock()
	changed := s.paused.paused != paused || s.paused.why != why
	s.paused.paused, s.paused.why = paused, why
	s.paused.mu.Unlock()
	if changed {
		s.log.Info("pause", "paused", paused, "why", why)
	}
	return protocol.OK(req, PauseReply{Paused: paused, Why: why})
}

// pauseWords say why multipath is off, for the decision's reason.
var pauseWords = map[string]string{
	"user":        "you paused multipath",
	"consent":     "multipath waits for your consent (MPSurf's first-run page)",
	"cap_daily":   "today's cellular cap is reached",
	"cap_monthly": "this month's cellular cap is reached",
	"roaming":     "the cellular link is roaming",
}

// gate turns a decision into single path while multipath is paused, saying why; the model's terms stay.
func (s *Server) gate(d protocol.Decision) protocol.Decision {
	s.paused.mu.Lock()
	paused, why := s.paused.paused, s.paused.why
	s.paused.mu.Unlock()
	if !paused {
		return d
	}
	in := make(map[string]any, len(d.Inputs)+1)
	for k, v := range d.Inputs {
		in[k] = v
	}
	in["paused"] = why
	d.Inputs = in
	if d.Multipath {
		d.Multipath = false
		d.Reason = clipReason("single path: " + pauseWords[why])
	}
	return d
}

func clipReason(s string) string {
	if len(s) <= protocol.MaxReasonLen {
		return s
	}
	return strings.ToValidUTF8(s[:protocol.MaxReasonLen], "")
}
