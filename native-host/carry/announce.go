package carry

import (
	"context"
	"fmt"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// Announce is told that a page's responses have announced (Content-Length) at least θ1 bytes
// (PROTOCOL.md §4 Announce). θ1 is the smallest transfer worth multipath (seed 001 §4.2: multipath "only if at
// least 200KB data will be transferred"); once the responses' headers say that much will come, waiting for the
// bytes themselves to arrive over WiFi before the cellular subflow joins only delays it: beside a 2 Mbit/s WiFi
// the testbed's large pages had asked for 200 kB of responses 0.37-0.50 s into the load, and received 200 kB
// 1.08-1.23 s into it (poor-wifi-fast-lte, sp-wifi: the origin's request log against the wlan0 packet timeline;
// e2e/results/ARCHIVE-2026.md, Decisions).
//
// It moves the origin's θ1 to 0 in the helper when the announced bytes reach the θ1 its current decision set: the
// page will transfer that much, which is all θ1 waits to learn. A decision of never, one from the first byte, or
// announced bytes under θ1 change nothing. A server that announces more than it sends only brings its own
// connections' join forward; θ2 still caps what the cellular subflow carries.
func (c *Carrier) Announce(a protocol.Announce) protocol.AnnounceReply {
	if c.helper == nil {
		return protocol.AnnounceReply{Why: "no privileged helper: decisions are advisory", Actuation: "not_configured"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), actuateBudget)
	defer cancel()
	joined, why, res := c.helper.joinNow(ctx, a.Origin, a.Bytes)
	// The page's tunnels through the user's MPTCP proxy, if it goes there (relay.go).
	tunnels := c.relay.joinNow(ctx, a.Origin, a.Bytes)
	if tunnels > 0 && !joined {
		joined, why = true, ""
	}
	c.log.Info("announce", "origin", a.Origin, "tab", a.Tab, "nav", a.Nav, "bytes", a.Bytes, "joined", joined, "why", why, "result", res, "tunnels", tunnels)
	return protocol.AnnounceReply{Joined: joined, Why: why, Actuation: clip(res), Tunnels: tunnels}
}

// joinNow sets θ1 = 0 for the origin's addresses, and for its peers' under the same decision, when the origin's
// current policy waits for θ1 and bytes reach it. The replayed policy becomes θ1 = 0 too, so a reconnect keeps it
// until the origin's next decision replaces it.
func (c *helper) joinNow(ctx context.Context, origin string, bytes int64) (joined bool, why, res string) {
	c.mu.Lock()
	page, ok := c.replay[origin]
	peers, hasPeers := c.replay[peersKey(origin)]
	paused := c.paused
	c.mu.Unlock()
	switch {
	case paused:
		return false, "multipath is paused", "skipped"
	case !ok:
		return false, "no decision for " + origin + " in this session", "skipped"
	case page.Multipath == nil || !*page.Multipath:
		return false, "the decision is never multipath", "skipped"
	case page.Theta1 == 0:
		return false, "multipath from the first byte already", "skipped"
	case bytes < page.Theta1:
		return false, fmt.Sprintf("%d announced bytes are under θ1 = %d", bytes, page.Theta1), "skipped"
	}
	theta1 := page.Theta1
	page.Theta1 = 0
	res = c.setOrigin(ctx, page, origin)
	if hasPeers && peers.Theta1 == theta1 && len(peers.Addrs) > 0 {
		peers.Theta1 = 0
		if r := c.setOrigin(ctx, peers, peersKey(origin)); r != "ok" {
			c.log.Warn("announce: peers", "origin", origin, "result", r)
		}
	}
	return res == "ok", "", res
}
