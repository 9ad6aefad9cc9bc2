package host

import (
	"sync"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

type pauseState struct {
	mu  sync.Mutex
	why string // "" while not paused
	// hold, when set (OnPause), is told of every change between paused and not: the path meter keeps its probes
	// off the cellular path meanwhile.
	hold func(paused bool)
}

// OnPause gives the server a function told of every change between paused and not (the path meter's
// decide.Meter.HoldCellular).
func (s *Server) OnPause(f func(paused bool)) {
	s.paused.mu.Lock()
	s.paused.hold = f
	s.paused.mu.Unlock()
}

// isPaused says why multipath is paused now, "" when it is not.
func (s *Server) isPaused() string {
	s.paused.mu.Lock()
	defer s.paused.mu.Unlock()
	return s.paused.why
}

// applyPause carries a change between paused and not to every path that could give a connection a cellular
// subflow, at once, rather than to the next decision only: the helper undoes what it holds (the cellular subflows
// it opened close, MPTCP moves what they held to WiFi) and takes every later policy as single path until the
// pause ends; the relay's open tunnels are the helper's connections too, and its new ones go single path
// (proxyHub.policy); running downloads drop their cellular path (downloadHub.pause); the meter sends no probe
// over cellular.
func (s *Server) applyPause(paused bool, hold func(bool)) {
	if paused {
		if res := s.act.pauseAll(); res != "ok" && res != "not_configured" {
			s.log.Warn("pause: the helper did not undo its changes", "result", res)
		}
		s.proxy.pause()
		s.downloads.pause()
	} else {
		s.act.resumeAll()
	}
	if hold != nil {
		hold(paused)
	}
}

// pause turns all multipath off or back on (PROTOCOL.md §4 Pause): the user's one-click pause, a cellular cap
// reached, roaming, or no consent yet. The extension sends it after every hello and on every change; the host
// keeps it in memory only, so a new host starts unpaused until the extension says otherwise (it says so before
// its first decide: requests are answered in order).
func (s *Server) pause(req protocol.Request) protocol.Reply {
	p, perr := protocol.ParsePause(req.Body)
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	paused, why := p.Paused, p.Why
	s.paused.mu.Lock()
	changed := s.paused.why != why
	flipped := (s.paused.why == "") != (why == "")
	s.paused.why = why
	hold := s.paused.hold
	s.paused.mu.Unlock()
	if changed {
		s.log.Info("pause", "paused", paused, "why", why)
	}
	if flipped {
		s.applyPause(paused, hold)
	}
	if !paused {
		why = protocol.PauseNone
	}
	return protocol.OK(req, protocol.PauseReply{Paused: paused, Why: why})
}
