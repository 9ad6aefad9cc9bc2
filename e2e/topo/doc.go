// Package topo builds and removes the emulated two-path network: a client,
// a router and a server network namespace, two emulated links between client
// and router (WiFi on wlan0, cellular on wwan0, each a pair of TUN devices
// joined by a linkem.Link) and a veth pair between router and server.
//
//	mps-client                 mps-router                     mps-server
//	wlan0 10.200.1.2 =[linkem]= r-wlan0 10.200.1.1
//	wwan0 10.200.2.2 =[linkem]= r-wwan0 10.200.2.1
//	                            r-eth0 10.200.3.1 ---veth--- eth0 10.200.3.2
//	                            r-eth1 10.200.4.1 ---veth--- eth0 10.200.4.2  mps-proxy (Options.Proxy)
//
// With Options.Proxy a fourth namespace stands for an MPTCP proxy on the
// Internet (seed 001 §5.3): the client reaches it over both emulated links,
// and it reaches the origins over the router, as it would reach websites.
//
// The client routes by source address (one table per interface), so an
// MPTCP subflow bound to 10.200.2.2 leaves on wwan0 whatever the default
// route is. Modes switch the default route and the in-kernel path manager's
// subflow endpoint between page loads.
//
// Everything is created with iproute2 and per-namespace sysctls; nothing in
// the root namespace changes except the namespace mounts under /run/netns.
// Names carry a prefix ("mps" by default) so tests can run beside a live
// testbed. Up, Down and SetMode need CAP_SYS_ADMIN and CAP_NET_ADMIN (root).
package topo
