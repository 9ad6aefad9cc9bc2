// Package actuate is MPSurf's privileged helper: a small daemon holding CAP_NET_ADMIN that carries the host's
// decisions into the kernel. It listens on a Unix socket, admits only peers whose SO_PEERCRED uid or gid is
// allowed, accepts a fixed set of verbs (proto.go, each with its own checks) at a rate bounded per uid and per
// session, with bounded connections per uid, and writes what it changes and what it refuses to an audit log
// bounded in size and, per uid, in rate (audit.go). One client holds the session at a time, bound to the
// connection that said hello; no other process takes a live session over (session.go). Decisions apply to the
// session owner's connections only, and status shows each caller its own connections only. A per-connection
// policy (set-conn-policy) is for the caller's own established connection (sock_diag), applies to a connection
// of that caller's uid only, and lapses when no MPTCP connection takes it within a few seconds.
//
// Every kernel change is a lease: the client renews it, and when it stops (killed, hung) the change is undone
// within the lease plus one second. Before any change the helper writes the prior value of what it touches to
// an undo record (undo.go) under its state directory; it restores from that record on exit, on SIGTERM, from
// `mpsurf-actuator --restore` (the systemd unit's ExecStopPost), and at the next start after a crash.
//
// Backends (backend.go) are the kernel levers: the userspace path manager (per connection: the cellular subflow
// opens once the connection has received θ1 bytes and closes once it has carried θ2, counted from the subflows'
// tcp_info through sock_diag, polled every 5 ms only while a connection waits for either), the in-kernel
// endpoint's subflow flag (global), the net.mptcp.enabled sysctl (global; refused under mptcpize, where
// enabled=0 makes socket() fail with ENOPROTOOPT and Chromium loads nothing), and a dry run that only records.
//
// prefer_cellular (set-origin-policy, set-conn-policy; a boolean, only with multipath) asks the userspace backend to
// mark a connection's initial (WiFi) subflow backup once its cellular subflow is established (the userspace path
// manager's SET_FLAGS; the kernel sends MP_PRIO): the server then sends on cellular and keeps WiFi as the fallback,
// for a fast cellular link beside a slow WiFi. status shows it per connection as primary_backup and counts it in
// stats.primary_backups; release gives WiFi its priority back. The endpoint and sysctl backends refuse both policy
// verbs (unsupported) whatever their fields; the dry run records it.
package actuate
