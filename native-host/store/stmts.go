package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// stmt names one of the statements a Store prepares when it opens its database: those of the decide path (the
// reads its input takes, the decision's row) and of the load reports beside it. SQLite compiles a statement's
// text into a program on every prepare, and modernc.org/sqlite keeps no cache of them, so a statement run as text
// was parsed and planned anew on every navigation: about a fifth of the host's decide path
// (go run ./native-host/cmd/hostbench, its serving-host lines, under pprof). database/sql prepares a *sql.Stmt on
// each pooled connection the first time it runs there and keeps it until the Store closes.
type stmt int

const (
	stObservationsGeneration stmt = iota
	stGenerations
	stGenerationsPrefs
	stRecentOrigin
	stRecentAll
	stHistoryOthers
	stMeasurements
	stMeasuredGeneration
	stMeasuredWindow
	stOutcomeRow
	stPrefs
	stUsage
	stInsertDecision
	stRetainDecisionsRows
	stRetainDecisionsAge
	stInsertObservation
	stRetainObservationsRows
	stRetainObservationsAge
	stReportOutcome
	stCountObservations
	stDecided
	stSetOutcome
	stSetActuation
	nStmts
)

// stmtSQL is each statement's text. Retention returns the ids it deleted, for the memories of the latest loads and
// decisions (recent.go, measured.go). The retention statements come in pairs per table, since a table's name is not
// a parameter; "latest decision for a load" is one subquery, written once.
var stmtSQL = [nStmts]string{
	stObservationsGeneration: "SELECT value FROM generations WHERE name = 'observations'",
	stGenerations: `SELECT (SELECT value FROM generations WHERE name = 'observations'),
		(SELECT value FROM generations WHERE name = 'measured')`,
	// A decision's one query (History): both generations and the user's preferences (NULL: none saved).
	stGenerationsPrefs: `SELECT (SELECT value FROM generations WHERE name = 'observations'),
		(SELECT value FROM generations WHERE name = 'measured'), (SELECT prefs FROM prefs WHERE id = 1)`,
	// The memory's windows (recent.go): an origin's latest loads, and every origin's.
	stRecentOrigin: `SELECT id, origin, coalesce(path_class, ''), protocol, transfer_bytes, coalesce(objects, 0),
		coalesce(conns, 0) FROM observations WHERE origin = ? ORDER BY id DESC LIMIT ?`,
	stRecentAll: `SELECT id, origin, coalesce(path_class, ''), protocol, transfer_bytes, coalesce(objects, 0),
		coalesce(conns, 0) FROM observations ORDER BY id DESC LIMIT ?`,
	stHistoryOthers: `SELECT transfer_bytes FROM observations WHERE origin != ? ORDER BY id DESC LIMIT ?`,
	stMeasurements: `SELECT plt_ms, predicted_sp_ms, predicted_mp_ms, mp_used FROM decisions
		WHERE origin = ? AND coalesce(path_class, '') = ? AND plt_ms IS NOT NULL AND predicted_sp_ms IS NOT NULL
		AND mp_used IS NOT NULL ORDER BY time_ms DESC, id DESC LIMIT ?`,
	stMeasuredGeneration: "SELECT value FROM generations WHERE name = 'measured'",
	// The memory's window of measured decisions (measured.go): Measurements' rows, with their place in its order.
	stMeasuredWindow: `SELECT id, time_ms, plt_ms, predicted_sp_ms, predicted_mp_ms, mp_used FROM decisions
		WHERE origin = ? AND coalesce(path_class, '') = ? AND plt_ms IS NOT NULL AND predicted_sp_ms IS NOT NULL
		AND mp_used IS NOT NULL ORDER BY time_ms DESC, id DESC LIMIT ?`,
	stOutcomeRow: `SELECT id, coalesce(path_class, ''), time_ms, plt_ms, predicted_sp_ms, predicted_mp_ms, mp_used
		FROM decisions WHERE id = ` + latestDecision,
	stPrefs: "SELECT prefs FROM prefs WHERE id = 1",
	stUsage: `SELECT coalesce(sum(rx_bytes), 0), coalesce(sum(tx_bytes), 0)
		FROM cellular_usage WHERE day >= ?`,
	stInsertDecision: `INSERT INTO decisions
		(time_ms, origin, tab, nav, multipath, theta1, theta2, deadline_ms, model_id, model_version, request, decision,
		path_class, basis, cell_rx_start)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	stRetainDecisionsRows: "DELETE FROM decisions WHERE id <= ? RETURNING id",
	stRetainDecisionsAge:  "DELETE FROM decisions WHERE time_ms < ? RETURNING id",
	stInsertObservation: `INSERT INTO observations
		(time_ms, origin, tab, nav, protocol, transfer_bytes, plt_ms, multipath, path_class, objects, conns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	stRetainObservationsRows: "DELETE FROM observations WHERE id <= ? RETURNING id",
	stRetainObservationsAge:  "DELETE FROM observations WHERE time_ms < ? RETURNING id",
	stReportOutcome:          `UPDATE decisions SET plt_ms = ?, transfer_bytes = ?, protocol = ? WHERE id = ` + latestDecision,
	stCountObservations:      "SELECT count(*) FROM observations WHERE origin = ?",
	stDecided:                `SELECT theta1, decision, cell_rx_start FROM decisions WHERE id = ` + latestDecision,
	stSetOutcome: `UPDATE decisions SET predicted_sp_ms = ?, predicted_mp_ms = ?, mp_used = ?, cell_bytes = ?
		WHERE id = ` + latestDecision,
	stSetActuation: `UPDATE decisions SET actuation = ? WHERE id = ` + latestDecision,
}

// latestDecision is the id of the latest decision for a load: its tab, nav and origin are the last three parameters.
const latestDecision = `(SELECT max(id) FROM decisions WHERE tab = ? AND nav = ? AND origin = ?)`

// prepared is an open database's statements, in stmt order.
type prepared [nStmts]*sql.Stmt

// prepare compiles every statement of stmtSQL on db; on an error it closes those it made.
func prepare(ctx context.Context, db *sql.DB) (*prepared, error) {
	var p prepared
	for k, q := range stmtSQL {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("preparing statement %d: %w", k, err)
		}
		p[k] = st
	}
	return &p, nil
}

// close closes the statements made so far.
func (p *prepared) close() error {
	var errs []error
	for k, st := range p {
		if st != nil {
			errs = append(errs, st.Close())
			p[k] = nil
		}
	}
	return errors.Join(errs...)
}
