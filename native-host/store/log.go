package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// checkOrigin keeps URLs out of the store: only a normalised origin may be written.
func checkOrigin(origin string) error {
	norm, err := protocol.NormalizeOrigin(origin)
	if err != nil {
		return fmt.Errorf("store: origin: %v", err)
	}
	if norm != origin {
		return fmt.Errorf("store: origin %q is not normalised (%q)", origin, norm)
	}
	return nil
}

// DecisionMeta is what a decision row keeps beside the Decision: the page's path class, the decision's basis, the
// cellular interface's received-bytes counter at the decision (nil: unknown), from which the load's cellular
// bytes are counted when it is reported, and when it was decided.
type DecisionMeta struct {
	PathClass   string
	Basis       string
	CellRxStart *int64
	// At is when the host decided; zero means now, by the store's clock. A host that writes its log after the
	// reply sets it, so that a row's time_ms is the decision's, however long the row waited to be written.
	At time.Time
}

// DecisionRow is one decision to log: the request body it answered, the decision, the reply body kept in the
// decision column (nil: the decision itself) and the row's other columns.
type DecisionRow struct {
	Request  json.RawMessage
	Decision protocol.Decision
	Reply    any
	Meta     DecisionMeta
}

// LogDecision writes one decision with the request body it answered, and returns once the row is committed. The
// indexed columns come from d; the decision column holds reply marshalled as JSON (the whole reply body, with the
// model's terms and size), or d when reply is nil.
func (s *Store) LogDecision(ctx context.Context, request json.RawMessage, d protocol.Decision, reply any, m DecisionMeta) error {
	return s.LogDecisions(ctx, []DecisionRow{{Request: request, Decision: d, Reply: reply, Meta: m}})
}

// LogDecisions writes rows in their order, in one transaction, and returns once it is committed: all of them or,
// on an error, none. One commit (one fsync at synchronous=FULL) for a run of decisions is what lets the host's
// log writer keep up with a burst of navigations.
func (s *Store) LogDecisions(ctx context.Context, rows []DecisionRow) error {
	type prepared struct {
		request, body string
		at            int64
	}
	ready := make([]prepared, len(rows))
	for i, r := range rows {
		if err := checkOrigin(r.Decision.Origin); err != nil {
			return err
		}
		reply := r.Reply
		if reply == nil {
			reply = r.Decision
		}
		body, err := json.Marshal(reply)
		if err != nil {
			return fmt.Errorf("store: decision: %w", err)
		}
		at := r.Meta.At
		if at.IsZero() {
			at = s.opt.Now()
		}
		ready[i] = prepared{request: string(keptRequest(r.Request)), body: string(body), at: at.UnixMilli()}
	}
	if len(rows) == 0 {
		return nil
	}
	var ch outcomeChange // the rows retention deletes, for the memory of measured decisions (measured.go)
	return s.txThen(ctx, func(tx *sql.Tx) error {
		var err error
		if ch.before, err = s.measuredGeneration(ctx, tx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		insert := s.txStmt(ctx, tx, stInsertDecision)
		var id, latest int64
		for i, r := range rows {
			d, m, p := r.Decision, r.Meta, ready[i]
			res, err := insert.ExecContext(ctx,
				p.at, d.Origin, d.Tab, d.Nav, d.Multipath, d.Theta1, d.Theta2, d.DeadlineMS, d.Model.ID, d.Model.Version,
				p.request, p.body, nullString(m.PathClass), nullString(m.Basis), m.CellRxStart)
			if err != nil {
				return fmt.Errorf("store: decision: %w", err)
			}
			id, _ = res.LastInsertId()
			latest = max(latest, p.at)
		}
		if ch.deleted, err = s.retain(ctx, tx, "decisions", id, latest); err != nil {
			return err
		}
		if ch.then, err = s.measuredGeneration(ctx, tx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		return nil
	}, func() { s.measured.apply(ch) })
}

// requestKeys are the fields of a request body the log keeps (decide's origin, tab and nav; a handed-over
// download's kind, origin, size and protocol). Everything else goes, a page's URL path first: its class is the
// decision's path_class. A field added to a request later stays out of the log until it is named here.
var requestKeys = []string{"origin", "tab", "nav", "kind", "size", "protocol"}

// keptRequest is what the log keeps of a request body: the scalar requestKeys of an object, "null" for anything
// that is not one.
func keptRequest(request json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(request, &obj); err != nil || obj == nil {
		return json.RawMessage("null")
	}
	kept := map[string]json.RawMessage{}
	for _, k := range requestKeys {
		if v, ok := obj[k]; ok && len(v) > 0 && v[0] != '{' && v[0] != '[' {
			kept[k] = v
		}
	}
	b, _ := json.Marshal(kept)
	return b
}

// retain deletes the rows of table that fall out of the retention window, given the row just inserted, and
// returns the ids it deleted (nil: none).
func (s *Store) retain(ctx context.Context, tx *sql.Tx, table string, lastID, now int64) (map[int64]bool, error) {
	byRows, byAge := stRetainDecisionsRows, stRetainDecisionsAge
	if table == "observations" {
		byRows, byAge = stRetainObservationsRows, stRetainObservationsAge
	}
	cutoffs := []any{lastID - s.opt.MaxRows, now - s.opt.MaxAge.Milliseconds()}
	var deleted map[int64]bool
	for i, k := range []stmt{byRows, byAge} {
		err := func() error {
			rows, err := s.txStmt(ctx, tx, k).QueryContext(ctx, cutoffs[i])
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				if deleted == nil {
					deleted = map[int64]bool{}
				}
				deleted[id] = true
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("store: retention: %w", err)
		}
	}
	return deleted, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Observation is one finished main-frame load the extension reported (PROTOCOL.md §4 Report). PathClass is the
// class of the page's URL path (PathClass), "" when the report had none; Objects and Conns are 0 when unknown.
type Observation struct {
	Origin        string
	Tab           int64
	Nav           string
	PathClass     string
	Protocol      string
	TransferBytes int64
	PLTms         float64
	Multipath     *bool
	Objects       int64
	Conns         int64
}

// Report stores an observation, writes it as the outcome of the latest decision for the same origin, tab and nav,
// and returns how many observations of the origin the store now keeps.
func (s *Store) Report(ctx context.Context, o Observation) (samples int64, err error) {
	if err := checkOrigin(o.Origin); err != nil {
		return 0, err
	}
	now := s.opt.Now().UnixMilli()
	zeroNull := func(n int64) any {
		if n <= 0 {
			return nil
		}
		return n
	}
	// The row as the memory of the latest loads keeps it (recent.go), with the generations around the write.
	r := reported{row: obsRow{origin: o.Origin, class: o.PathClass, proto: o.Protocol, bytes: o.TransferBytes,
		objects: max(o.Objects, 0), conns: max(o.Conns, 0)}}
	var ch outcomeChange // the load's decision, for the memory of measured decisions (measured.go)
	err = s.txThen(ctx, func(tx *sql.Tx) error {
		var err error
		if r.before, err = generation(s.txStmt(ctx, tx, stObservationsGeneration).QueryRowContext(ctx)); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if ch.before, err = s.measuredGeneration(ctx, tx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		res, err := s.txStmt(ctx, tx, stInsertObservation).ExecContext(ctx,
			now, o.Origin, o.Tab, o.Nav, o.Protocol, o.TransferBytes, o.PLTms, o.Multipath, nullString(o.PathClass),
			zeroNull(o.Objects), zeroNull(o.Conns))
		if err != nil {
			return fmt.Errorf("store: observation: %w", err)
		}
		r.row.id, _ = res.LastInsertId()
		if r.deleted, err = s.retain(ctx, tx, "observations", r.row.id, now); err != nil {
			return err
		}
		if r.then, err = generation(s.txStmt(ctx, tx, stObservationsGeneration).QueryRowContext(ctx)); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if _, err := s.txStmt(ctx, tx, stReportOutcome).ExecContext(ctx,
			o.PLTms, o.TransferBytes, o.Protocol, o.Tab, o.Nav, o.Origin); err != nil {
			return fmt.Errorf("store: outcome: %w", err)
		}
		if err := s.outcomeOf(ctx, tx, o.Origin, o.Tab, o.Nav, &ch); err != nil {
			return fmt.Errorf("store: outcome: %w", err)
		}
		if ch.then, err = s.measuredGeneration(ctx, tx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		return s.txStmt(ctx, tx, stCountObservations).QueryRowContext(ctx, o.Origin).Scan(&samples)
	}, func() { s.recent.apply(r); s.measured.apply(ch) })
	return samples, err
}

// SetActuation records what the host did to carry out the latest decision for origin, tab and nav (JSON).
// It reports false when no such decision is kept.
func (s *Store) SetActuation(ctx context.Context, origin string, tab int64, nav string, result json.RawMessage) (bool, error) {
	if !json.Valid(result) {
		return false, errors.New("store: actuation: not JSON")
	}
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.txStmt(ctx, tx, stSetActuation).ExecContext(ctx, string(result), tab, nav, origin)
		if err != nil {
			return fmt.Errorf("store: actuation: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}

// SavePrefs keeps prefs as the last preferences.
func (s *Store) SavePrefs(ctx context.Context, prefs protocol.Prefs) error {
	data, err := json.Marshal(prefs)
	if err != nil {
		return fmt.Errorf("store: prefs: %w", err)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO prefs (id, time_ms, prefs) VALUES (1, ?, ?)
			ON CONFLICT (id) DO UPDATE SET time_ms = excluded.time_ms, prefs = excluded.prefs`,
			s.opt.Now().UnixMilli(), string(data))
		if err != nil {
			return fmt.Errorf("store: prefs: %w", err)
		}
		return nil
	})
}

// Prefs returns the last preferences saved, or nil when none were.
func (s *Store) Prefs(ctx context.Context) (*protocol.Prefs, error) {
	var data string
	err := s.with(func(db *sql.DB) error {
		return s.stmt(stPrefs).QueryRowContext(ctx).Scan(&data)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: prefs: %w", err)
	}
	p, err := prefsOf(sql.NullString{String: data, Valid: true})
	if err != nil {
		return nil, fmt.Errorf("store: prefs: %w", err)
	}
	return p, nil
}

// prefsOf parses the prefs row's column, nil when there is no row.
func prefsOf(data sql.NullString) (*protocol.Prefs, error) {
	if !data.Valid {
		return nil, nil
	}
	var p protocol.Prefs
	if err := json.Unmarshal([]byte(data.String), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Counts returns how many decisions and observations the store keeps.
func (s *Store) Counts(ctx context.Context) (decisions, observations int64, err error) {
	err = s.with(func(db *sql.DB) error {
		return db.QueryRowContext(ctx,
			"SELECT (SELECT count(*) FROM decisions), (SELECT count(*) FROM observations)").Scan(&decisions, &observations)
	})
	return decisions, observations, err
}

// AddUsage adds counter deltas (bytes received and sent on a cellular interface since the last call) to the day of
// at, in local time. Negative deltas (a counter reset) are refused; the caller knows the previous reading.
func (s *Store) AddUsage(ctx context.Context, iface string, at time.Time, rx, tx int64) error {
	if iface == "" || rx < 0 || tx < 0 {
		return fmt.Errorf("store: usage: need an interface and non-negative deltas, got %q %d %d", iface, rx, tx)
	}
	return s.tx(ctx, func(t *sql.Tx) error {
		_, err := t.ExecContext(ctx, `INSERT INTO cellular_usage (day, interface, rx_bytes, tx_bytes) VALUES (?, ?, ?, ?)
			ON CONFLICT (day, interface) DO UPDATE SET rx_bytes = rx_bytes + excluded.rx_bytes,
			tx_bytes = tx_bytes + excluded.tx_bytes`, at.Local().Format(time.DateOnly), iface, rx, tx)
		if err != nil {
			return fmt.Errorf("store: usage: %w", err)
		}
		return nil
	})
}

// Usage returns the bytes received and sent on all cellular interfaces from the local day of from (included) on:
// the "usage so far" of a billing cycle that began on that day.
func (s *Store) Usage(ctx context.Context, from time.Time) (rx, tx int64, err error) {
	err = s.with(func(db *sql.DB) error {
		return s.stmt(stUsage).QueryRowContext(ctx, from.Local().Format(time.DateOnly)).Scan(&rx, &tx)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("store: usage: %w", err)
	}
	return rx, tx, nil
}
