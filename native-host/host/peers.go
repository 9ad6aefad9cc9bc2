package host

import (
	"context"
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// TypePeers reports the hosts and addresses a tab's page actually talked to (PROTOCOL.md §4 Peers), so that
// the page's connections to third parties, and to addresses the host's own resolver would not have named,
// follow the page's decision in the kernel.
const TypePeers = "peers"

// maxPeers bounds one peers request: the helper takes at most actuate.MaxAddrs addresses per policy.
const maxPeers = actuate.MaxAddrs

// PeersReply is the body of a successful peers reply: how many distinct addresses were taken, and what the
// helper said ("ok", "not_configured", "skipped: ...", "refused: ...", "unavailable: ...").
type PeersReply struct {
	Addrs     int    `json:"addrs"`
	Actuation string `json:"actuation"`
}

// Peer is one host the page's requests reached and the address the browser used for it.
type Peer struct {
	Host string
	Addr netip.Addr
}

func (s *Server) peers(req protocol.Request) protocol.Reply {
	origin, peers, perr := parsePeers(req.Body)
	if perr != nil {
		s.log.Warn("peers refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	seen := map[netip.Addr]bool{}
	var addrs []string
	for _, p := range peers {
		if !seen[p.Addr] && usableAddr(p.Addr) {
			seen[p.Addr] = true
			addrs = append(addrs, p.Addr.String())
		}
	}
	res := "not_configured"
	if c := s.act; c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), actuateBudget)
		defer cancel()
		res = c.setPeers(ctx, origin, addrs)
	}
	hosts := make([]string, len(peers))
	for i, p := range peers {
		hosts[i] = p.Host
	}
	s.proxy.follow(origin, hosts) // proxy.go: the page's third parties take its decision on the proxy leg too
	s.log.Info("peers", "origin", origin, "addrs", addrs, "result", res)
	return protocol.OK(req, PeersReply{Addrs: len(addrs), Actuation: clip(res)})
}

// usableAddr is what the helper accepts as a web server's address; loopback never uses a cellular path.
func usableAddr(a netip.Addr) bool {
	return a.IsValid() && !a.IsLoopback() && !a.IsUnspecified() && !a.IsMulticast() && a.Zone() == ""
}

// parsePeers checks a peers body: origin (as in decide), tab, and 1 to maxPeers {host, ip}. An address the
// browser gives in brackets (IPv6) is taken without them.
func parsePeers(body json.RawMessage) (string, []Peer, *protocol.Error) {
	obj, perr := protocol.AsObject(body, "body")
	if perr != nil {
		return "", nil, perr
	}
	origin, perr := obj.String("origin", -1)
	if perr != nil {
		return "", nil, perr
	}
	if _, perr = obj.Int("tab", -1, protocol.MaxID); perr != nil {
		return "", nil, perr
	}
	items, perr := obj.Array("peers", protocol.MaxSafeInt)
	if perr != nil {
		return "", nil, perr
	}
	if len(items) < 1 || len(items) > maxPeers {
		return "", nil, protocol.Errorf(protocol.CodeBadRequest, "peers: must list 1 to %d", maxPeers)
	}
	out := make([]Peer, 0, len(items))
	for i, it := range items {
		name := "peers[" + strconv.Itoa(i) + "]"
		o, perr := protocol.AsObject(it, name)
		if perr != nil {
			return "", nil, perr
		}
		h, perr := o.String("host", -1)
		if perr != nil {
			return "", nil, protocol.Errorf(protocol.CodeBadRequest, "%s.%s", name, perr.Message)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if lit, err := netip.ParseAddr(host); err == nil {
			host = lit.String() // an IP-literal URL's host
		} else if norm, msg := protocol.NormalizeHost(host); msg != "" {
			return "", nil, protocol.Errorf(protocol.CodeBadRequest, "%s.host: %s", name, msg)
		} else {
			host = norm
		}
		ip, perr := o.String("ip", -1)
		if perr != nil {
			return "", nil, protocol.Errorf(protocol.CodeBadRequest, "%s.%s", name, perr.Message)
		}
		a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(ip, "["), "]"))
		if err != nil {
			return "", nil, protocol.Errorf(protocol.CodeBadRequest, "%s.ip: not an IP address", name)
		}
		out = append(out, Peer{Host: host, Addr: a.Unmap()})
	}
	norm, err := protocol.NormalizeOrigin(origin)
	if err != nil {
		return "", nil, protocol.Errorf(protocol.CodeBadOrigin, "origin: %v", err)
	}
	return norm, out, nil
}

// peersKey is the replay key of an origin's peer addresses, beside the origin's own (its origin string).
func peersKey(origin string) string { return origin + " peers" }

// setPeers puts addrs under the page origin's current decision. The origin's peer addresses accumulate (up to
// actuate.MaxAddrs, most recent kept) so that a reconnect replays them all; the helper itself keeps one decision
// per address, so an address two pages share follows the page that reported it last.
func (c *actuatorClient) setPeers(ctx context.Context, origin string, addrs []string) string {
	if len(addrs) == 0 {
		return "skipped: no address a cellular subflow could reach"
	}
	c.mu.Lock()
	page, ok := c.replay[origin]
	prev := c.replay[peersKey(origin)].Addrs
	c.mu.Unlock()
	if !ok {
		return "skipped: no decision for " + origin + " in this session"
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
