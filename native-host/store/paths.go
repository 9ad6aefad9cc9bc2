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

// SaveRadio replaces the kept RRC mark (rrc.Mark as JSON) of the named cellular interface.
func (s *Store) SaveRadio(ctx context.Context, at time.Time, iface string, mark json.RawMessage) error {
	if !json.Valid(mark) {
		return fmt.Errorf("store: radio %q: mark is not JSON", iface)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO radio_marks (interface, time_ms, mark) VALUES (?, ?, ?)
			ON CONFLICT (interface) DO UPDATE SET time_ms = excluded.time_ms, mark = excluded.mark`,
			iface, at.UnixMilli(), string(mark)); err != nil {
			return fmt.Errorf("store: radio %q: %w", iface, err)
		}
		return nil
	})
}

// Radios returns the kept RRC marks by interface, those kept at or after since.
func (s *Store) Radios(ctx context.Context, since time.Time) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	err := s.with(func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, "SELECT interface, mark FROM radio_marks WHERE time_ms >= ?", since.UnixMilli())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var iface, mark string
			if err := rows.Scan(&iface, &mark); err != nil {
				return err
			}
			out[iface] = json.RawMessage(mark)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: radios: %w", err)
	}
	return out, nil
}
