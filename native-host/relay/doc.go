// Package relay is the host's local proxy for multipath on the real web (seed 001 §5.3). Almost no website speaks
// MPTCP, so MPSurf reaches them through a proxy of the user's own (Squid, packaging/proxy) that does: the browser's
// PAC sends every https origin but those known not to gain from multipath to this relay on 127.0.0.1, and the relay carries each CONNECT tunnel to
// that proxy over MPTCP (net.Dialer.SetMultipathTCP) and TLS, with the user's credentials. Everything else goes
// DIRECT, and the browser itself needs no mptcpize.
//
// Because the relay sees each tunnel's origin (the CONNECT target), it hands the helper that origin's decision (or,
// for an origin without one, the decision pipeline's for a connection of unknown size to it) for the tunnel's own
// connection (set-conn-policy: θ1 and θ2 per connection, although every tunnel goes to one proxy
// address), and it counts the bytes each origin moved over the cellular subflow, read from the connection's own
// MPTCP_FULL_INFO.
//
// It never breaks browsing: the relay answers the browser's CONNECT only once the proxy has answered its own, within
// a budget (one second); when the proxy is slow, dead, refuses the credentials or presents another certificate, the
// relay resets the browser's connection, which Chromium treats as a proxy failure and retries the request on the
// next PAC entry (DIRECT), and the state it reports turns "down" so that the extension takes the proxy out of the
// PAC. The browser authenticates to the relay with per-process credentials (Basic, over loopback), so that other
// local users cannot spend the user's proxy.
//
// Each tunnel through the proxy pays MPTCP's and TLS's handshakes before its CONNECT; after a tunnel the relay keeps
// one spare connection with both done (spare.go), which the next tunnel takes, closed after half a minute unused.
//
// Hand-written rather than a maintained forward proxy, because what it does is MPSurf's own: per-tunnel decisions
// carried to the helper, per-origin cellular accounting, and a CONNECT client that fails within a budget; the
// proxying itself is Squid's. It parses HTTP with net/http and speaks TLS with crypto/tls.
package relay
