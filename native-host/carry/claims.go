package carry

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// The peers' claims: the addresses a page's requests reached follow the page origin's decision in the helper
// (peersKey's policy beside the origin's own), unless another decision holds them.

// samePolicy compares two helper policies: multipath, θ1, θ2, WiFi as backup and the θ1 group. Two sites'
// decisions with the same numbers still differ by group: a page that took another site's address into its own
// group would count that site's connections towards its θ1 and, with its announce, set that site's θ1 to 0.
func samePolicy(a, b actuate.Request) bool {
	return (a.Multipath == nil) == (b.Multipath == nil) && (a.Multipath == nil || *a.Multipath == *b.Multipath) &&
		a.Theta1 == b.Theta1 && equalCap(a.Theta2, b.Theta2) && a.PreferCellular == b.PreferCellular && a.Group == b.Group
}

// screenPeers splits a page's reported peers into those that may follow the page origin's decision and those
// that may not (Carrier.Peers says which and why). The first host reported with an address stands for it; all
// are refused when the page has no decision (setPeers then says so).
func (c *helper) screenPeers(origin string, peers []protocol.Peer, prefs *protocol.Prefs,
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

// decisionOfLocked is the decision the host made in this session for an origin of host (other than except), if
// any. Caller holds c.mu.
func (c *helper) decisionOfLocked(host, except string) (actuate.Request, bool) {
	for _, k := range c.order {
		if k != except && !strings.HasSuffix(k, peersSuffix) && hostOf(k) == host {
			return c.replay[k], true
		}
	}
	return actuate.Request{}, false
}

// takeBackLocked removes an origin's own addresses from the peers of other pages whose decision differs: the
// origin's own decision holds for them, and a reconnect must not replay another page's over it. Caller holds c.mu.
func (c *helper) takeBackLocked(origin string, own actuate.Request) {
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
func (c *helper) claimLocked(addr netip.Addr, origin string, page actuate.Request) (string, bool) {
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
func (c *helper) hasPeers(origin string) bool {
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
func (c *helper) setPeers(ctx context.Context, origin string, addrs []string) string {
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
