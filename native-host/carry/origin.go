package carry

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/decide"
)

// resolve returns the origin's addresses: an IP literal, then Hosts, then the system resolver.
func (c *helper) resolve(ctx context.Context, origin string) ([]netip.Addr, error) {
	u, err := url.Parse(origin)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("origin %.80q has no host", origin)
	}
	name := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(name); err == nil {
		addrs = []netip.Addr{ip}
	} else if m, ok := c.hosts[name]; ok {
		addrs = m
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", name); err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if a = a.Unmap(); usableAddr(a) {
			out = append(out, a)
		}
	}
	if len(out) > actuate.MaxAddrs {
		out = out[:actuate.MaxAddrs]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no address a cellular subflow could reach", name)
	}
	return out, nil
}

// carry hands a decision to the helper, within actuateBudget, and notes the outcome in it. It never changes the
// decision itself. A nil client (no helper configured) leaves the decision advisory.
func (c *helper) carry(ctx context.Context, d *decide.Decision) {
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, actuateBudget)
	defer cancel()
	addrs, err := c.resolve(ctx, d.Origin)
	if err != nil {
		d.Actuation = clip("skipped: " + err.Error())
		c.log.Warn("actuation", "origin", d.Origin, "err", err)
		return
	}
	strs := make([]string, len(addrs))
	for i, a := range addrs {
		strs[i] = a.String()
	}
	d.ActuationAddrs = clip(strings.Join(strs, ","))
	// The helper's policy: cellular subflows once the origin's connections have received θ1 bytes together,
	// whatever this page is expected to be (single-path decisions carry θ1 too, so a page that turns out large
	// still gets it); never when θ1 is never.
	mp := d.Theta1 != nil
	req := actuate.Request{Verb: actuate.VerbOrigin, LeaseMS: actuatorLease.Milliseconds(), Addrs: strs, Multipath: &mp}
	if mp {
		// The origin's group: its peers (refreshPeers, setPeers copy this request) count towards the same θ1.
		req.Theta1, req.Theta2, req.Group = *d.Theta1, d.Theta2, thetaGroup(d.Origin)
		req.PreferCellular = d.PreferCellular
	}
	res := c.setOrigin(ctx, req, d.Origin)
	c.mu.Lock()
	c.takeBackLocked(d.Origin, req)
	c.mu.Unlock()
	if res == "ok" {
		c.refreshPeers(ctx, d.Origin, req)
	}
	d.Actuation = clip(res)
	c.log.Info("actuation", "origin", d.Origin, "multipath", mp, "addrs", strs, "result", res)
}

// refreshPeers puts the addresses the origin's pages reported (peers) under its new decision, if it changed,
// less those another decision that differs from the new one holds.
func (c *helper) refreshPeers(ctx context.Context, origin string, page actuate.Request) {
	c.mu.Lock()
	prev, ok := c.replay[peersKey(origin)]
	var addrs []string
	for _, a := range prev.Addrs {
		if _, taken := c.claimLocked(netip.MustParseAddr(a), origin, page); !taken {
			addrs = append(addrs, a)
		}
	}
	c.mu.Unlock()
	if !ok || samePolicy(prev, page) || len(addrs) == 0 {
		return
	}
	req := page
	req.Addrs = addrs
	if res := c.setOrigin(ctx, req, peersKey(origin)); res != "ok" {
		c.log.Warn("actuation of peers", "origin", origin, "result", res)
	}
}

// thetaGroup names an origin's θ1 group for the helper (actuate.OriginPolicy.Group): a hash of the origin,
// never 0 (no group). Two origins that collide would only count their bytes together, never cross users.
func thetaGroup(origin string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(origin))
	if g := h.Sum32(); g != 0 {
		return g
	}
	return 1
}

func equalCap(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func clip(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

// usableAddr is what the helper accepts as a web server's address (actuate.WebAddr): no loopback, link-local,
// multicast, broadcast, reserved or unspecified address ever uses a cellular path.
func usableAddr(a netip.Addr) bool { return actuate.WebAddr(a) }
