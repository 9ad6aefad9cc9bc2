// Package carry carries a decision out. The decision pipeline (native-host/decide) only decides; the host's
// decide handler hands each navigation's decision to a Carrier, which
//   - gives it to the privileged helper (native-host/actuate) for the origin's addresses, over one session with a
//     short lease, replayed after a reconnect and retried when the helper's rate limit defers it (helper.go,
//     origin.go);
//   - lets the addresses a page's requests reached follow the page's decision, unless another site's decision
//     holds them, and remembers them for the next session (claims.go, peers.go);
//   - routes the proxy leg: the relay (native-host/relay) to the user's MPTCP proxy applies each host's decision
//     to its tunnels, and the extension's PAC sends the hosts not worth the relay DIRECT (relay.go);
//   - brings θ1 forward when a page announces that much (announce.go), and turns everything single path at once
//     while multipath is paused (carry.go).
//
// A Carrier is built once by cmd/mpsurf-host from a Config it fills from its environment and files; nothing here
// reads the environment. Start connects to the helper and starts the relay's listener; New does neither.
package carry
