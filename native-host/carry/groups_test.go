package carry

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/relay"
)

// One site must not take over another's θ1 group. Page A lists site B as its peer; B has a decision of its own
// with the same numbers (the same θ1 and θ2), but its own group. B's address must stay in B's group: taken into
// A's, B's connections would count towards A's θ1 and A's announce would set B's θ1 to 0.
func TestPeerKeepsItsOwnGroup(t *testing.T) {
	c := dryRunHelper(t, 100, 100)
	s := testCarrier(t, Config{Store: testStore(t), Reached: func(addrs []netip.Addr) (map[netip.Addr]bool, error) {
		m := map[netip.Addr]bool{}
		for _, a := range addrs {
			m[a] = true
		}
		return m, nil
	}})
	s.helper = c
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	theta1 := int64(200_000)
	for _, o := range []string{"https://a.test", "https://b.test"} {
		d := decide.Decision{Origin: o, Theta1: &theta1}
		c.hosts = Hosts{"a.test": {netip.MustParseAddr("203.0.113.1")}, "b.test": {netip.MustParseAddr("198.51.100.60")}}
		c.carry(ctx, &d)
		if d.Actuation != "ok" {
			t.Fatalf("%s: actuation %q", o, d.Actuation)
		}
	}
	got := reportPeers(t, s, `{"origin":"https://a.test","tab":1,"peers":[{"host":"b.test","ip":"198.51.100.60"}]}`)
	if got.Addrs != 0 || len(got.Refused) != 1 {
		t.Errorf("b.test, with a decision and a group of its own, was taken into a.test's group: %+v", got)
	}
	if joined, why, res := c.joinNow(ctx, "https://a.test", 300_000); !joined {
		t.Fatalf("a.test's announce: %v %q %q", joined, why, res)
	}
	log := helperStatus(t, c)
	if strings.Contains(log, "[198.51.100.60] to multipath=true theta1=0") {
		t.Errorf("a.test's announce set b.test's θ1 to 0:\n%s", log)
	}
	if in := fmt.Sprintf("198.51.100.60] to multipath=true theta1=200000 theta2=none group=%d", thetaGroup("https://a.test")); strings.Contains(log, in) {
		t.Errorf("b.test's address went into a.test's group:\n%s", log)
	}
}

// The proxy leg: b.example's route, with the same numbers as the page's but its own group, stays b.example's when
// the page lists it as a third party, and the page's announce leaves its θ1 alone.
func TestRelayFollowKeepsOtherGroups(t *testing.T) {
	s := testCarrier(t, Config{})
	a, b := "https://a.example", "https://b.example"
	s.relay.setRoute("a.example", hubRoute{policy: relay.Policy{Multipath: true, Theta1: 200_000, Group: thetaGroup(a)}})
	s.relay.setRoute("b.example", hubRoute{policy: relay.Policy{Multipath: true, Theta1: 200_000, Group: thetaGroup(b)}})
	s.relay.follow(a, []string{"b.example", "cdn.example"})
	if p, _ := s.relay.known("b.example"); p.Group != thetaGroup(b) {
		t.Errorf("b.example's route went into a.example's θ1 group: %+v", p)
	}
	if p, _ := s.relay.known("cdn.example"); p.Group != thetaGroup(a) {
		t.Errorf("cdn.example, with no route of its own, did not follow the page: %+v", p)
	}
	s.relay.joinNow(context.Background(), a, 300_000)
	if p, _ := s.relay.known("b.example"); p.Theta1 != 200_000 {
		t.Errorf("a.example's announce set b.example's θ1 to %d", p.Theta1)
	}
}
