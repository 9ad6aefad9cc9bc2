// Package store is the host's durable memory: a SQLite database (the pure-Go driver modernc.org/sqlite) holding one
// row per decision with its inputs, outputs and later outcome, the load observations the extension reports, the
// user's last preferences and cellular byte counters per day.
//
// Durability. The database runs in WAL mode with synchronous=FULL. Every write is one transaction, and a write
// returns only after that transaction has committed, so a committed write is on disk:
//
//   - kill -9 of the host: every committed transaction survives. Even at NORMAL this would hold, because a commit has
//     written its frames to the WAL file (the OS page cache) before it returns, and the kernel keeps those pages when
//     a process dies.
//   - power loss or a kernel crash: at FULL the WAL is fsynced at every commit, so every committed transaction
//     survives. At NORMAL the WAL is fsynced only at checkpoints, so the last transactions before the loss could roll
//     back (the database stays consistent, but committed decisions would be missing).
//
// FULL is chosen because the log promises that a decision it kept stays kept; the price is one fsync per commit.
// BenchmarkLogDecision measured one committed decision at 0.11 ms with NORMAL and 0.80 ms with FULL on the
// development machine (ext4 on a virtual disk). The serving host replies to a navigation before its decision is
// committed and writes its decisions a run per commit (LogDecisions), so the fsync is not on the navigation's
// path; its replies to the other writes (report, prefs) still wait for their commit. native-host/host's doc.go
// says what a crash can lose in between.
//
// Privacy. The store keeps origins (scheme, host, port) and path classes, never URLs: every origin passes
// protocol.NormalizeOrigin, which refuses a path, query or fragment, before it is written; a page's URL path
// (decide and report carry one, never its query or fragment) is kept only as its PathClass, with digits, ids,
// hashes and tokens taken out (a word of the path, such as a user name, stays in it); a request body is kept with
// the fields log.go's requestKeys names only, so neither the path nor a field a later extension sends reaches the
// file or the exports. Logs an earlier host wrote whole are rewritten so and vacuumed when opened (schema.go,
// migration 6). DeleteAll removes the database file with its -wal and -shm files and starts empty.
//
// Memory. What a decision reads of the log (History: the origin's latest loads, the latest loads elsewhere, the
// class's measured decisions) is kept in memory by the Store that writes it, and read again from the file whenever
// another connection or process changed it: triggers raise a generation per kind of row on every change, which each
// decision reads once (recent.go, measured.go).
//
// Retention. At most Options.MaxRows decisions and as many observations, none older than Options.MaxAge
// (defaults: 100,000 rows, 90 days). Each insert deletes what falls out of the window in the same transaction,
// using the primary key and the time index, so the cost stays a few index lookups.
package store
