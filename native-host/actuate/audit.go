package actuate

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/limit"
)

// The audit log: one JSON line per request that changed, or tried to change, kernel state, per refused connection
// and per lease that lapsed. Successful lease renewals and status reads change nothing and are not written.
//
// It is bounded twice, since any local user can make the helper write it (the helper refuses their connection, and
// says so here). In size: at maxAuditBytes the file becomes audit.jsonl.1 (replacing the previous one) and a new
// one starts, so at most 2 × maxAuditBytes stay on /run, which is RAM. In rate, per uid: each uid has a budget of
// lines; what it does not cover is counted, and one summary line ("N refused requests from uid U") is written
// when the budget allows again, or summaryEvery after the first line it did not cover.
const (
	maxAuditBytes = 1 << 20
	// An allowed uid: a browsing burst (tabs opened at once: a decision and a few peer reports each) fits in the
	// burst; after it, 10 lines a second.
	auditRate  = 10
	auditBurst = 200
	// A uid that is not allowed: the first few refusals, then one line a minute and the summaries.
	refusedAuditRate  = 1.0 / 60
	refusedAuditBurst = 5
	summaryEvery      = 10 * time.Second
	// maxAuditUIDs bounds the per-uid budgets and counts kept at once.
	maxAuditUIDs = 4096
)

type auditRecord struct {
	Time  string         `json:"time"`
	Peer  Peer           `json:"peer"`
	Verb  string         `json:"verb"`
	ID    uint64         `json:"id,omitempty"`
	OK    bool           `json:"ok"`
	Error string         `json:"error,omitempty"`
	Args  map[string]any `json:"args,omitempty"`
	// Count and Refused: a summary line's numbers of lines not written one by one, and how many of those were
	// refusals.
	Count   int `json:"count,omitempty"`
	Refused int `json:"refused,omitempty"`
}

// VerbSummary is the verb of a summary line.
const VerbSummary = "summary"

type skipped struct {
	n, refused int
	peer       Peer
	since      time.Time
}

type auditLog struct {
	mu      sync.Mutex
	path    string
	f       *os.File // nil after a failed rotation: lines are dropped, and said so on stderr
	size    int64
	allowed *limit.Keyed[uint32]
	refused *limit.Keyed[uint32]
	skip    map[uint32]*skipped
	failed  bool
}

func openAudit(path string) (*auditLog, error) {
	f, err := openOwn(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return &auditLog{path: path, f: f, size: fi.Size(),
		allowed: limit.NewKeyed[uint32](auditRate, auditBurst, maxAuditUIDs), refused: limit.NewKeyed[uint32](refusedAuditRate, refusedAuditBurst, maxAuditUIDs),
		skip: map[uint32]*skipped{}}, nil
}

// write writes a line of the helper's own (a lease that lapsed, a failed accept): no uid's budget.
func (a *auditLog) write(r auditRecord) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.put(r, time.Now())
}

// request writes a line on behalf of r.Peer's uid, within its budget (allowed: the uid may use the helper),
// and reports whether it was written (the caller then logs it on stderr too); otherwise it is counted.
func (a *auditLog) request(r auditRecord, allowed bool) bool {
	now := time.Now()
	lim := a.refused
	if allowed {
		lim = a.allowed
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	uid := r.Peer.Uid
	if ok, _ := lim.Allow(uid, now); !ok {
		s := a.skip[uid]
		if s == nil {
			if len(a.skip) >= maxAuditUIDs {
				a.flushLocked(now, true)
			}
			s = &skipped{since: now, peer: Peer{Uid: uid, Gid: r.Peer.Gid}}
			a.skip[uid] = s
		}
		s.n++
		if !r.OK {
			s.refused++
		}
		return false
	}
	if s := a.skip[uid]; s != nil {
		a.put(s.summary(now), now)
		delete(a.skip, uid)
	}
	a.put(r, now)
	return true
}

// flush writes the summaries that are summaryEvery old (all of them with force).
func (a *auditLog) flush(force bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.flushLocked(time.Now(), force)
}

func (a *auditLog) flushLocked(now time.Time, force bool) {
	for uid, s := range a.skip {
		if force || now.Sub(s.since) >= summaryEvery {
			a.put(s.summary(now), now)
			delete(a.skip, uid)
		}
	}
}

func (s *skipped) summary(now time.Time) auditRecord {
	msg := fmt.Sprintf("%d refused requests from uid %d in %.0f s", s.n, s.peer.Uid, now.Sub(s.since).Seconds())
	if s.refused < s.n {
		msg = fmt.Sprintf("%d requests from uid %d in %.0f s not written one by one (%d refused)", s.n, s.peer.Uid, now.Sub(s.since).Seconds(), s.refused)
	}
	return auditRecord{Peer: s.peer, Verb: VerbSummary, OK: s.refused == 0, Error: msg, Count: s.n, Refused: s.refused}
}

// put appends one line, rotating first if it would pass maxAuditBytes. Caller holds a.mu.
func (a *auditLog) put(r auditRecord, now time.Time) {
	r.Time = now.UTC().Format(time.RFC3339Nano)
	if len(r.Verb) > 40 {
		r.Verb = r.Verb[:40]
	}
	if len(r.Error) > 300 {
		r.Error = r.Error[:300]
	}
	b, _ := json.Marshal(r)
	b = append(b, '\n')
	if a.f != nil && a.size+int64(len(b)) > maxAuditBytes {
		a.rotate()
	}
	if a.f == nil {
		return
	}
	n, err := a.f.Write(b)
	a.size += int64(n)
	if err != nil && !a.failed {
		a.failed = true
		fmt.Fprintf(os.Stderr, "audit log %s: %v\n", a.path, err)
	}
}

// rotate moves the log to path.1 and starts a new one. Caller holds a.mu.
func (a *auditLog) rotate() {
	a.f.Close()
	a.f, a.size = nil, 0
	if err := os.Rename(a.path, a.path+".1"); err != nil {
		fmt.Fprintf(os.Stderr, "audit log %s: rotate: %v; no more lines are written\n", a.path, err)
		return
	}
	f, err := openOwn(a.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "audit log %s: rotate: %v; no more lines are written\n", a.path, err)
		return
	}
	a.f = f
}

// Close writes what summaries are pending and closes the file.
func (a *auditLog) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.flushLocked(time.Now(), true)
	if a.f == nil {
		return nil
	}
	return a.f.Close()
}
