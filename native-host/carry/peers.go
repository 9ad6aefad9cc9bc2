package carry

import (
	"context"
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

// Peers puts the addresses a page's requests reached under the page origin's decision, so that its third-party
// connections follow it in the kernel, and on the proxy leg. A web page chooses what it loads, so it must not be
// able to move another site's connections: a peer is refused when its address is not a web server's, when its
// host has a site rule of its own or a decision of its own in this session that differs from the page's, when
// its address is already under another decision that differs (an origin's own, or another page's: a CDN address
// two sites share keeps the first), and when no connection of this user's reaches the address (sock_diag: the
// report must be of connections the browser really has).
func (c *Carrier) Peers(origin string, peers []protocol.Peer) protocol.PeersReply {
	res := "not_configured"
	var accepted []string
	var refused []protocol.PeerRefusal
	hosts := make([]string, 0, len(peers))
	if h := c.helper; h != nil {
		var ok []protocol.Peer
		ok, refused = h.screenPeers(origin, peers, c.sitePrefs(), c.reached)
		for _, p := range ok {
			accepted = append(accepted, p.Addr.String())
			hosts = append(hosts, p.Host)
		}
		ctx, cancel := context.WithTimeout(context.Background(), actuateBudget)
		defer cancel()
		res = h.setPeers(ctx, origin, accepted)
		if res == "ok" {
			c.keepPeers(origin, ok)
		}
	} else {
		// Nothing is actuated; the count says how many distinct addresses a helper would have been given. The proxy
		// leg still must not move a host the user has a rule of its own for.
		prefs := c.sitePrefs()
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
	prefs := c.sitePrefs()
	for _, p := range peers {
		h := strings.ToLower(p.Host)
		if slices.Contains(hosts, h) || !c.relay.tunnelledLately(h) {
			continue
		}
		if rule := prefs.RuleFor("https://" + h); rule == "" || rule == prefs.RuleFor(origin) || h == hostOf(origin) {
			hosts = append(hosts, h)
		}
	}
	c.relay.follow(origin, hosts) // relay.go: the page's third parties take its decision on the proxy leg too
	c.log.Info("peers", "origin", origin, "addrs", accepted, "refused", len(refused), "result", res, "proxy_hosts", len(hosts))
	return protocol.PeersReply{Addrs: len(accepted), Refused: refused, Actuation: clip(res)}
}

// peersKeptFor is how long a remembered peer is put under its origin's decision before the page reports it again
// (restorePeers). An address that has since moved to another site costs nothing that site would notice: the
// helper applies a policy to this user's connections only, and a site's own decision takes its addresses back
// (takeBackLocked).
const peersKeptFor = 7 * 24 * time.Hour

// keepPeers remembers the peers that passed screenPeers and were put under origin's decision, for restorePeers.
// Best effort: without a store the page's next visit reports them again, as before.
func (c *Carrier) keepPeers(origin string, ok []protocol.Peer) {
	if c.store == nil || len(ok) == 0 {
		return
	}
	kept := make([]store.Peer, len(ok))
	for i, p := range ok {
		kept[i] = store.Peer{Host: p.Host, Addr: p.Addr}
	}
	ctx, cancel := context.WithTimeout(context.Background(), store.Timeout)
	defer cancel()
	if err := c.store.SavePeers(ctx, time.Now(), origin, kept); err != nil {
		c.log.Warn("peers not remembered", "origin", origin, "err", err)
	}
}

// restorePeers puts the peers origin's pages reported in earlier sessions (keepPeers) under its decision as soon
// as it is carried out, before the page connects to them: a host started with a new browser session otherwise
// gave a third party the decision only once the page's first response from it had arrived, so the third party's
// connection asked for its cellular subflow well after it was established while the page's own did at once, and
// loads decided multipath from the first byte stayed slower than mp-always's (e2e/results/ARCHIVE-2026.md,
// Decisions). They were screened when reported (a connection of this user's reached them then), so only the other
// checks run again.
func (c *Carrier) restorePeers(origin string, dec decide.Decision) {
	h := c.helper
	if h == nil || dec.Actuation != "ok" || h.hasPeers(origin) || c.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), store.Timeout)
	defer cancel()
	kept, err := c.store.Peers(ctx, origin, time.Now().Add(-peersKeptFor))
	if err != nil || len(kept) == 0 {
		return
	}
	peers := make([]protocol.Peer, len(kept))
	for i, p := range kept {
		peers[i] = protocol.Peer{Host: p.Host, Addr: p.Addr}
	}
	ok, refused := h.screenPeers(origin, peers, c.sitePrefs(), reachedBefore)
	accepted, hosts := make([]string, len(ok)), make([]string, len(ok))
	for i, p := range ok {
		accepted[i], hosts[i] = p.Addr.String(), p.Host
	}
	actx, acancel := context.WithTimeout(context.Background(), actuateBudget)
	defer acancel()
	res := h.setPeers(actx, origin, accepted)
	c.relay.follow(origin, hosts)
	c.log.Info("peers restored", "origin", origin, "addrs", accepted, "refused", len(refused), "result", res)
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
func (c *Carrier) sitePrefs() *protocol.Prefs {
	if c.store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), store.Timeout)
	defer cancel()
	p, err := c.store.Prefs(ctx)
	if err != nil {
		return nil
	}
	return p
}

// ReachedByMe reports which of addrs a TCP connection of this process's uid (the browser's: it started the
// host) has as its remote end now, from sock_diag: established or closing, MPTCP subflows included.
func ReachedByMe(addrs []netip.Addr) (map[netip.Addr]bool, error) {
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

// hostOf is an origin's host name, lower case.
func hostOf(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}
