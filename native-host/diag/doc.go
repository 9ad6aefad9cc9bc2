// Package diag reads TCP sockets from the kernel's socket diagnostics (NETLINK_SOCK_DIAG, inet_diag with
// INET_DIAG_INFO): each socket's two ends, its owner's uid and its tcp_info counters. MPTCP subflows are TCP
// sockets, so they appear here too, with the uid of the process that made the connection. An MPTCP connection's
// own socket, above its subflows, is read apart (DumpMPTCP): its token, its next in-order sequence number and the
// receive buffer its data takes.
//
// It is its own package because two very different processes read it: the host's path sampler (RTT and loss
// per path) and the privileged helper (θ1/θ2 byte counters, whose connection a subflow is, receive buffers). The helper runs with
// CAP_NET_ADMIN, so what it links is kept to this, the MPTCP netlink client and the standard library.
package diag
