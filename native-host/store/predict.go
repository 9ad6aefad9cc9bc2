package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// PredictWindow is how many of an origin's latest loads a prediction uses: enough for a stable p90, few enough that
// a site's redesign shows within a day of browsing.
const PredictWindow = 20

// OthersWindow is how many of the user's latest loads on other origins describe a page never seen.
const OthersWindow = 50

// History is what the store remembers of a page's sizes: the transferred bytes of the last PredictWindow loads of
// its path class and of the rest of its origin, newest first, and the medians of their object and connection
// counts (0: unknown). The model shrinks each level towards the next, and the last towards its prior.
type History struct {
	Class, Origin []int64
	// Others are the transferred bytes of the user's latest OthersWindow loads on other origins, newest first.
	Others  []int64
	Objects int64
	Conns   int64
	// Protocol is that of the origin's latest load ("h2", "http/1.1", "h3", ...; "" never seen or not said), as
	// Protocol returns it, and Measured the class's latest loads with their predictions, as Measurements(…,
	// PredictWindow) returns them: read with the sizes, so that a decision checks the store's memories once.
	Protocol string
	Measured []Measured
	// Prefs are the user's preferences as Prefs returns them (nil: none saved), read in the same query as the
	// memories' generations, so that a decision asks SQLite once; PrefsErr is Prefs' error (a stored row that does
	// not parse), which leaves the rest of the history as it is.
	Prefs    *protocol.Prefs
	PrefsErr error
}

// Samples is how many loads the history has.
func (h History) Samples() int { return len(h.Class) + len(h.Origin) }

// History returns the size history of origin's pages of class (PathClass), with the protocol of the origin's
// latest load and the class's measured loads: from the origin's latest loads, the latest loads elsewhere and the
// latest measured decisions, which the Store keeps in memory while nothing else writes them (recent.go,
// measured.go).
func (s *Store) History(ctx context.Context, origin, class string) (History, error) {
	var h History
	err := s.with(func(db *sql.DB) error {
		var gObs, gMeas int64
		var prefs sql.NullString
		if err := s.stmt(stGenerationsPrefs).QueryRowContext(ctx).Scan(&gObs, &gMeas, &prefs); err != nil {
			return fmt.Errorf("generations: %w", err)
		}
		var err error
		if h.Prefs, h.PrefsErr = prefsOf(prefs); h.PrefsErr != nil {
			h.PrefsErr = fmt.Errorf("store: prefs: %w", h.PrefsErr)
		}
		if h.Measured, err = s.measuredFor(ctx, db, gMeas, measuredKey{origin, class}); err != nil {
			return err
		}
		return s.recentDo(ctx, db, gObs, origin, func(own, latest *window) error {
			measured, prefs, prefsErr := h.Measured, h.Prefs, h.PrefsErr
			h = historyOf(own.rows, class)
			h.Measured, h.Prefs, h.PrefsErr = measured, prefs, prefsErr
			if len(own.rows) > 0 {
				h.Protocol = own.rows[0].proto
			}
			var enough bool
			if h.Others, enough = othersOf(latest, origin); enough {
				return nil
			}
			// One origin took most of the latest loads: the others' are read further back.
			var err error
			h.Others, err = othersStored(ctx, s.stmt(stHistoryOthers), origin)
			return err
		})
	})
	if err != nil {
		return History{}, fmt.Errorf("store: history: %w", err)
	}
	return h, nil
}

// othersStored runs stHistoryOthers' statement st: the transferred bytes of the latest OthersWindow loads on
// origins other than origin, newest first, as SQLite holds them.
func othersStored(ctx context.Context, st *sql.Stmt, origin string) ([]int64, error) {
	rows, err := st.QueryContext(ctx, origin, OthersWindow)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// historyOf is the history of class among an origin's loads, newest first: it takes them until both levels are
// full (the loads after would change nothing), and the medians of the objects and connections of the page's own
// loads, else of the origin's others.
func historyOf(rows []obsRow, class string) History {
	var h History
	var objects, conns, classObjects, classConns []int64
	for _, r := range rows {
		if (class == "" || len(h.Class) == PredictWindow) && len(h.Origin) == PredictWindow {
			break
		}
		if r.class == class && class != "" {
			if len(h.Class) < PredictWindow {
				h.Class = append(h.Class, r.bytes)
				classObjects, classConns = appendPos(classObjects, r.objects), appendPos(classConns, r.conns)
			}
		} else if len(h.Origin) < PredictWindow {
			h.Origin = append(h.Origin, r.bytes)
			objects, conns = appendPos(objects, r.objects), appendPos(conns, r.conns)
		}
	}
	if len(classObjects) > 0 {
		objects = classObjects
	}
	if len(classConns) > 0 {
		conns = classConns
	}
	h.Objects, h.Conns = medianOf(objects), medianOf(conns)
	return h
}

// othersOf is the transferred bytes of the latest OthersWindow loads on origins other than origin, newest first,
// and whether the window held them all (it did if it is the whole table).
func othersOf(latest *window, origin string) ([]int64, bool) {
	var out []int64
	for _, r := range latest.rows {
		if len(out) == OthersWindow {
			break
		}
		if r.origin != origin {
			out = append(out, r.bytes)
		}
	}
	return out, len(out) == OthersWindow || !latest.more
}

func appendPos(s []int64, v int64) []int64 {
	if v > 0 {
		return append(s, v)
	}
	return s
}

func medianOf(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return median(s)
}

// median of sorted s; an even count averages the middle two, rounded down.
func median(s []int64) int64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return s[n/2-1] + (s[n/2]-s[n/2-1])/2
}

// Protocol returns the protocol of origin's latest reported load ("h2", "http/1.1", "h3", ...), or "" when the
// origin was never seen or the browser did not say.
func (s *Store) Protocol(ctx context.Context, origin string) (string, error) {
	var proto string
	err := s.with(func(db *sql.DB) error {
		g, _, err := s.generations(ctx)
		if err != nil {
			return err
		}
		return s.recentDo(ctx, db, g, origin, func(own, _ *window) error {
			if len(own.rows) > 0 {
				proto = own.rows[0].proto
			}
			return nil
		})
	})
	if err != nil {
		return "", fmt.Errorf("store: protocol: %w", err)
	}
	return proto, nil
}
