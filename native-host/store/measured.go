package store

import (
	"context"
	"database/sql"
	"slices"
	"sync"
)

// The learned corrections' reads (Measurements of PredictWindow loads, the decide path's) are served from memory
// too, as the latest loads are (recent.go): each origin's and class's latest measured decisions, kept by the Store
// as it writes their outcomes (Report, SetOutcome) and deletes them (retention), read from SQLite once, and again
// whenever anything else changed them. Read from SQLite on every navigation they were a fifth of what was left of
// the serving host's decide path once the latest loads came from memory (hostbench -cpuprofile). Their generation
// (schema.go, migration 10) is raised by triggers on every change to a decision that is measured before or after
// it; a decision logged without an outcome, as the host logs them, raises none.

// measuredRow is a measured decision: what Measurements returns of it, and its place in the order (time, id).
type measuredRow struct {
	id, timeMS  int64
	plt, sp, mp float64
	mpUsed      bool
}

// measuredWindow is an origin's and class's latest measured decisions, newest first (time, then id), at most
// PredictWindow; more says whether older ones exist beyond.
type measuredWindow struct {
	rows []measuredRow
	more bool
}

// before says whether a comes before b, newest first.
func (a measuredRow) before(b measuredRow) bool {
	return a.timeMS > b.timeMS || (a.timeMS == b.timeMS && a.id > b.id)
}

// put takes the decision r as it now is (measured or not) into the window; false when the window is no longer
// exact: it lost a row while older ones stay beyond it, which it does not know.
func (w *measuredWindow) put(r measuredRow, measured bool) bool {
	was := slices.IndexFunc(w.rows, func(x measuredRow) bool { return x.id == r.id })
	if was >= 0 {
		w.rows = slices.Delete(w.rows, was, was+1)
	}
	if !measured {
		return was < 0 || !w.more
	}
	i := 0
	for i < len(w.rows) && w.rows[i].before(r) {
		i++
	}
	if i == len(w.rows) && w.more {
		return was < 0 // beyond the window (had it been in it, the window lost it)
	}
	w.rows = slices.Insert(w.rows, i, r)
	if len(w.rows) > PredictWindow {
		w.rows, w.more = w.rows[:PredictWindow], true
	}
	return true
}

// drop removes the rows of deleted ids; false when the window is no longer exact.
func (w *measuredWindow) drop(deleted map[int64]bool) bool {
	n := len(w.rows)
	w.rows = slices.DeleteFunc(w.rows, func(r measuredRow) bool { return deleted[r.id] })
	return len(w.rows) == n || !w.more
}

// measuredKey names a window: origin and class.
type measuredKey struct{ origin, class string }

// measured is the memory: valid at generation gen only.
type measured struct {
	mu      sync.Mutex
	valid   bool
	gen     int64
	windows map[measuredKey]*measuredWindow
}

func (c *measured) reset() { c.valid, c.gen, c.windows = false, 0, nil }

// outcomeChange is what one of the Store's transactions did to the measured decisions: the decision it wrote an
// outcome to (row, of key, measured or not; none if ok is false), the decisions retention deleted, and the
// generation before and after.
type outcomeChange struct {
	ok           bool
	unreadable   bool // measured, without its multipath prediction: the window is read again, as it always was
	key          measuredKey
	row          measuredRow
	isMeasured   bool
	deleted      map[int64]bool
	before, then int64
}

// apply moves the memory on by a committed change, if the memory was of the decisions as the change found them.
func (c *measured) apply(ch outcomeChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.gen != ch.before {
		return
	}
	if ch.before != ch.then {
		for k, w := range c.windows {
			if len(ch.deleted) > 0 && !w.drop(ch.deleted) {
				delete(c.windows, k)
			}
		}
		if w := c.windows[ch.key]; ch.ok && w != nil && (ch.unreadable || !w.put(ch.row, ch.isMeasured)) {
			delete(c.windows, ch.key)
		}
	}
	c.gen = ch.then
}

// measuredGeneration reads the measured decisions' generation in tx.
func (s *Store) measuredGeneration(ctx context.Context, tx *sql.Tx) (int64, error) {
	return generation(s.txStmt(ctx, tx, stMeasuredGeneration).QueryRowContext(ctx))
}

// outcomeOf reads the latest decision for origin, tab and nav in tx, after its outcome was written.
func (s *Store) outcomeOf(ctx context.Context, tx *sql.Tx, origin string, tab int64, nav string, ch *outcomeChange) error {
	var plt, sp, mp sql.NullFloat64
	var used sql.NullBool
	err := s.txStmt(ctx, tx, stOutcomeRow).QueryRowContext(ctx, tab, nav, origin).Scan(&ch.row.id, &ch.key.class,
		&ch.row.timeMS, &plt, &sp, &mp, &used)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	ch.ok, ch.key.origin = true, origin
	ch.isMeasured = plt.Valid && sp.Valid && used.Valid
	ch.unreadable = ch.isMeasured && !mp.Valid
	ch.row.plt, ch.row.sp, ch.row.mp, ch.row.mpUsed = plt.Float64, sp.Float64, mp.Float64, used.Bool
	return nil
}

// measuredFor returns origin's and class's latest PredictWindow measured decisions as the database holds them
// now (their generation g, just read), from memory where it is current. The caller holds s.mu (inside with).
func (s *Store) measuredFor(ctx context.Context, db *sql.DB, g int64, key measuredKey) ([]Measured, error) {
	c := &s.measured
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.gen != g {
		c.reset()
	}
	w := c.windows[key]
	if w == nil {
		var err error
		if w, err = s.measuredLoad(ctx, db, key); err != nil {
			c.reset()
			return nil, err
		}
	}
	var out []Measured
	for _, r := range w.rows {
		m := Measured{PLTms: r.plt, PredictedMS: r.sp, MPUsed: r.mpUsed}
		if r.mpUsed {
			m.PredictedMS = r.mp
		}
		out = append(out, m)
	}
	return out, nil
}

// measuredLoad reads key's window in one snapshot with the generation it is of; the rest of the memory stays only
// if that is still its generation.
func (s *Store) measuredLoad(ctx context.Context, db *sql.DB, key measuredKey) (*measuredWindow, error) {
	c := &s.measured
	w := &measuredWindow{rows: make([]measuredRow, 0, PredictWindow+1)}
	err := snapshot(ctx, db, func(conn *sql.Conn) error {
		g, err := generation(conn.QueryRowContext(ctx, stmtSQL[stMeasuredGeneration]))
		if err != nil {
			return err
		}
		rows, err := conn.QueryContext(ctx, stmtSQL[stMeasuredWindow], key.origin, key.class, PredictWindow+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r measuredRow
			if err := rows.Scan(&r.id, &r.timeMS, &r.plt, &r.sp, &r.mp, &r.mpUsed); err != nil {
				return err
			}
			if len(w.rows) == PredictWindow {
				w.more = true
				break
			}
			w.rows = append(w.rows, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !c.valid || c.gen != g || c.windows == nil || len(c.windows) >= maxOrigins {
			c.windows = map[measuredKey]*measuredWindow{}
		}
		c.windows[key] = w
		c.valid, c.gen = true, g
		return nil
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}
