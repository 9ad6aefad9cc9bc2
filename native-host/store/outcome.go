package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Decided is a logged decision as the learning needs it back: its θ1, the model input it was made from, and the
// cellular counter at the time.
type Decided struct {
	Theta1     *int64
	ModelInput json.RawMessage // null when the decision had none (a fixed policy)
	// PreferCellular is the decision's inputs.prefer_cellular: WiFi was to be the backup once cellular joined.
	PreferCellular bool
	CellRxStart    *int64
}

// ErrNoDecision says no decision is logged for a reported load.
var ErrNoDecision = errors.New("store: no decision logged for this load")

// Decided returns the latest decision for origin, tab and nav.
func (s *Store) Decided(ctx context.Context, origin string, tab int64, nav string) (Decided, error) {
	var d Decided
	var body string
	err := s.with(func(db *sql.DB) error {
		return s.stmt(stDecided).QueryRowContext(ctx, tab, nav, origin).Scan(&d.Theta1, &body, &d.CellRxStart)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return d, ErrNoDecision
	}
	if err != nil {
		return d, fmt.Errorf("store: decided: %w", err)
	}
	var reply struct {
		ModelInput json.RawMessage `json:"model_input"`
		Inputs     struct {
			PreferCellular bool `json:"prefer_cellular"`
		} `json:"inputs"`
	}
	if json.Unmarshal([]byte(body), &reply) == nil {
		d.ModelInput, d.PreferCellular = reply.ModelInput, reply.Inputs.PreferCellular
	}
	return d, nil
}

// Outcome is what a load turned out to be beside what its decision predicted: the model's page-load times for the
// reported size (single path, and with the decision carried out), whether the cellular path carried the load's
// data, and how many bytes it received meanwhile (nil: not measured).
type Outcome struct {
	PredictedSPMS, PredictedMPMS float64
	MPUsed                       bool
	CellBytes                    *int64
}

// SetOutcome writes o on the latest decision for origin, tab and nav.
func (s *Store) SetOutcome(ctx context.Context, origin string, tab int64, nav string, o Outcome) error {
	var ch outcomeChange // the decision, for the memory of measured decisions (measured.go)
	return s.txThen(ctx, func(tx *sql.Tx) error {
		var err error
		if ch.before, err = s.measuredGeneration(ctx, tx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		_, err = s.txStmt(ctx, tx, stSetOutcome).ExecContext(ctx, o.PredictedSPMS, o.PredictedMPMS, o.MPUsed, o.CellBytes, tab, nav, origin)
		if err != nil {
			return fmt.Errorf("store: outcome: %w", err)
		}
		if err := s.outcomeOf(ctx, tx, origin, tab, nav, &ch); err != nil {
			return fmt.Errorf("store: outcome: %w", err)
		}
		if ch.then, err = s.measuredGeneration(ctx, tx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		return nil
	}, func() { s.measured.apply(ch) })
}

// Measured is one of an origin's reported loads with what the model had predicted for it.
type Measured struct {
	PLTms, PredictedMS float64 // the prediction of the mode the load ran in
	MPUsed             bool
}

// Measurements returns the last n loads of origin's pages of path class (store.PathClass; "" for pages whose path
// was not given) that have both a measured and a predicted page-load time, newest first. Per class, not per
// origin: the model's error grows as pages get smaller (a fixed browser cost it does not see), so across one
// origin's small single-path pages and large multipath ones the two kinds' errors differed by size, not by
// multipath (a news site's 60 kB list page 1.5-2.6x its prediction, its 2.4 MB gallery 1.0-1.2x, read as
// "multipath takes half the predicted time", sent its 150 kB articles over both paths).
//
// Newest first is by time, then id: the order of the index decisions_measured (schema.go, migration 8), which
// SQLite walks backwards, stopping after n rows, and which holds the four values returned. By id alone it read and
// sorted every decision the origin ever had (each row's columns past its decision JSON sit on overflow pages), on
// the navigation's path: after 1,500 decisions of one origin, the query took most of a 4-9 ms decide
// (go run ./native-host/cmd/hostbench, its serving-host lines).
//
// The decide path's n, PredictWindow, is served from memory while nothing else changed the decisions (measured.go).
func (s *Store) Measurements(ctx context.Context, origin, class string, n int) ([]Measured, error) {
	var out []Measured
	err := s.with(func(db *sql.DB) error {
		if n == PredictWindow {
			_, g, err := s.generations(ctx)
			if err != nil {
				return err
			}
			out, err = s.measuredFor(ctx, db, g, measuredKey{origin, class})
			return err
		}
		var err error
		out, err = measurementsOf(ctx, s.stmt(stMeasurements), origin, class, n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: measurements: %w", err)
	}
	return out, nil
}

// measurementsOf runs Measurements' statement st and reads its rows: what SQLite holds, without the memory.
func measurementsOf(ctx context.Context, st *sql.Stmt, origin, class string, n int) ([]Measured, error) {
	rows, err := st.QueryContext(ctx, origin, class, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Measured
	for rows.Next() {
		var m Measured
		var sp, mp float64
		if err := rows.Scan(&m.PLTms, &sp, &mp, &m.MPUsed); err != nil {
			return nil, err
		}
		m.PredictedMS = sp
		if m.MPUsed {
			m.PredictedMS = mp
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
