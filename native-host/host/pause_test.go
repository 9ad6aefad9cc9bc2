package host

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// pauseNow sends the host a pause as the extension does when the user pauses or a cap is reached.
func pauseNow(t *testing.T, s *Server, paused bool, why string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"paused": paused, "why": why})
	if r := s.pause(protocol.Request{ID: 1, Type: protocol.TypePause, Body: body}); r.Error != nil {
		t.Fatal(r.Error)
	}
}

// Today's cap is reached while a download runs over both links: the download drops its cellular path at once, and
// the path meter sends no probe over cellular until the pause ends. (The helper's and the relay's part:
// native-host/carry TestPauseReachesEveryPath.)
func TestPauseReachesEveryPath(t *testing.T) {
	var held []bool
	s := testServer(t, Parts{Policy: policy.NewStore(policy.EmbeddedSource()), Hold: func(p bool) { held = append(held, p) }})
	// A download running over both links.
	dl := &download{single: make(chan struct{}), singleOnce: new(sync.Once), st: protocol.DownloadState{ID: "c1", State: protocol.DownloadRunning}}
	s.downloads.items["c1"] = dl

	pauseNow(t, s, true, "cap_daily")

	select {
	case <-dl.single:
	default:
		t.Error("a download running over both links kept its cellular path after the cap")
	}
	if len(held) != 1 || !held[0] {
		t.Errorf("the meter's cellular probes were not held: %v", held)
	}
	pauseNow(t, s, true, "user") // another reason, still paused: nothing new to undo
	if s.carry.Paused() != "user" {
		t.Errorf("paused for %q, want user", s.carry.Paused())
	}

	// Back from the pause.
	pauseNow(t, s, false, "none")
	if len(held) != 2 || held[1] {
		t.Errorf("the meter's cellular probes were not let go after the pause: %v", held)
	}
}
