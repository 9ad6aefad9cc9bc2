// Package host is the native messaging host's serve loop: it reads frames from the browser, answers each request
// through the dispatcher (one file per request type), and writes policy pushes when the policy file changes and the
// relay's and downloads' pushes as they come.
//
// A Server is assembled by cmd/mpsurf-host from parts it builds once (Parts): the network-wide policy, the decision
// pipeline (native-host/decide), the Carrier that carries decisions out (native-host/carry) and the decision log.
// The decide handler reads as parse, decide, carry, log, reply.
//
// Every frame goes through one wire.Writer, so replies and pushes never interleave and stdout only ever carries
// whole frames. Bad input is handled as PROTOCOL.md §1 says: an error reply and go on, or an error reply and stop
// (a length over the cap), or a quiet stop (EOF, a truncated frame). The package never exits the process; Serve
// returns and the command decides the exit status.
package host
