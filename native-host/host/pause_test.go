package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/relay"
)

// pauseNow sends the host a pause as the extension does when the user pauses or a cap is reached.
func pauseNow(t *testing.T, s *Server, paused bool, why string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"paused": paused, "why": why})
	if r := s.pause(protocol.Request{ID: 1, Type: protocol.TypePause, Body: body}); r.Error != nil {
		t.Fatal(r.Error)
	}
}

// Today's cap is reached while multipath is set up everywhere: a site's relay route and its open tunnel, an
// origin's policy in the helper, a decision still on its way to the helper. From the pause on, nothing may give a
// connection a cellular subflow: the helper is told to undo what it holds (its cellular subflows close), the relay
// gives new tunnels single path whatever their site's route says, and what was decided before the pause reaches
// the helper as single path.
func TestPauseReachesEveryPath(t *testing.T) {
	s := embeddedServer(t)
	c := dryRunHelper(t, 100, 100)
	s.act = c
	c.hosts = map[string][]netip.Addr{"large.example": {netip.MustParseAddr("203.0.113.7")}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	theta1 := int64(200_000)
	group := thetaGroup("https://large.example")
	route := relay.Policy{Multipath: true, Theta1: theta1, Group: group}
	s.proxy.setRoute("large.example", hubRoute{policy: route})
	d := decide.Decision{Origin: "https://large.example", Theta1: &theta1}
	c.Carry(ctx, &d)
	local, remote := tunnelConn(t)
	if res := s.proxy.conn(ctx, local, remote, route); res != "ok" {
		t.Fatalf("tunnel policy: %q", res)
	}

	// A download running over both links.
	dl := &download{single: make(chan struct{}), singleOnce: new(sync.Once), st: protocol.DownloadState{ID: "c1", State: protocol.DownloadRunning}}
	s.downloads.items["c1"] = dl
	var held []bool
	s.OnPause(func(p bool) { held = append(held, p) })

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

	if p, ok := s.proxy.policy("large.example"); !ok || p.Multipath {
		t.Errorf("a tunnel to a site with a multipath route, after the cap: %+v", p)
	}
	before := helperStatus(t, c)
	if !strings.Contains(before, "would release every change") {
		t.Errorf("the pause told the helper nothing: its open tunnels and connections keep their cellular subflows:\n%s", before)
	}
	// A tunnel whose policy was looked up just before the pause, and a decision made just before it, reach the
	// helper after it: single path.
	s.proxy.conn(ctx, local, remote, route)
	late := d
	c.Carry(ctx, &late)
	if joined, _, _ := c.joinNow(ctx, "https://large.example", 1<<20); joined {
		t.Error("an announce during the pause joined the cellular subflows")
	}
	if n := s.proxy.joinNow(ctx, "https://large.example", 1<<20); n != 0 {
		t.Errorf("an announce during the pause joined %d tunnels", n)
	}
	log := helperStatus(t, c)
	i := strings.LastIndex(log, "would release every change")
	if i < 0 {
		t.Fatalf("no release:\n%s", log)
	}
	if tail := log[i:]; strings.Contains(tail, "multipath=true") {
		t.Errorf("the helper was given multipath after the pause:\n%s", tail)
	}

	// Back from the pause: a new decision is carried out as decided.
	pauseNow(t, s, false, "none")
	if len(held) != 2 || held[1] {
		t.Errorf("the meter's cellular probes were not let go after the pause: %v", held)
	}
	fresh := d
	c.Carry(ctx, &fresh)
	log = helperStatus(t, c)
	if last := log[strings.LastIndex(log, "would "):]; !strings.Contains(last, "multipath=true") || !strings.Contains(last, fmt.Sprint(group)) {
		t.Errorf("after the pause a multipath decision did not reach the helper as decided: %s", last)
	}
}

// tunnelConn is an established TCP connection of this process's (on loopback), standing for a relay tunnel: the
// helper gives a connection its own policy only when the caller owns it.
func tunnelConn(t *testing.T) (local, remote netip.AddrPort) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		if c, err := ln.Accept(); err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}()
	conn, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return netip.MustParseAddrPort(conn.LocalAddr().String()), netip.MustParseAddrPort(conn.RemoteAddr().String())
}
