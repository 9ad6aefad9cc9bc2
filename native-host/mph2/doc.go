// Package mph2 downloads one large HTTP object over two network paths at once, WiFi and cellular, with byte-range
// requests from the client alone: MP-H2 (seed 003, Nikravesh et al., MobiCom 2019). No server change, no MPTCP.
//
// The scheduler follows seed 003 §3:
//
//   - The primary path starts with a plain request for the whole object (Range: bytes=0-, so that the first
//     response also says whether the server serves ranges) and learns the size from it; the secondary path then
//     asks for the second half (§3.3). Both paths' connections are dialled at once.
//   - With the size known beforehand (Options.Size: the browser's, or a HEAD's), both paths ask at once (§3.6,
//     MP-H2+FS): the primary's first request stops at a split made by Eq. 1 on whatever estimates exist (the
//     priors; halves without them), and the secondary asks for the rest as soon as its connection is up, without
//     waiting a primary round trip for the size. Whichever answer comes first is checked as the first response
//     (size against Options.Size, ranges, validators) and the other against it. A wrong size fails the download
//     before a byte is written; a server that ignores ranges, or gives no validator, leaves the primary's stream
//     alone to the end, and the secondary's answer is dropped before it writes anything.
//   - Each path's application-layer RTT is measured with HTTP/2 PING frames every 100 ms, a moving average of the
//     last 5 (§3.4.1), and its bandwidth from a sample per 20 KB received, averaged over the last 500 KB
//     (footnote 3). Chunk sizes follow Eq. 1.
//   - Algorithm 1 runs whenever data arrives: when the fast path will finish more than δ = 50 ms before the slow
//     one and is within one RTT of its own end, it takes the tail of the slow path's range with a new request,
//     pipelined so that its first byte arrives as the current chunk ends, and the slow path's range end moves
//     back (range-end adjustment). At most two streams per path.
//   - Range ends move without tail bytes (§3.4.2): the client grants each HTTP/2 stream flow-control credit only
//     up to that stream's current range end, so the server never sends past it, and a split point is never put
//     inside credit already granted. A stream that reaches its end is reset with RST_STREAM. This is why the HTTP/2
//     streams are driven here on golang.org/x/net/http2's Framer and hpack rather than through its Transport:
//     no maintained Go client lets the caller set a stream's receive window.
//   - HTTP/1.1 servers work too: range requests on separate connections per path (net/http), and a range end
//     moves by closing that connection, the only way HTTP/1.1 has (§3.4.2). The RTT then comes from the
//     requests' response times.
//
// A cap on the secondary paths' bytes (θ2, Options.SecondaryCap) bounds what they are given, in the first split,
// in every move and in ranges left by an ended stream; only when the primary path is gone does the secondary
// finish the file beyond it.
//
// Every range request after the first carries If-Range with the first response's strong validator (the
// known-size start's secondary request cannot: no validator is known when it is sent); every response is checked
// against the first (status, Content-Range, ETag, Last-Modified). A server that ignores ranges, a
// representation that changes mid-way and a path that dies all end in a single-path download that never mixes
// bytes of two representations. The file is written as NAME.mpsurf-part with a sidecar NAME.mpsurf-part.json
// (validators and the ranges on disk), so a stopped download resumes or is removed and never looks complete; the
// result is checked against the size and, when the server gives one, a digest (Repr-Digest, Digest, Content-MD5).
//
// What a download may reach and write (it runs with the user's cookies, on a URL a web page chose): only public
// addresses, checked on the address each connection is about to connect to, so that no resolver answer (DNS
// rebinding) gets around it, with the caller's own name mappings (Options.Resolve) as the one exception
// (target.go); no redirect, over either protocol, and never a connection in clear; at most the size the caller
// announced, or without one what the disk has free, so a response that does not say its size cannot grow the
// file past it; and the partial file and its sidecar are never opened through a symlink, a new one is created
// exclusively and an old one is resumed only when it is the user's own (part.go).
//
// Each path's connections are bound to its interface with SO_BINDTODEVICE, which Linux ≥ 5.7 allows without
// CAP_NET_RAW for a socket not yet bound to a device (checked by TestIntegrationBindUnprivileged), and to the
// interface's address, so that source-based policy routing agrees; the privileged helper is not needed.
package mph2
