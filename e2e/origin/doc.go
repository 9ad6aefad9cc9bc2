// Package origin is the testbed's web server: the page corpus (package corpus) over
// HTTPS on MPTCP listeners, with a JSONL log of every response and connection that says
// how many bytes each MPTCP subflow, hence each client path, carried.
//
// # Listeners
//
//   - h2: HTTPS, ALPN h2 and http/1.1 (default :443).
//   - h1: HTTPS, ALPN http/1.1 only (default :8443), so a client can force HTTP/1.1 per
//     load by choosing the port.
//   - http: plain HTTP/1.1, off unless asked for.
//
// All listen with IPPROTO_MPTCP; a client that does not speak MPTCP gets plain TCP
// (so_protocol 6 in the log, or 262 with mptcp false if the connection fell back).
// Certificates are self-signed ECDSA P-256 ones made at start: one for the names given,
// one for the second origin. The start line (stdout and the log's first line) gives their
// SPKI hashes as spki_list, what Chromium's --ignore-certificate-errors-spki-list takes.
// Landing pages point their third-party objects at the second host name (default
// third.origin.test) on the listener's own scheme and port, so a browser needs both names
// resolved to the server (for Chromium, --host-resolver-rules="MAP origin.test 10.200.3.2,
// MAP third.origin.test 10.200.3.2"). Its own certificate keeps Chromium from coalescing
// its HTTP/2 requests onto the first origin's connection, as it would for two names on one
// certificate and address; real third parties have connections of their own.
// Each corpus site has a host name of its own (package corpus): a request is answered by the
// page at its Host and path first, so news.origin.test/ and shop.origin.test/list/1 are
// different pages; the certificate covers every site's name. --corpus FILE adds the sites
// of a corpus file.
// Every response carries Cache-Control: no-store; corpus objects also carry
// Timing-Allow-Origin: * so Resource Timing reports third-party sizes.
//
// # Per-path accounting
//
// Like seed 000's tcpdump-mpw, the log gives the bytes each subflow carried per response,
// but from the server's own socket rather than a packet trace: getsockopt(SOL_MPTCP,
// MPTCP_FULL_INFO) (kernel 6.5+) returns every subflow's addresses and tcp_info in one
// consistent reading. A response's numbers are the difference between a reading when its
// request arrives and one when the client has acknowledged every byte the server wrote
// up to the end of the response (polled every 5 ms, or taken when the next request on the
// connection arrives). So:
//
//   - One response at a time on a connection (HTTP/1.1): exact. On the namespace test the
//     subflows carried 1.003-1.012 x the body for every body of 20 KB or more, the rest
//     being TLS and HTTP framing.
//   - Several responses in flight on one connection (HTTP/2 multiplexing): they share the
//     attribution; each line's "concurrent" field says with how many (1 = exact). Per-object
//     numbers are then approximate; per-connection totals stay exact.
//   - The connection line, written when the connection closes, has each subflow's totals.
//     A subflow the kernel drops before the last reading (the peer closed first) keeps its
//     last counters; "unaccounted" counts written bytes no reading covered.
//
// bytes_sent is what a subflow put on its path (retransmissions included); subflow_bytes
// sums it. bytes_acked is what the client acknowledged on that subflow; at a response's
// end it can lag, because a data-level ACK on one subflow may cover bytes another subflow
// has not had acknowledged yet. MPTCP reinjections (the same bytes sent on a second
// subflow) are not subflow retransmissions; "reinjected" (mptcpi_bytes_retrans) counts them.
// The subflow's remote address names the client path ("path", from --paths; in the
// testbed 10.200.1.2 is wlan0 and 10.200.2.2 is wwan0).
//
// A response's line is written once its bytes are acknowledged, so a load's lines are all
// in the log about one RTT after the browser has everything, and all of them once the
// server has closed the connections (on SIGINT/SIGTERM it closes them and writes "stop").
//
// # Multipath-Policy
//
// Each request line records the Multipath-Policy header (PROTOCOL.md §7) verbatim (field
// lines joined with ", "), whether it parsed as an RFC 9651 Dictionary, and the values of
// v, mp, t1, t2, dl when they have the types §7 gives. The Dictionary is parsed by
// github.com/dunglas/httpsfv, which passes the public structured-field test suite
// (sfsuite_test.go, native-host/vectors/structured-field-tests).
package origin
