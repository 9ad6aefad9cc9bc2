package host

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/diag"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// A page's peer reports are budgeted per page origin: a real page sends a few per load (PEERS_PER_PAGE pairs in
// requests of 64), a page that reloads itself in a loop would send many, each costing a sock_diag dump and a
// request to the helper. Past the budget the host answers rate_limited and changes nothing.
const (
	peersRate    = 10 // requests per second per page origin, after the burst
	peersBurst   = 20
	peersOrigins = 256 // page origins whose budget is remembered
)

// peers puts the addresses a page's requests reached under the page origin's decision, so that its third-party
// connections follow it in the kernel. A web page chooses what it loads, so it must not be able to move another
// site's connections: a peer is refused when its address is not a web server's, when its host has a site rule of
// its own or a decision of its own in this session that differs from the page's, when its address is already
// under another decision that differs (an origin's own, or another page's: a CDN address two sites share keeps
// the first), and when no connection of this user's reaches the address (sock_diag: the report must be of
// connections the browser really has).
func (s *Server) peers(req protocol.Request) protocol.Reply {
	origin, peers, perr := protocol.ParsePeers(req.Body)
	if perr != nil {
		s.log.Warn("peers refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	s.peerMu.Lock()
	ok, wait := s.peerBudget.Allow(origin, time.Now())
	s.peerMu.Unlock()
	if !ok {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeRateLimited,
			"peers of %s: more than %d requests a second; nothing was changed; retry in %d ms", origin, peersRate, wait.Milliseconds()))
	}
	res := "not_configured"
	var accepted []string
	var refused []protocol.PeerRefusal
	hosts := make([]string, 0, len(peers))
	if c := s.act; c != nil {
		var ok []protocol.Peer
		ok, refused = c.screenPeers(origin, peers, s.sitePrefs(), s.reached)
		for _, p := range ok {
			accepted = append(accepted, p.Addr.String())
			hosts = append(hosts, p.Host)
		}
		ctx, cancel := context.WithTimeout(context.Background(), actuateBudget)
		defer cancel()
		res = c.setPeers(ctx, origin, accepted)
		if res == "ok" {
			s.keepPeers(origin, ok)
		}
	} else {
		// Nothing is actuated; the count says how many distinct addresses a helper would have been given. The proxy
		// leg still must not move a host the user has a rule of its own for.
		prefs := s.sitePrefs()
		seen := map[netip.Addr]bool{}
		for _, p := range peers {
			if rule := prefs.RuleFor("https://" + p.Host); rule == "" || rule == prefs.RuleFor(origin) || p.Host == hostOf(origin) {
				hosts = append(hosts, p.Host)
			}
			if !seen[p.Addr] && actuate.WebAddr(p.Addr) {
				seen[p.Addr] = true
				accepted = append(accepted, p.Addr.String())
			}
		}
	}
	// The proxy leg: a request through the user's MPTCP proxy reaches the relay (a loopback address, which the
	// screen above refuses), and the relay, not a browser socket, reaches the site; the relay's own tunnels say
	// which hosts this browser reached through it. A peer whose host it tunnelled to lately follows the page there,
	// unless the host has a site rule of its own that differs (follow keeps a host already under another decision).
	prefs := s.sitePrefs()
	for _, p := range peers {
		h := strings.ToLower(p.Host)
		if slices.Contains(hosts, h) || !s.proxy.tunnelledLately(h) {
			continue
		}
		if rule := prefs.RuleFor("https://" + h); rule == "" || rule == prefs.RuleFor(origin) || h == hostOf(origin) {
			hosts = append(hosts, h)
		}
	}
	s.proxy.follow(origin, hosts) // proxy.go: the page's third parties take its decision on the proxy leg too
	s.log.Info("peers", "origin", origin, "addrs", accepted, "refused", len(refused), "result", res, "proxy_hosts", len(hosts))
	return protocol.OK(req, protocol.PeersReply{Addrs: len(accepted), Refused: refused, Actuation: clip(res)})
}

// peersKeptFor is how long a remembered peer is put under its origin's decision before the page reports it again
// (restorePeers). An address that has since moved to another site costs nothing that site would notice: the
// helper applies a policy to this user's connections only, and a site's own decision takes its addresses back
// (takeBackLocked).
const peersKeptFor = 7 * 24 * time.Hour

// keepPeers remembers the peers that passed screenPeers and were put under origin's decision, for restorePeers.
// Best effort: without a store the page's next visit reports them again, as before.
func (s *Server) keepPeers(origin string, ok []protocol.Peer) {
	db, perr := s.storeDB()
	if perr != nil || len(ok) == 0 {
		return
	}
	kept := make([]store.Peer, len(ok))
	for i, p := range ok {
		kept[i] = store.Peer{Host: p.Host, Addr: p.Addr}
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := db.SavePeers(ctx, time.Now(), origin, kept); err != nil {
		s.log.Warn("peers not remembered", "origin", origin, "err", err)
	}
}

// restorePeers puts the peers origin's pages reported in earlier sessions (keepPeers) under its decision as soon
// as it is carried out, before the page connects to them: a host started with a new browser session otherwise
// gave a third party the decision only once the page's first response from it had arrived. In the decisions grid
// at a28fc0b (e2e/results/decisions/runs-a28fc0b.jsonl.gz, baseline, news-gallery-2, actuator_conns) the third
// party's connection asked for its cellular subflow 174 ms after it was established, the page's own at once, and
// its loads decided multipath from the first byte took 1.05x mp-always's time (median over 24 large pages). They
// were screened when reported (a connection of this user's reached them then), so only the other checks run again.
func (s *Server) restorePeers(origin string, dec decide.Decision) {
	c := s.act
	if c == nil || dec.Actuation != "ok" || c.hasPeers(origin) {
		return
	}
	db, perr := s.storeDB()
	if perr != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	kept, err := db.Peers(ctx, origin, time.Now().Add(-peersKeptFor))
	if err != nil || len(kept) == 0 {
		return
	}
	peers := make([]protocol.Peer, len(kept))
	for i, p := range kept {
		peers[i] = protocol.Peer{Host: p.Host, Addr: p.Addr}
	}
	ok, refused := c.screenPeers(origin, peers, s.sitePrefs(), reachedBefore)
	accepted, hosts := make([]string, len(ok)), make([]string, len(ok))
	for i, p := range ok {
		accepted[i], hosts[i] = p.Addr.String(), p.Host
	}
	actx, acancel := context.WithTimeout(context.Background(), actuateBudget)
	defer acancel()
	res := c.setPeers(actx, origin, accepted)
	s.proxy.follow(origin, hosts)
	s.log.Info("peers restored", "origin", origin, "addrs", accepted, "refused", len(refused), "result", res)
}

// reachedBefore is screenPeers' reach check for remembered peers: each was reached when it was reported.
func reachedBefore(addrs []netip.Addr) (map[netip.Addr]bool, error) {
	out := make(map[netip.Addr]bool, len(addrs))
	for _, a := range addrs {
		out[a] = true
	}
	return out, nil
}

// sitePrefs are the user's preferences (site rules), nil when the host has none stored.
func (s *Server) sitePrefs() *protocol.Prefs {
	db, perr := s.storeDB()
	if perr != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	p, err := db.Prefs(ctx)
	if err != nil {
		return nil
	}
	return p
}

// usableAddr is what the helper accepts as a web server's address (actuate.WebAddr): no loopback, link-local,
// multicast, broadcast, reserved or unspecified address ever uses a cellular path.
func usableAddr(a netip.Addr) bool { return actuate.WebAddr(a) }

// reachedByMe reports which of addrs a TCP connection of this process's uid (the browser's: it started the
// host) has as its remote end now, from sock_diag: established or closing, MPTCP subflows included.
func reachedByMe(addrs []netip.Addr) (map[netip.Addr]bool, error) {
	d, err := diag.Open()
	if err != nil {
		return nil, err
	}
	defer d.Close()
	socks, err := d.DumpStates(nil, diag.StatesOpen)
	if err != nil {
		return nil, err
	}
	want := map[netip.Addr]bool{}
	for _, a := range addrs {
		want[a] = true
	}
	me := uint32(os.Getuid())
	got := map[netip.Addr]bool{}
	for _, k := range socks {
		if a := k.Remote.Addr(); k.UID == me && want[a] {
			got[a] = true
		}
	}
	return got, nil
}

// samePolicy compares two helper policies: multipath, θ1, θ2, WiFi as backup and the θ1 group. Two sites'
// decisions with the same numbers still differ by group: a page that took another site's address into its own
// group would count that site's connections towards its θ1 and, with its announce, set that site's θ1 to 0.
func samePolicy(a, b actuate.Request) bool {
	return (a.Multipath == nil) == (b.Multipath == nil) && (a.Multipath == nil || *a.Multipath == *b.Multipath) &&
		a.Theta1 == b.Theta1 && equalCap(a.Theta2, b.Theta2) && a.PreferCellular == b.PreferCellular && a.Group == b.Group
}

// screenPeers splits a page's reported peers into those that may follow the page origin's decision and those
// that may not (Server.peers says which and why). The first host reported with an address stands for it; all
// are refused when the page has no decision (setPeers then says so).
func (c *actuatorClient) screenPeers(origin string, peers []protocol.Peer, prefs *protocol.Prefs,
	reached func([]netip.Addr) (map[netip.Addr]bool, error)) (ok []protocol.Peer, refused []protocol.PeerRefusal) {
	c.mu.Lock()
	page, decided := c.replay[origin]
	pageHost, pageRule := hostOf(origin), prefs.RuleFor(origin)
	var checked []protocol.Peer
	seen := map[netip.Addr]bool{}
	for _, p := range peers {
		if seen[p.Addr] || !decided {
			continue
		}
		seen[p.Addr] = true
		why := ""
		if rule := prefs.RuleFor("https://" + p.Host); !actuate.WebAddr(p.Addr) {
			why = "not a web server's address (loopback, link-local, multicast, broadcast, reserved or unspecified)"
		} else if p.Host != pageHost && rule != "" && rule != pageRule {
			why = fmt.Sprintf("%s has a site rule of its own (%s)", p.Host, rule)
		} else if other, ok := c.decisionOfLocked(p.Host, origin); ok && !samePolicy(other, page) {
			why = fmt.Sprintf("%s has a decision of its own", p.Host)
		} else if key, ok := c.claimLocked(p.Addr, origin, page); ok {
			why = fmt.Sprintf("the address is under %s's decision", strings.TrimSuffix(key, peersSuffix))
		}
		if why != "" {
			refused = append(refused, protocol.PeerRefusal{Host: p.Host, IP: p.Addr.String(), Why: why})
			continue
		}
		checked = append(checked, p)
	}
	c.mu.Unlock()
	if len(checked) == 0 {
		return nil, refused
	}
	addrs := make([]netip.Addr, len(checked))
	for i, p := range checked {
		addrs[i] = p.Addr
	}
	got, err := reached(addrs)
	for _, p := range checked {
		switch {
		case err != nil:
			refused = append(refused, protocol.PeerRefusal{Host: p.Host, IP: p.Addr.String(), Why: "cannot tell whether a connection of this user reaches it: " + err.Error()})
		case !got[p.Addr]:
			refused = append(refused, protocol.PeerRefusal{Host: p.Host, IP: p.Addr.String(), Why: "no connection of this user reaches it"})
		default:
			ok = append(ok, p)
		}
	}
	return ok, refused
}

// hostOf is an origin's host name, lower case.
func hostOf(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// decisionOfLocked is the decision the host made in this session for an origin of host (other than except), if
// any. Caller holds c.mu.
func (c *actuatorClient) decisionOfLocked(host, except string) (actuate.Request, bool) {
	for _, k := range c.order {
		if k != except && !strings.HasSuffix(k, peersSuffix) && hostOf(k) == host {
			return c.replay[k], true
		}
	}
	return actuate.Request{}, false
}

// takeBackLocked removes an origin's own addresses from the peers of other pages whose decision differs: the
// origin's own decision holds for them, and a reconnect must not replay another page's over it. Caller holds c.mu.
func (c *actuatorClient) takeBackLocked(origin string, own actuate.Request) {
	for _, k := range c.order {
		r := c.replay[k]
		if !strings.HasSuffix(k, peersSuffix) || k == peersKey(origin) || samePolicy(r, own) {
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(r.Addrs), func(a string) bool { return slices.Contains(own.Addrs, a) })
		if len(kept) != len(r.Addrs) {
			r.Addrs = kept
			c.replay[k] = r
		}
	}
}

// claimLocked reports which other decision (an origin's own, or another page's peers) holds addr under a policy
// that differs from page's. Caller holds c.mu.
func (c *actuatorClient) claimLocked(addr netip.Addr, origin string, page actuate.Request) (string, bool) {
	a := addr.String()
	for _, k := range c.order {
		if k == origin || k == peersKey(origin) {
			continue
		}
		if r := c.replay[k]; slices.Contains(r.Addrs, a) && !samePolicy(r, page) {
			return k, true
		}
	}
	return "", false
}

// hasPeers says whether origin's pages reported peers in this session.
func (c *actuatorClient) hasPeers(origin string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.replay[peersKey(origin)].Addrs) > 0
}

// peersKey is the replay key of an origin's peer addresses, beside the origin's own (its origin string).
func peersKey(origin string) string { return origin + peersSuffix }

const peersSuffix = " peers"

// setPeers puts addrs (screened: screenPeers) under the page origin's current decision. The origin's peer
// addresses accumulate (up to actuate.MaxAddrs, most recent kept) so that a reconnect replays them all, less
// those another decision has claimed since.
func (c *actuatorClient) setPeers(ctx context.Context, origin string, addrs []string) string {
	c.mu.Lock()
	page, ok := c.replay[origin]
	var prev []string
	for _, a := range c.replay[peersKey(origin)].Addrs {
		if _, taken := c.claimLocked(netip.MustParseAddr(a), origin, page); !taken {
			prev = append(prev, a)
		}
	}
	c.mu.Unlock()
	if !ok {
		return "skipped: no decision for " + origin + " in this session"
	}
	if len(addrs) == 0 {
		return "skipped: no peer may follow the page's decision"
	}
	merged := append([]string(nil), addrs...)
	have := map[string]bool{}
	for _, a := range addrs {
		have[a] = true
	}
	for i := len(prev) - 1; i >= 0 && len(merged) < actuate.MaxAddrs; i-- {
		if !have[prev[i]] {
			have[prev[i]] = true
			merged = append(merged, prev[i])
		}
	}
	req := page
	req.Addrs = merged
	return c.setOrigin(ctx, req, peersKey(origin))
}
