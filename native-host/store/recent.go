package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
)

// The decide path's reads of the observations (History, Protocol) are served from memory: the latest loads of
// each origin decided for and the latest loads overall, kept by the Store as it writes its own loads (Report) and
// read from SQLite once, and again whenever anything else changed the table. Reading them from SQLite on every
// navigation stepped about 110 rows through modernc.org/sqlite, some 40 % of the serving host's decide path
// (go run ./native-host/cmd/hostbench -cpuprofile).
//
// What else changed the table is told by its generation (schema.go, migration 9): a number that triggers raise on
// every insert, update and delete of an observation, by any connection of any process (another browser's host,
// the sqlite3 shell), within the writer's own transaction. PRAGMA data_version does not serve here: it changes on
// a connection when any other connection commits, and the Store's own connections are a pool (database/sql), so
// every decision its log writer commits would look like another process's write. The memory is used only while
// its generation is the table's: every decision reads the generation first (with the measured decisions', one
// query: generations), and a load the Store itself reports moves the memory on from the generation it had before
// the report's transaction to the one after, only if nothing else wrote in between.

// Windows of the memory: History reads at most 3×PredictWindow loads of an origin; the others' loads come from the
// latest recentWindow of every origin, enough for OthersWindow of other origins unless one origin took most of
// the latest loads (then History reads them from SQLite as before). maxOrigins bounds the memory (each origin
// takes at most 3×PredictWindow rows of a few dozen bytes): past it the origins are dropped and read again.
const (
	originWindow = 3 * PredictWindow
	recentWindow = 4 * OthersWindow
	maxOrigins   = 4096
)

// obsRow is an observation as History and Protocol read it: its class empty where it has none, its objects and
// connections 0 where unknown.
type obsRow struct {
	id                    int64
	origin, class, proto  string
	bytes, objects, conns int64
}

// window is the latest rows of a set of observations, newest first, at most its capacity; more says whether the
// table holds older ones beyond them.
type window struct {
	rows []obsRow
	more bool
}

// push puts a new row in front, dropping the oldest past n.
func (w *window) push(r obsRow, n int) {
	w.rows = slices.Insert(w.rows, 0, r)
	if len(w.rows) > n {
		w.rows, w.more = w.rows[:n], true
	}
}

// drop removes the rows of deleted ids and says whether the window is still exact: a window that lost a row while
// older ones stay beyond it would have to take the next of them in, which it does not know.
func (w *window) drop(deleted map[int64]bool) bool {
	n := len(w.rows)
	w.rows = slices.DeleteFunc(w.rows, func(r obsRow) bool { return deleted[r.id] })
	return len(w.rows) == n || !w.more
}

// recent is the memory: valid at generation gen only.
type recent struct {
	mu      sync.Mutex
	valid   bool
	gen     int64
	origins map[string]*window
	latest  *window // every origin's; nil: not read yet
}

// reset forgets everything.
func (c *recent) reset() {
	c.valid, c.gen, c.origins, c.latest = false, 0, nil, nil
}

// generation reads a generation from row (stObservationsGeneration's or stMeasuredGeneration's).
func generation(row *sql.Row) (int64, error) {
	var g int64
	if err := row.Scan(&g); err != nil {
		return 0, fmt.Errorf("generation: %w", err)
	}
	return g, nil
}

// generations reads both memories' generations in one query: the observations' and the measured decisions'. Each
// query after another connection's commit costs SQLite a new look at its write-ahead log, so a decision asks once.
func (s *Store) generations(ctx context.Context) (observations, measured int64, err error) {
	if err := s.stmt(stGenerations).QueryRowContext(ctx).Scan(&observations, &measured); err != nil {
		return 0, 0, fmt.Errorf("generations: %w", err)
	}
	return observations, measured, nil
}

// recentDo calls f with origin's window and the window of every origin as the table holds them now (its
// generation g, just read), from memory where it is current, read from db where not. The caller holds s.mu (inside
// with); f reads the windows, never keeps or changes them: they are the memory's, under c.mu only while f runs.
func (s *Store) recentDo(ctx context.Context, db *sql.DB, g int64, origin string, f func(own, latest *window) error) error {
	c := &s.recent
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.gen != g {
		c.reset()
	}
	own := c.origins[origin]
	if own == nil || c.latest == nil {
		if err := s.recentLoad(ctx, db, origin, own == nil, c.latest == nil); err != nil {
			c.reset()
			return err
		}
		own = c.origins[origin]
	}
	return f(own, c.latest)
}

// recentLoad reads what the memory lacks, origin's window and (latest) the window overall, in one snapshot with
// the generation it is of; the rest of the memory stays only if that is still its generation.
func (s *Store) recentLoad(ctx context.Context, db *sql.DB, origin string, ownToo, latestToo bool) error {
	c := &s.recent
	return snapshot(ctx, db, func(conn *sql.Conn) error {
		g, err := generation(conn.QueryRowContext(ctx, stmtSQL[stObservationsGeneration]))
		if err != nil {
			return err
		}
		if !c.valid || c.gen != g {
			c.reset()
			ownToo, latestToo = true, true
		}
		var own, latest *window
		if ownToo {
			if own, err = readWindow(ctx, conn, stmtSQL[stRecentOrigin], originWindow, origin); err != nil {
				return err
			}
		}
		if latestToo {
			if latest, err = readWindow(ctx, conn, stmtSQL[stRecentAll], recentWindow); err != nil {
				return err
			}
		}
		if c.origins == nil || len(c.origins) >= maxOrigins {
			c.origins = map[string]*window{}
		}
		if own != nil {
			c.origins[origin] = own
		}
		if latest != nil {
			c.latest = latest
		}
		c.valid, c.gen = true, g
		return nil
	})
}

// readWindow reads at most n rows of q (its last parameter the limit), newest first.
func readWindow(ctx context.Context, conn *sql.Conn, q string, n int, args ...any) (*window, error) {
	rows, err := conn.QueryContext(ctx, q, append(args, n+1)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	w := &window{rows: make([]obsRow, 0, n)}
	for rows.Next() {
		var r obsRow
		if err := rows.Scan(&r.id, &r.origin, &r.class, &r.proto, &r.bytes, &r.objects, &r.conns); err != nil {
			return nil, err
		}
		if len(w.rows) == n {
			w.more = true
			break
		}
		w.rows = append(w.rows, r)
	}
	return w, rows.Err()
}

// reported is what a Report's transaction did to the observations: the row it wrote, the rows retention deleted,
// and the table's generation before and after.
type reported struct {
	row          obsRow
	deleted      map[int64]bool
	before, then int64
}

// apply moves the memory on by a committed report, if the memory was of the table as the report found it;
// otherwise the memory is older or newer than both, and the next read of the generation tells.
func (c *recent) apply(r reported) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.gen != r.before {
		return
	}
	if len(r.deleted) > 0 {
		if c.latest != nil && !c.latest.drop(r.deleted) {
			c.latest = nil
		}
		for o, w := range c.origins {
			if !w.drop(r.deleted) {
				delete(c.origins, o)
			}
		}
	}
	if w := c.origins[r.row.origin]; w != nil {
		w.push(r.row, originWindow)
	}
	if c.latest != nil {
		c.latest.push(r.row, recentWindow)
	}
	c.gen = r.then
}
