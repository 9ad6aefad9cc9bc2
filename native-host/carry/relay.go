package carry

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/relay"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// Limits of what the proxy status carries.
const (
	maxRoutes     = 1000 // hosts decided multipath, for the extension's PAC
	maxUsageShown = 50   // origins in the per-origin usage list
	testWait      = 2 * time.Second
)

// ProxyStatus is the body of proxy_status and proxy_config replies and of the proxy push.
type ProxyStatus struct {
	Configured bool          `json:"configured"`
	Server     string        `json:"server,omitempty"`
	User       string        `json:"user,omitempty"`
	Pin        string        `json:"pin,omitempty"`
	File       string        `json:"file"`
	State      string        `json:"state"` // unconfigured, unknown, up, down, error
	Detail     string        `json:"detail"`
	SinceMS    int64         `json:"since_ms"`
	Software   string        `json:"software,omitempty"`
	Relay      *RelayAccess  `json:"relay"`
	Stats      relay.Stats   `json:"stats"`
	Usage      []relay.Usage `json:"usage"`
	Routes     []string      `json:"routes"`
	// Direct are the hosts whose latest decision says multipath would not pay (θ1 never, or a known size below
	// θ1): the extension's PAC sends them DIRECT and every other https host through the relay.
	Direct []string `json:"direct"`
	// Unreachable are the hosts the proxy answered with an error of its own (a name only the user's network
	// resolves): DIRECT whatever their decisions say, for this host process.
	Unreachable []string `json:"unreachable"`
}

// RelayAccess is where the browser reaches the relay and the credentials it answers the relay's 407 with.
type RelayAccess struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	User     string `json:"user"`
	Password string `json:"password"`
}

// hub owns the relay, its settings file and the table of per-host decisions the relay applies. What it needs of
// the rest comes as functions: whether multipath is paused, the decision for a tunnel to a host without one, and
// the helper's per-connection call.
type hub struct {
	file   string
	log    *slog.Logger
	paused func() string
	tunnel func(ctx context.Context, origin, paused string) (decide.Decision, error) // nil: no run-time decision
	call   func(ctx context.Context, req actuate.Request) string                     // the helper's, per connection

	mu       sync.Mutex
	relay    *relay.Relay
	err      string // why there is no relay although settings exist
	errSince int64
	routes   map[string]hubRoute // host -> its origin's (or its page's) decision
	order    []string            // routes, oldest first
	// unreachable are hosts the proxy could not reach, oldest first, at most maxRoutes.
	unreachable []string
	cellular    func(netip.Addr) bool
	pushes      chan any
	hosts       Hosts  // for the sites the relay dials directly
	sitePort    string // the sites' port: 443, the only one the relay tunnels to
	// tunnels are the recent tunnels handed to the helper waiting for θ1, newest last (announce.go: joinNow).
	tunnels []tunnelRec
	// tunnelled are the hosts the relay opened a tunnel to for this browser, and when last: a request through the
	// proxy reaches the relay, not the site, so these are what says a page's third parties were really reached
	// on the proxy leg (peers.go).
	tunnelled map[string]time.Time
}

// tunnelRec is a tunnel the helper was told to give its cellular subflow at θ1.
type tunnelRec struct {
	local, remote netip.AddrPort
	p             relay.Policy
	at            time.Time
}

// A page's announce reaches the tunnels opened within tunnelFresh, at most tunnelsKept of them: a page's own and
// its third parties' are a few dozen at most, and the browser reuses an idle one for minutes. A tunnel that has
// closed since only leaves the helper a policy for a connection that never shows up, which it drops first.
const (
	tunnelsKept = 64
	tunnelFresh = 5 * time.Minute
)

// start replaces the relay with one for up. Caller must not hold h.mu.
func (h *hub) start(up relay.Upstream) {
	h.mu.Lock()
	old := h.relay
	h.relay, h.err = nil, ""
	h.mu.Unlock()
	if old != nil {
		old.Close()
	}
	r, err := relay.Start(relay.Config{
		Upstream:   up,
		Policy:     h.policy,
		Conn:       h.conn,
		Cellular:   h.isCellular,
		DialDirect: h.dialDirect,
		OnState:    func(relay.State) { h.push() },
		// A site the proxy cannot reach goes DIRECT from the next request on (the extension's PAC reads direct).
		Unreachable: func(host string, status int) {
			h.log.Info("site unreachable through the proxy; DIRECT from now on", "host", host, "status", status)
			h.markUnreachable(host)
			h.push()
		},
		Log: h.log,
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.err, h.errSince = err.Error(), time.Now().UnixMilli()
		h.log.Warn("relay not started", "err", err)
		return
	}
	h.relay = r
	h.log.Info("relay started", "listen", r.Addr(), "proxy", up.Addr)
}

func (h *hub) isCellular(a netip.Addr) bool {
	h.mu.Lock()
	f := h.cellular
	h.mu.Unlock()
	return f != nil && f(a)
}

// hubRoute is a host's decision on the proxy leg.
type hubRoute struct {
	policy relay.Policy
	// direct: the decision says multipath would not pay there, so the extension keeps the host off the relay.
	direct bool
}

// tunnelBudget bounds the decision for a tunnel to a host without one: the store reads' own bound
// (decide.memoryTimeout, 200 ms) and the model's evaluation, well inside the helper's need, which is only to have
// the policy before the tunnel has received θ1 bytes.
const tunnelBudget = 300 * time.Millisecond

// policy is the relay's decision lookup: the host's own entry (its origin's decision, or its page's), else the
// decision pipeline's for a connection to that host of unknown size (decide.Tunnel): the PAC sends every https host
// here, most of them before or without a decision of their own.
//
// While multipath is paused every tunnel is single path, its host's route or not: the pause is looked at first.
func (h *hub) policy(host string) (relay.Policy, bool) {
	h.noteTunnel(host)
	paused := h.paused()
	if paused != "" {
		return relay.Policy{}, true
	}
	if p, ok := h.known(host); ok {
		return p, true
	}
	if h.tunnel == nil {
		return relay.Policy{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), tunnelBudget)
	defer cancel()
	origin := "https://" + host
	if strings.Contains(host, ":") {
		origin = "https://[" + host + "]" // an IPv6 literal, as origins spell it (the CONNECT host has no brackets)
	}
	d, err := h.tunnel(ctx, origin, paused)
	if err != nil {
		h.log.Warn("no decision for a tunnel: single path", "host", host, "err", err)
		return relay.Policy{}, false
	}
	return relayPolicy(d), true
}

// dialDirect dials host:443 over plain TCP, by the system's routes, when the host's own decision says multipath
// would not pay there (hubRoute.direct): the relay then runs the tunnel straight to the site (relay.Config).
func (h *hub) dialDirect(ctx context.Context, host string) (net.Conn, bool, error) {
	h.mu.Lock()
	r, ok := h.routes[host]
	h.mu.Unlock()
	if !ok || !r.direct {
		return nil, false, nil
	}
	addrs := h.hosts[host]
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	}
	target := net.JoinHostPort(host, h.sitePort)
	if len(addrs) > 0 {
		target = net.JoinHostPort(addrs[0].String(), h.sitePort)
	}
	var d net.Dialer
	d.SetMultipathTCP(false) // single path by decision: a plain TCP connection, as the browser's DIRECT would be
	c, err := d.DialContext(ctx, "tcp", target)
	return c, true, err
}

// known is the host's own entry: the decision of its origin or of a page it served, this session or from the log.
func (h *hub) known(host string) (relay.Policy, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.routes[host]
	return r.policy, ok
}

// noteTunnel records that the relay opened a tunnel to host (policy: the relay looks each tunnel's host up).
func (h *hub) noteTunnel(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tunnelled == nil {
		h.tunnelled = map[string]time.Time{}
	}
	now := time.Now()
	if len(h.tunnelled) >= maxRoutes {
		for k, at := range h.tunnelled {
			if now.Sub(at) > tunnelFresh {
				delete(h.tunnelled, k)
			}
		}
		if len(h.tunnelled) >= maxRoutes {
			return // a thousand hosts in five minutes: the newest are left out rather than the table growing
		}
	}
	h.tunnelled[strings.ToLower(host)] = now
}

// tunnelledLately says whether the relay opened a tunnel to host within tunnelFresh.
func (h *hub) tunnelledLately(host string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.tunnelled[strings.ToLower(host)]
	return ok && time.Since(at) < tunnelFresh
}

// conn carries a tunnel's decision to the helper for its own connection, and keeps a tunnel that waits for θ1 in
// a group for an announce (joinNow) and a page's third parties (follow) to retune. Without a helper (the call
// answers "not_configured") there is nothing to retune, so nothing is kept.
func (h *hub) conn(ctx context.Context, local, remote netip.AddrPort, p relay.Policy) string {
	res := h.send(ctx, local, remote, p)
	if res != "not_configured" && p.Multipath && p.Theta1 > 0 && p.Group != 0 {
		h.mu.Lock()
		h.tunnels = append(h.tunnels, tunnelRec{local: local, remote: remote, p: p, at: time.Now()})
		if len(h.tunnels) > tunnelsKept {
			h.tunnels = h.tunnels[len(h.tunnels)-tunnelsKept:]
		}
		h.mu.Unlock()
	}
	return res
}

// send hands the helper a tunnel's policy.
func (h *hub) send(ctx context.Context, local, remote netip.AddrPort, p relay.Policy) string {
	mp := p.Multipath
	req := actuate.Request{Verb: actuate.VerbConn, LeaseMS: actuatorLease.Milliseconds(), Local: local.String(),
		Remote: remote.String(), Multipath: &mp}
	if mp {
		// The page's tunnels (its origin's and the third parties that follow it) pass θ1 on their sum.
		req.Theta1, req.Theta2, req.Group = p.Theta1, p.Theta2, p.Group
	}
	return h.call(ctx, req)
}

// joinNow is the proxy leg of an announce: the routes of the origin's θ1 group (its host and the third parties
// that follow it) and its recent tunnels whose θ1 the announced bytes reach get θ1 = 0, so that the helper gives
// the tunnels their cellular subflows now and new tunnels of the page theirs at once. It answers how many tunnels
// the helper was told of.
func (h *hub) joinNow(ctx context.Context, origin string, bytes int64) int {
	if h.paused() != "" {
		return 0
	}
	group := thetaGroup(origin)
	reaches := func(p relay.Policy) bool { return p.Multipath && p.Group == group && p.Theta1 > 0 && bytes >= p.Theta1 }
	h.mu.Lock()
	for host, r := range h.routes {
		if reaches(r.policy) {
			r.policy.Theta1 = 0
			h.routes[host] = r
		}
	}
	var send []tunnelRec
	for i := range h.tunnels {
		if t := &h.tunnels[i]; reaches(t.p) && time.Since(t.at) < tunnelFresh {
			t.p.Theta1 = 0
			send = append(send, *t)
		}
	}
	h.mu.Unlock()
	for _, t := range send {
		if res := h.send(ctx, t.local, t.remote, t.p); res != "ok" {
			h.log.Warn("announce: tunnel", "origin", origin, "local", t.local, "result", res)
		}
	}
	return len(send)
}

// pause forgets the tunnels waiting for θ1: the helper dropped their policies (pauseAll), and an announce must not
// hand them multipath again after the pause.
func (h *hub) pause() {
	h.mu.Lock()
	h.tunnels = nil
	h.mu.Unlock()
}

// route records an origin's decision for its host, so that the relay applies it to the origin's tunnels.
func (h *hub) route(origin string, r hubRoute) {
	u, err := url.Parse(origin)
	if err != nil || u.Hostname() == "" {
		return
	}
	h.setRoute(strings.ToLower(u.Hostname()), r)
}

// markUnreachable records a host the proxy could not reach.
func (h *hub) markUnreachable(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unreachable = slices.DeleteFunc(h.unreachable, func(x string) bool { return x == host })
	h.unreachable = append(h.unreachable, host)
	if len(h.unreachable) > maxRoutes {
		h.unreachable = h.unreachable[1:]
	}
}

// forget drops an origin's route: its tunnels are decided at run time again.
func (h *hub) forget(origin string) {
	u, err := url.Parse(origin)
	if err != nil {
		return
	}
	host := strings.ToLower(u.Hostname())
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.routes[host]; ok {
		delete(h.routes, host)
		h.order = slices.DeleteFunc(h.order, func(x string) bool { return x == host })
	}
}

func (h *hub) setRoute(host string, p hubRoute) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.routes[host]; !ok {
		h.order = append(h.order, host)
		if len(h.order) > maxRoutes {
			delete(h.routes, h.order[0])
			h.order = h.order[1:]
		}
	}
	h.routes[host] = p
}

// warmFor is how far back a new host takes decisions from the log to route their origins at once: a browser
// session's worth. Without it a fresh browser's first request to a site decided multipath goes DIRECT (the PAC
// changes only after the decide) and HTTP/2 keeps the whole page on that connection.
const warmFor = time.Hour

// warm routes the origins of recent decisions (newest last, so that they win the routes table's bound).
func (h *hub) warm(db *store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), store.Timeout)
	defer cancel()
	ds, err := db.Latest(ctx, time.Now().Add(-warmFor), maxRoutes)
	if err != nil {
		h.log.Warn("recent decisions not read; routes start empty", "err", err)
		return
	}
	for i := len(ds) - 1; i >= 0; i-- {
		if _, paused := ds[i].Inputs["paused"]; !paused {
			h.route(ds[i].Origin, loggedPolicy(ds[i]))
		}
	}
}

// loggedPolicy is a logged decision's route on the proxy leg, as relayRoute makes it for a fresh one: a cellular
// subflow once a tunnel has received θ1 bytes, never when θ1 is never.
func loggedPolicy(d protocol.Decision) hubRoute {
	_, known := d.Inputs["predicted_size_bytes"]
	theta1 := d.Theta1
	p := relay.Policy{Multipath: theta1 != nil}
	if theta1 != nil {
		p.Theta1, p.Theta2, p.Group = *theta1, d.Theta2, thetaGroup(d.Origin)
	}
	return hubRoute{policy: p, direct: !protocol.WorthRelay(d.Multipath, theta1, known)}
}

// follow gives a page's other hosts (those peers let follow it) the page origin's decision, as the kernel's
// per-address policies do (PROTOCOL.md Peers). A host that already has a route under another decision, its own or
// another page's, keeps it: a page must not move another site's tunnels.
//
// A host's tunnel opened before the page named it (the page's first request to it leaves before the report) runs
// under the run-time decision of a host never seen, in a θ1 group of its own: it waits for θ1 bytes of its own
// (200 kB or more) over WiFi. Those tunnels take the page's decision now, as the host's next ones will: beside the
// T-Mobile LTE trace a third party's tunnel, 30-41 % of a large page's bytes, got its subflow 2.9-4.2 s into
// loads decided multipath from the first byte (e2e/RESULTS.md#decisions, the proxy leg).
func (h *hub) follow(origin string, hosts []string) {
	u, err := url.Parse(origin)
	if err != nil {
		return
	}
	h.mu.Lock()
	page, ok := h.routes[strings.ToLower(u.Hostname())]
	h.mu.Unlock()
	if !ok {
		return
	}
	var retune []tunnelRec
	for _, host := range hosts {
		if _, ok := relay.Target(host + ":443"); ok {
			if cur, had := h.known(host); had && !sameRelayPolicy(cur, page.policy) {
				continue
			}
			h.setRoute(host, page)
			if !page.policy.Multipath || page.direct {
				continue
			}
			// The host's open tunnels waiting for a θ1 of their own (a run-time decision's group is its origin's).
			own := thetaGroup("https://" + strings.ToLower(host))
			h.mu.Lock()
			for i := range h.tunnels {
				if t := &h.tunnels[i]; t.p.Group == own && own != page.policy.Group && time.Since(t.at) < tunnelFresh {
					t.p = page.policy
					retune = append(retune, *t)
				}
			}
			h.mu.Unlock()
		}
	}
	if len(retune) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), actuateBudget)
	defer cancel()
	for _, t := range retune {
		if res := h.send(ctx, t.local, t.remote, t.p); res != "ok" {
			h.log.Warn("peers: tunnel", "origin", origin, "local", t.local, "result", res)
		}
	}
}

// sameRelayPolicy compares two tunnel policies, their θ1 groups included (samePolicy says why).
func sameRelayPolicy(a, b relay.Policy) bool {
	return a.Multipath == b.Multipath && a.Theta1 == b.Theta1 && equalCap(a.Theta2, b.Theta2) && a.Group == b.Group
}

// hasRelay says whether a relay to a configured proxy runs (up or not: the PAC routes through it either way).
func (h *hub) hasRelay() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.relay != nil
}

// status is what proxy_status answers.
func (h *hub) status() ProxyStatus {
	h.mu.Lock()
	r, errText, errSince := h.relay, h.err, h.errSince
	routes, direct := make([]string, 0, len(h.routes)), []string{}
	for _, host := range h.order {
		switch r := h.routes[host]; {
		case r.direct:
			direct = append(direct, host)
		case r.policy.Multipath:
			routes = append(routes, host)
		}
	}
	unreachable := slices.Clone(h.unreachable)
	if unreachable == nil {
		unreachable = []string{}
	}
	h.mu.Unlock()
	st := ProxyStatus{File: h.file, Routes: routes, Direct: direct, Unreachable: unreachable, Usage: []relay.Usage{}}
	switch {
	case r != nil:
		up := r.Upstream()
		rs := r.State()
		user, pass := r.Credentials()
		addr := r.Addr()
		st.Configured, st.Server, st.User, st.Pin = true, up.Addr, up.User, up.Pin
		st.State, st.Detail, st.SinceMS, st.Software = rs.State, rs.Detail, rs.SinceMS, rs.Software
		st.Relay = &RelayAccess{Host: addr.Addr().String(), Port: int(addr.Port()), User: user, Password: pass}
		st.Stats, st.Usage = r.Stats(), r.Usage(maxUsageShown)
	case errText != "":
		st.Configured, st.State, st.Detail, st.SinceMS = true, "error", errText, errSince
	default:
		st.State, st.Detail = "unconfigured", "no proxy set: multipath reaches only the few sites that speak MPTCP themselves"
	}
	return st
}

// push queues a proxy push (the state changed); a full queue drops it, the next one carries the newer state.
func (h *hub) push() {
	p := protocol.Push{V: protocol.Version, Type: protocol.TypeProxyPush, Push: true, Body: h.status()}
	select {
	case h.pushes <- p:
	default:
	}
}

func (h *hub) close() {
	h.mu.Lock()
	r := h.relay
	h.relay = nil
	h.mu.Unlock()
	if r != nil {
		r.Close()
	}
}

// relayPolicy is a decision as the proxy leg carries it out: θ1 as the helper must still enforce it on each
// tunnel, as for direct MPTCP. For a site never seen that is the model's θ1 under the size prior, which waits
// past a warm-cache page (about 128 kB on the seeds' links) and gives a large page its subflow soon after.
func relayPolicy(d decide.Decision) relay.Policy {
	p := relay.Policy{Multipath: d.Theta1 != nil}
	if d.Theta1 != nil {
		p.Theta1, p.Theta2, p.Group = *d.Theta1, d.Theta2, thetaGroup(d.Origin)
	}
	return p
}

// relayRoute is a decision's route on the proxy leg: its policy, and DIRECT when multipath would not pay there
// (protocol.WorthRelay, which the extension mirrors).
func relayRoute(d decide.Decision) hubRoute {
	return hubRoute{policy: relayPolicy(d), direct: !protocol.WorthRelay(d.Multipath, d.Theta1, d.Size.Known)}
}
