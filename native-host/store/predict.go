package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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
}

// Samples is how many loads the history has.
func (h History) Samples() int { return len(h.Class) + len(h.Origin) }

// History returns the size history of origin's pages of class (PathClass). It walks the origin's latest loads,
// newest first, and stops once both levels are full: the loads after would change nothing.
func (s *Store) History(ctx context.Context, origin, class string) (History, error) {
	var h History
	var objects, conns, classObjects, classConns []int64
	full := func() bool {
		return (class == "" || len(h.Class) == PredictWindow) && len(h.Origin) == PredictWindow
	}
	err := s.with(func(db *sql.DB) error {
		rows, err := s.stmt(stHistoryOrigin).QueryContext(ctx, origin, 3*PredictWindow)
		if err != nil {
			return err
		}
		defer rows.Close()
		var c sql.RawBytes // refilled in place by each Scan: the class is compared, never kept
		for !full() && rows.Next() {
			var n, o, k int64
			if err := rows.Scan(&c, &n, &o, &k); err != nil {
				return err
			}
			if string(c) == class && class != "" {
				if len(h.Class) < PredictWindow {
					h.Class = append(h.Class, n)
					classObjects, classConns = appendPos(classObjects, o), appendPos(classConns, k)
				}
			} else if len(h.Origin) < PredictWindow {
				h.Origin = append(h.Origin, n)
				objects, conns = appendPos(objects, o), appendPos(conns, k)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		others, err := s.stmt(stHistoryOthers).QueryContext(ctx, origin, OthersWindow)
		if err != nil {
			return err
		}
		defer others.Close()
		for others.Next() {
			var n int64
			if err := others.Scan(&n); err != nil {
				return err
			}
			h.Others = append(h.Others, n)
		}
		return others.Err()
	})
	if err != nil {
		return History{}, fmt.Errorf("store: history: %w", err)
	}
	// The page's own loads say most about its objects and connections; the origin's otherwise.
	if len(classObjects) > 0 {
		objects = classObjects
	}
	if len(classConns) > 0 {
		conns = classConns
	}
	h.Objects, h.Conns = medianOf(objects), medianOf(conns)
	return h, nil
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
		err := s.stmt(stProtocol).QueryRowContext(ctx, origin).Scan(&proto)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("store: protocol: %w", err)
	}
	return proto, nil
}
