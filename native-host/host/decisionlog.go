package host

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpsurf/mpsurf/native-host/store"
)

// DefaultLogQueue is how many decisions may wait for the log writer. The writer commits a run of waiting rows at
// once, so the queue only fills when the store has stopped taking writes (a database another process holds
// locked, a disk that stalls): at one decision per navigation, 1,024 rows are minutes of browsing, or a session
// restore of hundreds of tabs, and a few megabytes of memory at most.
const DefaultLogQueue = 1024

// maxBatch bounds the rows one commit writes, so that a long backlog is written in transactions of bounded size.
const maxBatch = 64

// decisionLog writes the Server's decisions to its store after their replies, in the order they were decided,
// from one writer goroutine that owns the store's decision inserts. A navigation's reply never waits for it:
//   - the queue is bounded; a decision that finds it full is not logged (a warning and the unlogged counter say
//     so) rather than written on the reply path. A full queue means the store has been stuck for a long while,
//     and a synchronous write would then hold every navigation for as long as the store's bound (store.Timeout),
//     and would also put its row ahead of those still queued;
//   - reads that depend on the rows (a report that learns from its decision, an export, status, delete all) call
//     flush first, which waits until every row queued before it is written.
//
// The crash window this opens is doc.go's.
type decisionLog struct {
	db      *store.Store
	log     *slog.Logger
	rows    chan logRow
	timeout time.Duration // bounds one commit
	ctx     context.Context
	cancel  context.CancelFunc // ends the writer's pending commits, when closing takes too long
	done    chan struct{}      // closed when the writer has returned

	mu      sync.Mutex
	queued  uint64        // the sequence number of the latest row put in rows
	written uint64        // the sequence number of the latest row the writer finished with (written or failed)
	moved   chan struct{} // closed, and replaced, whenever written moves
	closed  bool

	unlogged atomic.Int64 // decisions replied but not in the log: dropped on a full queue, a failed write, shut down
	waiting  atomic.Int32 // flushes waiting now (what a test watches to know a read is held for its row)
	// hold, when set, is called by the writer before each commit with the writer's context: a test holds the writer
	// with it, as a store that takes no write would.
	hold func(ctx context.Context)
}

// logRow is one decision for the writer, numbered in the order it was queued.
type logRow struct {
	seq uint64
	row store.DecisionRow
	id  int64 // the request's id, for the warnings
}

// newDecisionLog starts the writer of db's decision rows, with room for size rows (0: DefaultLogQueue). With no
// store it returns nil, and a nil *decisionLog logs nothing and never waits.
func newDecisionLog(db *store.Store, size int, log *slog.Logger) *decisionLog {
	if db == nil {
		return nil
	}
	if size <= 0 {
		size = DefaultLogQueue
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &decisionLog{db: db, log: log, rows: make(chan logRow, size), timeout: storeTimeout, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), moved: make(chan struct{})}
	go l.run()
	return l
}

// add queues a decision's row. It never blocks: a full queue, or one already closed, drops the row with a warning.
func (l *decisionLog) add(id int64, row store.DecisionRow) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		select {
		case l.rows <- logRow{seq: l.queued + 1, row: row, id: id}:
			l.queued++
			return
		default:
		}
	}
	n := l.unlogged.Add(1)
	l.log.Warn("decision not logged: the log writer is behind", "id", id, "origin", row.Decision.Origin,
		"queued", len(l.rows), "closed", l.closed, "unlogged", n)
}

// flush waits until every row queued before the call is written (or its write failed), or ctx ends.
func (l *decisionLog) flush(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	target := l.queued
	for l.written < target {
		moved := l.moved
		l.mu.Unlock()
		l.waiting.Add(1)
		select {
		case <-moved:
			l.waiting.Add(-1)
		case <-ctx.Done():
			l.waiting.Add(-1)
			return ctx.Err()
		}
		l.mu.Lock()
	}
	l.mu.Unlock()
	return nil
}

// run is the writer: it takes the rows in their order and commits each run of waiting rows (up to maxBatch) in
// one transaction, until the queue is closed and empty.
func (l *decisionLog) run() {
	defer close(l.done)
	batch := make([]logRow, 0, maxBatch)
	for first := range l.rows {
		batch = append(batch[:0], first)
	more:
		for len(batch) < maxBatch {
			select {
			case r, ok := <-l.rows:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		l.write(batch)
		l.mu.Lock()
		l.written = batch[len(batch)-1].seq
		close(l.moved)
		l.moved = make(chan struct{})
		l.mu.Unlock()
	}
}

// write commits batch; when that fails, each row on its own, so that one row the store refuses costs only itself.
func (l *decisionLog) write(batch []logRow) {
	if l.hold != nil {
		l.hold(l.ctx)
	}
	rows := make([]store.DecisionRow, len(batch))
	for i, r := range batch {
		rows[i] = r.row
	}
	ctx, cancel := context.WithTimeout(l.ctx, l.timeout)
	err := l.db.LogDecisions(ctx, rows)
	cancel()
	if err == nil {
		return
	}
	if len(batch) > 1 {
		l.log.Warn("decisions not logged together; writing them one by one", "rows", len(batch), "err", err)
		for _, r := range batch {
			l.write([]logRow{r})
		}
		return
	}
	n := l.unlogged.Add(1)
	l.log.Error("decision not logged", "id", batch[0].id, "origin", batch[0].row.Decision.Origin, "err", err, "unlogged", n)
}

// close stops taking rows and waits for the writer to write those queued. After wait, the writes still pending
// are ended (they fail at once and count as unlogged), so that a stuck store cannot hold the host's exit.
func (l *decisionLog) close(wait time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.rows)
	}
	l.mu.Unlock()
	select {
	case <-l.done:
	case <-time.After(wait):
		l.log.Error("the decision log writer did not finish in time; the decisions still queued are not logged",
			"queued", len(l.rows), "wait", wait)
		l.cancel()
		<-l.done
	}
	l.cancel()
}

// dropped is how many decisions this host replied with but did not log.
func (l *decisionLog) dropped() int64 {
	if l == nil {
		return 0
	}
	return l.unlogged.Load()
}
