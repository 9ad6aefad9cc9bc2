package host

import "runtime/debug"

// The collector's settings while serving (SetGC).
//
// A navigation (a decide with the page's history, the load's report, another site's report) allocates 160-185 kB,
// while the host's live heap stays under 1 MB (hostbench, `GODEBUG=gctrace=1`). At the runtime's default (GOGC=100:
// a cycle at every 4 MB allocated) that was a cycle every 13-16 navigations, each 0.6-1 ms of CPU spent inside
// whichever round trip it fell on, which set the p99 of a decision's CPU at 3.5-4 times its median. At GCPercent
// the heap may grow to five times what is live, and to 16 MB at least, before a cycle: one every 80-90 navigations
// at that allocation rate.
//
// MemoryLimit bounds what that costs: the runtime collects as often as it must to keep the heap under it (the
// GOMEMLIMIT semantics), so a host whose live heap grew (a long export, many downloads) uses at most about that much,
// not five times its live heap.
const (
	GCPercent   = 400
	MemoryLimit = 64 << 20
)

// SetGC sets the process's collector for serving: GCPercent and MemoryLimit, each unless the environment already
// sets it (GOGC, GOMEMLIMIT: a user's or a test's own choice wins). getenv is os.Getenv.
func SetGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(MemoryLimit)
	}
}
