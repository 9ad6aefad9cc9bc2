package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
)

// PredictWindow is how many of an origin's latest loads a prediction uses: enough for a stable p90, few enough that
// a site's redesign shows within a day of browsing.
const PredictWindow = 20

// The prior for an origin never seen: the median and 90th percentile of the 25 page sizes in seed 000 (Han et al.,
// "Multipath TCP and SPDY", Table 1, desktop versions of popular sites recorded in August 2014): median 2,170.6 KB
// (the Entertainment site), p90 (nearest rank, 23rd of 25) 3,814.2 KB (Weather). KB is taken as 1,000 bytes.
const (
	PriorMedian = 2170600
	PriorP90    = 3814200
	PriorSource = "prior: seed 000 Table 1, median and p90 of 25 sites"
)

// Size is a page-size prediction, the shape of PROTOCOL.md's Decision.size.
type Size struct {
	Known   bool   `json:"known"`
	Median  *int64 `json:"median"`
	P90     *int64 `json:"p90"`
	Samples int64  `json:"samples"`
	Source  string `json:"source"`
}

// Predict returns the median and p90 of the transferred bytes of origin's last PredictWindow reported loads, or the
// prior with Known false when there are none.
func (s *Store) Predict(ctx context.Context, origin string) (Size, error) {
	var sizes []int64
	err := s.with(func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx,
			"SELECT transfer_bytes FROM observations WHERE origin = ? ORDER BY id DESC LIMIT ?", origin, PredictWindow)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				return err
			}
			sizes = append(sizes, n)
		}
		return rows.Err()
	})
	if err != nil {
		return Size{}, fmt.Errorf("store: predict: %w", err)
	}
	return predict(sizes), nil
}

func predict(sizes []int64) Size {
	if len(sizes) == 0 {
		m, p := int64(PriorMedian), int64(PriorP90)
		return Size{Known: false, Median: &m, P90: &p, Samples: 0, Source: PriorSource}
	}
	s := slices.Clone(sizes)
	slices.Sort(s)
	m, p := median(s), nearestRank(s, 0.9)
	return Size{Known: true, Median: &m, P90: &p, Samples: int64(len(s)),
		Source: fmt.Sprintf("observed: last %d loads of this origin", len(s))}
}

// median of sorted s; an even count averages the middle two, rounded down.
func median(s []int64) int64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return s[n/2-1] + (s[n/2]-s[n/2-1])/2
}

// nearestRank is the q-quantile of sorted s by the nearest-rank method: an observed value, never an interpolation.
func nearestRank(s []int64, q float64) int64 {
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(k, 0)]
}

// Protocol returns the protocol of origin's latest reported load ("h2", "http/1.1", "h3", ...), or "" when the
// origin was never seen or the browser did not say.
func (s *Store) Protocol(ctx context.Context, origin string) (string, error) {
	var proto string
	err := s.with(func(db *sql.DB) error {
		err := db.QueryRowContext(ctx,
			"SELECT protocol FROM observations WHERE origin = ? ORDER BY id DESC LIMIT 1", origin).Scan(&proto)
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
