package carry

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/relay"
	"github.com/mpsurf/mpsurf/native-host/store"
)

func f64(x float64) *float64 { return &x }

// seedLinks are seed 000's WiFi and LTE, measured, the radio idle.
func seedLinks() decide.View {
	return decide.View{
		Primary:   &model.Path{Name: "wlan0", Kind: "wifi", Up: true, RTTMS: f64(50), DownBps: f64(7.04e6)},
		Secondary: &model.Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: f64(70), DownBps: f64(9.185e6)},
		RRC:       &model.RRC{Tech: "lte", State: "idle"},
	}
}

// givenHost is a host's pipeline and carrier: deciding with the real pipeline on given links and remembered sizes
// (g, changed between requests to stand for different sites), and carrying out what it decides.
type givenHost struct {
	*Carrier
	dec *decide.Decider
}

func givenServer(t *testing.T, g *decide.Given) givenHost {
	t.Helper()
	p, src, err := model.Open("")
	if err != nil {
		t.Fatal(err)
	}
	dec := decide.New(decide.Config{Params: p, ParamsSource: src, Links: g, Memory: g})
	return givenHost{testCarrier(t, Config{Tunnel: dec.Tunnel}), dec}
}

// decideFor decides for a navigation to origin and carries the decision out, as the host's decide handler does.
func decideFor(t *testing.T, s givenHost, origin string) {
	t.Helper()
	d, err := s.dec.Decide(context.Background(), decide.Request{Origin: origin, Tab: 1, Nav: "1-1", Paused: s.Paused()})
	if err != nil {
		t.Fatal(err)
	}
	s.Carry(context.Background(), &d)
}

// smallAndLarge is a host that decided for small.example (20 kB pages: single path, DIRECT) and large.example
// (4 MB pages: multipath) on the seeds' links.
func smallAndLarge(t *testing.T) (*decide.Given, givenHost) {
	t.Helper()
	g := &decide.Given{Paths: seedLinks(), Proto: "h2"}
	s := givenServer(t, g)
	g.Sizes = store.History{Origin: []int64{20_000, 21_000}}
	decideFor(t, s, "https://small.example")
	g.Sizes = store.History{Origin: []int64{3_900_000, 4_000_000}}
	decideFor(t, s, "https://large.example")
	return g, s
}

// Every host the PAC sends gets a policy: its decision's, else one decided at run time for a connection of unknown
// size (θ1 above the small pages the user loads, so a small transfer stays on WiFi); the status lists the hosts the PAC should keep DIRECT.
func TestRelayPolicies(t *testing.T) {
	g, s := smallAndLarge(t)
	g.Sizes = store.History{Others: []int64{50_300, 20_300, 100_300, 3_900_000}}

	st := s.relay.status()
	if !slices.Equal(st.Direct, []string{"small.example"}) || !slices.Equal(st.Routes, []string{"large.example"}) {
		t.Fatalf("direct %v, routes %v", st.Direct, st.Routes)
	}

	tunnel, err := s.dec.Tunnel(context.Background(), "https://new.example", "")
	if err != nil || tunnel.Theta1 == nil {
		t.Fatalf("tunnel decision %+v, %v", tunnel, err)
	}
	for _, tc := range []struct {
		host string
		mp   bool
		t1   func(int64) bool
	}{
		{"large.example", true, func(t1 int64) bool { return t1 < 3_900_000 }},
		{"small.example", true, func(t1 int64) bool { return t1 > 21_000 }},
		// Never decided: the model at run time, its θ1 above the small pages the user loads elsewhere.
		{"new.example", true, func(t1 int64) bool { return t1 == *tunnel.Theta1 && t1 > 100_300 }},
	} {
		p, ok := s.relay.policy(tc.host)
		if !ok || p.Multipath != tc.mp || !tc.t1(p.Theta1) {
			t.Errorf("%s: %+v, %v", tc.host, p, ok)
		}
	}
	// Nothing decided for it was stored: the next decision, or the next tunnel, decides afresh.
	if _, ok := s.relay.known("new.example"); ok {
		t.Error("a tunnel's run-time decision became a route")
	}

	// Paused: tunnels of hosts without a decision stay single path, and a decision under the pause drops the
	// site's route rather than keep it DIRECT after the pause.
	s.SetPause("user")
	if p, ok := s.relay.policy("new.example"); !ok || p.Multipath {
		t.Errorf("paused: %+v", p)
	}
	decideFor(t, s, "https://small.example")
	if _, ok := s.relay.known("small.example"); ok || slices.Contains(s.relay.status().Direct, "small.example") {
		t.Error("a paused decision kept the route")
	}
}

// A page's third parties take the page's route, unless they have one of their own that differs.
func TestRelayFollow(t *testing.T) {
	// Pages loaded before (their own class's sizes): the small one single path, the large one multipath.
	g := &decide.Given{Paths: seedLinks(), Proto: "h2", Sizes: store.History{Class: []int64{20_000, 21_000}}}
	s := givenServer(t, g)
	decideFor(t, s, "https://small.example")
	g.Sizes = store.History{Class: []int64{3_900_000, 4_000_000}}
	decideFor(t, s, "https://large.example")
	s.relay.follow("https://small.example", []string{"cdn.example", "large.example"})
	if !slices.Equal(s.relay.status().Direct, []string{"small.example", "cdn.example"}) {
		t.Errorf("direct %v", s.relay.status().Direct)
	}
	if p, _ := s.relay.known("large.example"); p.Theta1 >= 3_900_000 || p.Group != thetaGroup("https://large.example") {
		t.Errorf("large.example took the small page's policy: %+v", p)
	}
	// The third party's tunnels count towards θ1 with the page's (the helper's group).
	if p, _ := s.relay.known("cdn.example"); p.Group == 0 || p.Group != thetaGroup("https://small.example") {
		t.Errorf("cdn.example is not in small.example's θ1 group: %+v", p)
	}
}

// Routes warmed from the log read the same as fresh ones.
func TestLoggedPolicy(t *testing.T) {
	th := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name   string
		d      protocol.Decision
		want   relay.Policy
		direct bool
	}{
		{"never seen: its θ1", protocol.Decision{Theta1: th(128_000),
			Inputs: map[string]any{"basis": "prior"}}, relay.Policy{Multipath: true, Theta1: 128_000}, false},
		{"known large", protocol.Decision{Theta1: th(0), Multipath: true,
			Inputs: map[string]any{"basis": "measured", "predicted_size_bytes": 3_900_000.0}}, relay.Policy{Multipath: true}, false},
		{"known small: DIRECT", protocol.Decision{Theta1: th(30_000),
			Inputs: map[string]any{"basis": "measured", "predicted_size_bytes": 20_000.0}}, relay.Policy{Multipath: true, Theta1: 30_000}, true},
		{"a rule's θ1 stands", protocol.Decision{Theta1: th(0), Multipath: true,
			Inputs: map[string]any{"basis": "rule"}}, relay.Policy{Multipath: true}, false},
		{"never: DIRECT", protocol.Decision{Inputs: map[string]any{"basis": "rule"}}, relay.Policy{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := loggedPolicy(tc.d)
			if tc.want.Multipath {
				tc.want.Group = thetaGroup(tc.d.Origin) // a logged multipath decision names its origin's group
			}
			if !sameRelayPolicy(r.policy, tc.want) || r.direct != tc.direct {
				t.Errorf("%+v direct %v, want %+v direct %v", r.policy, r.direct, tc.want, tc.direct)
			}
		})
	}
}

// A site the proxy answered with an error of its own is listed for the PAC to keep DIRECT, whatever its decisions
// say later, and the list is bounded.
func TestRelayUnreachable(t *testing.T) {
	g := &decide.Given{Paths: seedLinks(), Proto: "h2", Sizes: store.History{Origin: []int64{3_900_000, 4_000_000}}}
	s := givenServer(t, g)
	s.relay.markUnreachable("intranet.example")
	decideFor(t, s, "https://intranet.example")
	st := s.relay.status()
	if !slices.Equal(st.Unreachable, []string{"intranet.example"}) || !slices.Contains(st.Routes, "intranet.example") {
		t.Fatalf("unreachable %v, routes %v", st.Unreachable, st.Routes)
	}
	for i := range maxRoutes + 5 {
		s.relay.markUnreachable(fmt.Sprintf("h%d.example", i))
	}
	s.relay.markUnreachable("h0.example") // again: now the newest
	st = s.relay.status()
	if len(st.Unreachable) != maxRoutes || st.Unreachable[len(st.Unreachable)-1] != "h0.example" || slices.Contains(st.Unreachable, "intranet.example") {
		t.Errorf("%d unreachable, last %q", len(st.Unreachable), st.Unreachable[len(st.Unreachable)-1])
	}
}

// asked is Given's memory that notes which origins were looked up.
type asked struct {
	*decide.Given
	origins []string
}

func (a *asked) History(ctx context.Context, origin, class string) (store.History, error) {
	a.origins = append(a.origins, origin)
	return a.Given.History(ctx, origin, class)
}

// A tunnel's run-time decision looks the site up under its origin as decisions are logged: an IPv6 literal in
// brackets (the CONNECT host has none), a name as it is.
func TestRelayTunnelOrigin(t *testing.T) {
	g := &decide.Given{Paths: seedLinks(), Proto: "h2"}
	mem := &asked{Given: g}
	p, src, err := model.Open("")
	if err != nil {
		t.Fatal(err)
	}
	s := testCarrier(t, Config{Tunnel: decide.New(decide.Config{Params: p, ParamsSource: src, Links: g, Memory: mem}).Tunnel})
	for _, host := range []string{"2001:db8::1", "10.0.0.7", "xn--bcher-kva.example"} {
		if _, ok := s.relay.policy(host); !ok {
			t.Errorf("%s: no policy", host)
		}
	}
	want := []string{"https://[2001:db8::1]", "https://10.0.0.7", "https://xn--bcher-kva.example"}
	if !slices.Equal(mem.origins, want) {
		t.Errorf("looked up %v, want %v", mem.origins, want)
	}
	for _, o := range mem.origins {
		if n, err := protocol.NormalizeOrigin(o); err != nil || n != o {
			t.Errorf("%s: normalised %q, %v", o, n, err)
		}
	}
}

// The relay dials a site itself only for a host whose decision says multipath would not pay there, at the address
// EnvHosts gives it.
func TestRelayDialDirect(t *testing.T) {
	site, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	go func() {
		for {
			c, err := site.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, s := smallAndLarge(t)
	_, port, _ := net.SplitHostPort(site.Addr().String())
	s.relay.sitePort = port
	for _, tc := range []struct {
		host   string
		wantOK bool
	}{{"small.example", true}, {"large.example", false}, {"never.example", false}} {
		t.Run(tc.host, func(t *testing.T) {
			s.relay.hosts = Hosts{tc.host: {netip.MustParseAddr("127.0.0.1")}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			c, ok, err := s.relay.dialDirect(ctx, tc.host)
			if ok != tc.wantOK {
				t.Fatalf("direct %v, want %v", ok, tc.wantOK)
			}
			if ok && err != nil {
				t.Fatalf("dial to the address EnvHosts gives: %v", err)
			}
			if c != nil {
				c.Close()
			}
		})
	}
}

// The proxy leg of a peers report: a request through the proxy reaches the relay (a loopback address the kernel's
// screen refuses), so the hosts the relay tunnelled to lately are what was reached. Such a third party takes the
// page's route, and its tunnel already open under the run-time decision of a host never seen (a θ1 of its own in a
// group of its own) takes the page's policy at once; a host the relay never tunnelled to, and one with a route
// under another decision, are left alone.
func TestProxyPeersFollowOpenTunnels(t *testing.T) {
	s := testCarrier(t, Config{})
	s.helper = dryRunHelper(t, 100, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	page := "https://news.example"
	g := thetaGroup(page)
	s.relay.setRoute("news.example", hubRoute{policy: relay.Policy{Multipath: true, Theta1: 0, Group: g}})
	other := relay.Policy{Multipath: true, Theta1: 900_000, Group: thetaGroup("https://bank.example")}
	s.relay.setRoute("bank.example", hubRoute{policy: other})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	remote := netip.MustParseAddrPort(ln.Addr().String())
	// The relay looks each tunnel's host up (policy) and hands the helper its connection's policy (conn).
	tunnel := func(host string, p relay.Policy) netip.AddrPort {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		local := netip.MustParseAddrPort(c.LocalAddr().String())
		s.relay.noteTunnel(host)
		if res := s.relay.conn(ctx, local, remote, p); res != "ok" {
			t.Fatalf("tunnel to %s: %q", host, res)
		}
		return local
	}
	cdn := tunnel("cdn.example", relay.Policy{Multipath: true, Theta1: 200_000, Group: thetaGroup("https://cdn.example")})
	tunnel("bank.example", other)
	lo := netip.MustParseAddr("127.0.0.1")
	s.Peers(page, []protocol.Peer{{Host: "cdn.example", Addr: lo}, {Host: "bank.example", Addr: lo}, {Host: "never.example", Addr: lo}})
	if p, _ := s.relay.known("cdn.example"); p != (relay.Policy{Multipath: true, Theta1: 0, Group: g}) {
		t.Errorf("cdn.example's route %+v, want the page's", p)
	}
	if p, _ := s.relay.known("bank.example"); p != other {
		t.Errorf("bank.example's route %+v, want its own %+v", p, other)
	}
	if _, ok := s.relay.known("never.example"); ok {
		t.Error("a host the relay never tunnelled to took the page's route")
	}
	log := helperStatus(t, s.helper)
	if want := fmt.Sprintf("give connection %s -\\u003e %s multipath=true theta1=0\"", cdn, remote); !strings.Contains(log, want) {
		t.Errorf("cdn.example's open tunnel did not take the page's θ1 = 0:\n%s", log)
	}
}

// A fresh decision's route and a logged one's go DIRECT by the one rule (protocol.WorthRelay), on every case of
// the shared vectors.
func TestRouteWorthRelay(t *testing.T) {
	b, err := os.ReadFile("../vectors/relay.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []struct {
			Name      string `json:"name"`
			Multipath bool   `json:"multipath"`
			Theta1    *int64 `json:"theta1"`
			SizeKnown bool   `json:"size_known"`
			Worth     bool   `json:"worth"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &v); err != nil || len(v.Cases) == 0 {
		t.Fatalf("relay.json: %v", err)
	}
	for _, c := range v.Cases {
		fresh := relayRoute(decide.Decision{Origin: "https://a.example", Multipath: c.Multipath, Theta1: c.Theta1, Size: model.Size{Known: c.SizeKnown}})
		logged := protocol.Decision{Origin: "https://a.example", Multipath: c.Multipath, Theta1: c.Theta1, Inputs: map[string]any{}}
		if c.SizeKnown {
			logged.Inputs["predicted_size_bytes"] = 20_000.0
		}
		if fresh.direct == c.Worth || loggedPolicy(logged).direct == c.Worth {
			t.Errorf("%s: direct %v (fresh), %v (logged); worth the relay %v", c.Name, fresh.direct, loggedPolicy(logged).direct, c.Worth)
		}
	}
}
