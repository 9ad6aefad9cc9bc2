package carry

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/relay"
)

// Today's cap is reached while multipath is set up everywhere: a site's relay route and its open tunnel, an
// origin's policy in the helper, a decision still on its way to the helper. From the pause on, nothing may give a
// connection a cellular subflow: the helper is told to undo what it holds (its cellular subflows close), the relay
// gives new tunnels single path whatever their site's route says, and what was decided before the pause reaches
// the helper as single path. (Downloads and the path meter: native-host/host TestPauseReachesEveryPath.)
func TestPauseReachesEveryPath(t *testing.T) {
	s := testCarrier(t, Config{})
	c := dryRunHelper(t, 100, 100)
	s.helper = c
	c.hosts = Hosts{"large.example": {netip.MustParseAddr("203.0.113.7")}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	theta1 := int64(200_000)
	group := thetaGroup("https://large.example")
	route := relay.Policy{Multipath: true, Theta1: theta1, Group: group}
	s.relay.setRoute("large.example", hubRoute{policy: route})
	d := decide.Decision{Origin: "https://large.example", Theta1: &theta1}
	c.carry(ctx, &d)
	local, remote := tunnelConn(t)
	if res := s.relay.conn(ctx, local, remote, route); res != "ok" {
		t.Fatalf("tunnel policy: %q", res)
	}

	s.SetPause("cap_daily")
	s.SetPause("user") // another reason, still paused: nothing new to undo

	if p, ok := s.relay.policy("large.example"); !ok || p.Multipath {
		t.Errorf("a tunnel to a site with a multipath route, after the cap: %+v", p)
	}
	before := helperStatus(t, c)
	if !strings.Contains(before, "would release every change") {
		t.Errorf("the pause told the helper nothing: its open tunnels and connections keep their cellular subflows:\n%s", before)
	}
	// A tunnel whose policy was looked up just before the pause, and a decision made just before it, reach the
	// helper after it: single path.
	s.relay.conn(ctx, local, remote, route)
	late := d
	c.carry(ctx, &late)
	if joined, _, _ := c.joinNow(ctx, "https://large.example", 1<<20); joined {
		t.Error("an announce during the pause joined the cellular subflows")
	}
	if n := s.relay.joinNow(ctx, "https://large.example", 1<<20); n != 0 {
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
	s.SetPause("")
	fresh := d
	c.carry(ctx, &fresh)
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
