// Package host is the native messaging host's serve loop: it reads frames from the browser, answers each request
// through the dispatcher (one file per request type), and writes policy pushes when the policy file changes and the
// relay's and downloads' pushes as they come.
//
// A Server is assembled by cmd/mpsurf-host from parts it builds once (Parts): the network-wide policy, the decision
// pipeline (native-host/decide), the Carrier that carries decisions out (native-host/carry) and the decision log.
// The decide handler reads as parse, decide, carry, reply; the decision's row is then queued for the log.
//
// Every frame goes through one wire.Writer, so replies and pushes never interleave and stdout only ever carries
// whole frames. Bad input is handled as PROTOCOL.md §1 says: an error reply and go on, or an error reply and stop
// (a length over the cap), or a quiet stop (EOF, a truncated frame). The package never exits the process; Serve
// returns and the command decides the exit status.
//
// The decision log is written after the reply (decisionlog.go). A navigation waits for its decision, not for the
// store's commit (an fsync at synchronous=FULL, milliseconds on a laptop's disk); one writer goroutine writes the
// rows in the order decided, a run of them per commit. What reads the log waits for the rows replied before it:
// a report (its load's outcome goes on its decision's row, and is learned from), log_export, status and log_delete.
// When the host stops by itself (the port closed, SIGTERM, SIGINT) Serve and Close write every queued row before
// the store is closed. The crash window: a decision replied but not yet committed is lost if the process is killed
// (SIGKILL, a crash, power loss) before its row is written: at most the queue's rows (DefaultLogQueue); in
// ordinary browsing the one decision being committed, in a burst (a restored session of hundreds of tabs) the tens
// decided during the last commits. That is acceptable because the log is a record (of what
// was decided, for the user, for export and for learning), not what carries the decision out: the browser already
// has its answer and the helper has already applied it; a lost row costs one load's record and what the model
// would have learned from it. The rows that are kept are always the first ones decided, with no gap.
package host
