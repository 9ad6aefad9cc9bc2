// Package paths discovers the device's network paths (interfaces) and measures each one continuously and
// cheaply: RTT, downlink and uplink throughput, loss and up/down, in the PROTOCOL.md Path object.
//
// Sources, all passive except the probe:
//   - Interfaces and their kind from sysfs (/sys/class/net/IF: flags, operstate, type, wireless or phy80211
//     for WiFi, DEVTYPE=wwan or a WWAN driver for cellular), with a name override because emulated links
//     (the testbed's TUN devices) carry none of those marks. Loopback and administratively down interfaces
//     are skipped. Addresses come from the live system (gopsutil).
//   - Counters from /proc/net/dev (gopsutil), one read per tick for all interfaces.
//   - RTT and loss from the kernel's TCP socket diagnostics (sock_diag, inet_diag with INET_DIAG_INFO): every
//     established TCP socket, MPTCP subflows included, grouped by source address. RTT is the smallest
//     tcpi_min_rtt over the path's sockets, the propagation delay without the queueing a transfer adds;
//     loss is total retransmitted over total sent segments of those sockets.
//   - An active TCP connect from the path's source address to a configured target when a path has had no
//     passive sample for a while: the connect time is one round trip (SYN, SYN-ACK); the least of three.
//   - A rate probe (rateprobe.go) when a path has no rate yet: the first 64 KiB of a configured https object,
//     timed and inverted through slow start; at most once per 10 minutes per path, only after every path has
//     been quiet for 2 s (never beside a page load), never on an idle cellular radio unless allowed.
//   - Throughput as a windowed maximum over busy periods (see Rate): 1 s windows, half a second on a cellular
//     path (CellRateSpan).
//
// Every read of /proc and /sys goes through Root, which tests point at fixture trees in testdata/. The
// sampler runs on Linux only; elsewhere NewSampler says so.
package paths
