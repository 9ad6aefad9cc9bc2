// Package netns runs code inside another network namespace, for the testbed (e2e/topo, its probes) and the
// real-kernel tests (native-host/nstest): Run and RunNamed lock a goroutine to its OS thread, move that thread into
// the namespace, run the function there and move it back, so that the sockets, TUN devices and /proc/sys/net files
// the function opens belong to that namespace. CongestionControl is the socket hook those sockets use to pick a
// TCP congestion control of their own.
package netns
