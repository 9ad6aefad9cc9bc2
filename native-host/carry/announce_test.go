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

// The real helper (dry run) is told θ1 = 0 for the origin, and for its peers, only when the announced bytes reach
// the θ1 its current decision waits for; never, θ1 = 0 already, too few bytes and an unknown origin change nothing.
func TestAnnounceJoinsAtTheta1(t *testing.T) {
	c := dryRunHelper(t, 100, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	theta1, zero := int64(200000), int64(0)
	decideFor := func(origin string, th *int64) {
		d := decide.Decision{Origin: origin, Theta1: th}
		c.carry(ctx, &d)
		if d.Actuation != "ok" {
			t.Fatalf("%s: actuation %q", origin, d.Actuation)
		}
	}
	decideFor("https://192.0.2.20", &theta1)
	if got := c.setPeers(ctx, "https://192.0.2.20", []string{"198.51.100.20"}); got != "ok" {
		t.Fatalf("peers: %q", got)
	}
	decideFor("https://192.0.2.21", nil)
	decideFor("https://192.0.2.22", &zero)
	for _, tc := range []struct {
		origin string
		bytes  int64
		joined bool
		why    string
	}{
		{"https://192.0.2.20", 199999, false, "under θ1 = 200000"},
		{"https://192.0.2.21", 5000000, false, "never multipath"},
		{"https://192.0.2.22", 5000000, false, "from the first byte already"},
		{"https://192.0.2.23", 5000000, false, "no decision"},
		{"https://192.0.2.20", 200000, true, ""},
		{"https://192.0.2.20", 300000, false, "from the first byte already"}, // the second announce of the page
	} {
		joined, why, _ := c.joinNow(ctx, tc.origin, tc.bytes)
		if joined != tc.joined || (tc.why == "" && why != "") || !strings.Contains(why, tc.why) {
			t.Errorf("joinNow(%s, %d) = %v, %q; want %v, %q", tc.origin, tc.bytes, joined, why, tc.joined, tc.why)
		}
	}
	log := helperStatus(t, c)
	group := thetaGroup("https://192.0.2.20")
	for _, want := range []string{
		fmt.Sprintf("map [192.0.2.20] to multipath=true theta1=0 theta2=none group=%d\"", group),
		fmt.Sprintf("map [198.51.100.20] to multipath=true theta1=0 theta2=none group=%d\"", group),
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the helper was not told %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "[192.0.2.21] to multipath=true") || strings.Contains(log, "[192.0.2.23]") {
		t.Errorf("an announce moved an origin it must not:\n%s", log)
	}
}

// The proxy leg: the routes of the origin's θ1 group and its recent tunnels waiting for a θ1 the announced bytes
// reach get θ1 = 0 (the helper is told of those tunnels again); another group's tunnel, a tunnel whose θ1 is not
// reached and one from the first byte already are left alone.
func TestAnnounceProxyTunnels(t *testing.T) {
	s := testCarrier(t, Config{})
	s.helper = dryRunHelper(t, 100, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	page, other := "https://news.example", "https://other.example"
	g, og := thetaGroup(page), thetaGroup(other)
	s.relay.setRoute("news.example", hubRoute{policy: relay.Policy{Multipath: true, Theta1: 200_000, Group: g}})
	s.relay.setRoute("cdn.example", hubRoute{policy: relay.Policy{Multipath: true, Theta1: 200_000, Group: g}})
	s.relay.setRoute("other.example", hubRoute{policy: relay.Policy{Multipath: true, Theta1: 200_000, Group: og}})
	// The helper takes a connection's policy only for an established connection of the caller's: real ones, over
	// loopback, stand for the tunnels.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	remote := netip.MustParseAddrPort(ln.Addr().String())
	tunnels := []struct {
		local netip.AddrPort
		p     relay.Policy
		moved bool
	}{
		{p: relay.Policy{Multipath: true, Theta1: 200_000, Group: g}, moved: true},
		{p: relay.Policy{Multipath: true, Theta1: 200_000, Group: g}, moved: true},
		{p: relay.Policy{Multipath: true, Theta1: 900_000, Group: g}},
		{p: relay.Policy{Multipath: true, Theta1: 200_000, Group: og}},
		{p: relay.Policy{Multipath: true, Theta1: 0, Group: g}},
	}
	for i := range tunnels {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		tunnels[i].local = netip.MustParseAddrPort(c.LocalAddr().String())
		if res := s.relay.conn(ctx, tunnels[i].local, remote, tunnels[i].p); res != "ok" {
			t.Fatalf("tunnel %s: %q", tunnels[i].local, res)
		}
	}
	if n := s.relay.joinNow(ctx, page, 250_000); n != 2 {
		t.Errorf("joinNow told the helper of %d tunnels, want 2", n)
	}
	log := helperStatus(t, s.helper)
	for _, tn := range tunnels {
		want := fmt.Sprintf("give connection %s -\\u003e %s multipath=true theta1=0\"", tn.local, remote) // JSON escapes '>'

		if got := strings.Contains(log, want); got != tn.moved && tn.p.Theta1 != 0 {
			t.Errorf("tunnel %s (θ1 %d, group %d): moved %v, want %v:\n%s", tn.local, tn.p.Theta1, tn.p.Group, got, tn.moved, log)
		}
	}
	for host, want := range map[string]int64{"news.example": 0, "cdn.example": 0, "other.example": 200_000} {
		if p, _ := s.relay.known(host); p.Theta1 != want {
			t.Errorf("route %s: θ1 %d, want %d", host, p.Theta1, want)
		}
	}
}
