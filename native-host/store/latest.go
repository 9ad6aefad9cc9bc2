package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// Latest returns the most recent decision for each origin decided since `since`, newest first, at most limit: what
// a new host starts from when it routes origins to the MPTCP proxy before the browser asks about them again.
func (s *Store) Latest(ctx context.Context, since time.Time, limit int) ([]protocol.Decision, error) {
	var out []protocol.Decision
	err := s.with(func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT decision FROM decisions WHERE id IN
			(SELECT MAX(id) FROM decisions WHERE time_ms >= ? GROUP BY origin) ORDER BY id DESC LIMIT ?`, since.UnixMilli(), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var raw string
			if err := rows.Scan(&raw); err != nil {
				return err
			}
			var d protocol.Decision
			if json.Unmarshal([]byte(raw), &d) == nil && d.Origin != "" {
				out = append(out, d)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: latest decisions: %w", err)
	}
	return out, nil
}
