// Package mptcp talks to the Linux kernel's MPTCP path manager over generic netlink (family "mptcp_pm"):
// in-kernel endpoints and limits, the userspace path manager's SUBFLOW_CREATE, SUBFLOW_DESTROY and per-subflow
// SET_FLAGS (backup), and the events multicast on the "mptcp_pm_events" group. Numbers and attribute layouts
// follow the kernel's uapi headers include/uapi/linux/mptcp.h and mptcp_pm.h (generated from
// Documentation/netlink/specs/mptcp_pm.yaml).
//
// Encoding and decoding (attr.go) are portable and tested everywhere; the socket client (client_linux.go)
// exists only on Linux, and every other OS gets ErrUnsupported. All commands need CAP_NET_ADMIN in the network
// namespace the client was dialled in.
package mptcp
