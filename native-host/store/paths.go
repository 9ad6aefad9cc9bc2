package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// PathEstimate is one path's last measured state, as a PROTOCOL.md Path object, and when it was measured.
type PathEstimate struct {
	Name     string
	Time     time.Time
	Estimate json.RawMessage
}

// SavePaths replaces the kept estimate of each named path.
func (s *Store) SavePaths(ctx context.Context, at time.Time, estimates map[string]json.RawMessage) error {
	if len(estimates) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		for name, est := range estimates {
			if !json.Valid(est) {
				return fmt.Errorf("store: path %q: estimate is not JSON", name)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO path_estimates (name, time_ms, estimate) VALUES (?, ?, ?)
				ON CONFLICT (name) DO UPDATE SET time_ms = excluded.time_ms, estimate = excluded.estimate`,
				name, at.UnixMilli(), string(est)); err != nil {
				return fmt.Errorf("store: path %q: %w", name, err)
			}
		}
		return nil
	})
}

// Paths returns the estimates measured at or after since.
func (s *Store) Paths(ctx context.Context, since time.Time) ([]PathEstimate, error) {
	var out []PathEstimate
	err := s.with(func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx,
			"SELECT name, time_ms, estimate FROM path_estimates WHERE time_ms >= ? ORDER BY name", since.UnixMilli())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e PathEstimate
			var ms int64
			var est string
			if err := rows.Scan(&e.Name, &ms, &est); err != nil {
				return err
			}
			e.Time, e.Estimate = time.UnixMilli(ms), json.RawMessage(est)
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: paths: %w", err)
	}
	return out, nil
}
