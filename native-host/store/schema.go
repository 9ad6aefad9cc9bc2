package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] brings the schema from version i to i+1 (PRAGMA user_version). Append only: a published migration
// never changes, so every database on every machine passes through the same steps.
var migrations = []string{
	// 1: the first schema.
	`CREATE TABLE decisions (
		id            INTEGER PRIMARY KEY,
		time_ms       INTEGER NOT NULL,
		origin        TEXT    NOT NULL,
		tab           INTEGER NOT NULL,
		nav           TEXT    NOT NULL,
		multipath     INTEGER NOT NULL,
		theta1        INTEGER NOT NULL,
		theta2        INTEGER,
		deadline_ms   INTEGER NOT NULL,
		model_id      TEXT    NOT NULL,
		model_version INTEGER NOT NULL,
		request       TEXT    NOT NULL, -- the request body as received, JSON
		decision      TEXT    NOT NULL, -- the whole Decision replied, JSON: inputs, terms, size, reason
		plt_ms        REAL,             -- outcome the extension reports (report), null until then
		transfer_bytes INTEGER,
		protocol      TEXT,
		actuation     TEXT              -- what the host did to carry the decision out, JSON, null until known
	);
	CREATE INDEX decisions_origin_time ON decisions(origin, time_ms);
	CREATE INDEX decisions_time ON decisions(time_ms);
	CREATE INDEX decisions_multipath ON decisions(multipath, time_ms);
	CREATE INDEX decisions_theta ON decisions(theta1, theta2);
	CREATE INDEX decisions_nav ON decisions(tab, nav);
	CREATE TABLE observations (
		id             INTEGER PRIMARY KEY,
		time_ms        INTEGER NOT NULL,
		origin         TEXT    NOT NULL,
		tab            INTEGER NOT NULL,
		nav            TEXT    NOT NULL,
		protocol       TEXT    NOT NULL,
		transfer_bytes INTEGER NOT NULL,
		plt_ms         REAL    NOT NULL,
		multipath      INTEGER            -- null: no decision arrived for this load
	);
	CREATE INDEX observations_origin ON observations(origin, id);
	CREATE INDEX observations_time ON observations(time_ms);
	CREATE TABLE prefs (
		id         INTEGER PRIMARY KEY CHECK (id = 1),
		time_ms    INTEGER NOT NULL,
		prefs      TEXT    NOT NULL
	);
	CREATE TABLE cellular_usage (
		day       TEXT    NOT NULL,      -- local date, YYYY-MM-DD
		interface TEXT    NOT NULL,
		rx_bytes  INTEGER NOT NULL DEFAULT 0,
		tx_bytes  INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (day, interface)
	) WITHOUT ROWID;`,
	// 2: the last path estimates, so that a host started by a new browser session decides from recent
	// measurements instead of none.
	`CREATE TABLE path_estimates (
		name     TEXT    PRIMARY KEY,
		time_ms  INTEGER NOT NULL,
		estimate TEXT    NOT NULL  -- PROTOCOL.md Path object, JSON
	) WITHOUT ROWID;`,
	// 3: θ1 may be never (NULL); decisions keep what they predicted and, once the load is reported, what was
	// measured (the model's error, for researchers and for the learned corrections); loads keep their path class,
	// object count and parallel connections, for size predictions per page rather than per origin. SQLite cannot
	// drop a NOT NULL, so the decisions table is rebuilt.
	`CREATE TABLE decisions3 (
		id            INTEGER PRIMARY KEY,
		time_ms       INTEGER NOT NULL,
		origin        TEXT    NOT NULL,
		tab           INTEGER NOT NULL,
		nav           TEXT    NOT NULL,
		multipath     INTEGER NOT NULL,
		theta1        INTEGER,          -- null: never
		theta2        INTEGER,
		deadline_ms   INTEGER NOT NULL,
		model_id      TEXT    NOT NULL,
		model_version INTEGER NOT NULL,
		request       TEXT    NOT NULL,
		decision      TEXT    NOT NULL,
		plt_ms        REAL,
		transfer_bytes INTEGER,
		protocol      TEXT,
		actuation     TEXT,
		path_class    TEXT,
		basis         TEXT,
		cell_rx_start INTEGER,          -- the cellular interface's rx counter at the decision, for cell_bytes
		cell_bytes    INTEGER,          -- cellular bytes received between the decision and the load's report
		predicted_sp_ms REAL,           -- the model's page-load time of the reported size, single path
		predicted_mp_ms REAL,           -- the same with the decision carried out
		mp_used       INTEGER           -- the cellular path carried the load's data (cell_bytes over a join's)
	);
	INSERT INTO decisions3 (id, time_ms, origin, tab, nav, multipath, theta1, theta2, deadline_ms, model_id,
		model_version, request, decision, plt_ms, transfer_bytes, protocol, actuation)
		SELECT id, time_ms, origin, tab, nav, multipath, theta1, theta2, deadline_ms, model_id, model_version,
		request, decision, plt_ms, transfer_bytes, protocol, actuation FROM decisions;
	DROP TABLE decisions;
	ALTER TABLE decisions3 RENAME TO decisions;
	CREATE INDEX decisions_origin_time ON decisions(origin, time_ms);
	CREATE INDEX decisions_time ON decisions(time_ms);
	CREATE INDEX decisions_multipath ON decisions(multipath, time_ms);
	CREATE INDEX decisions_theta ON decisions(theta1, theta2);
	CREATE INDEX decisions_nav ON decisions(tab, nav);
	ALTER TABLE observations ADD COLUMN path_class TEXT;
	ALTER TABLE observations ADD COLUMN objects INTEGER;
	ALTER TABLE observations ADD COLUMN conns INTEGER;`,
	// 4: the third-party addresses each origin's pages reached (PROTOCOL.md §4 Peers), so that a host started by a
	// new browser session puts them under the origin's decision before the page connects to them again.
	`CREATE TABLE peers (
		origin   TEXT    NOT NULL,
		addr     TEXT    NOT NULL,
		host     TEXT    NOT NULL,
		time_ms  INTEGER NOT NULL,
		PRIMARY KEY (origin, addr)
	) WITHOUT ROWID;
	CREATE INDEX peers_time ON peers(time_ms);`,
	// 5: the cellular radio's inferred RRC state (rrc.Mark, JSON) by interface, so that a host started by a new
	// browser session knows whether the radio is still awake from the last one's traffic.
	`CREATE TABLE radio_marks (
		interface TEXT    PRIMARY KEY,
		time_ms   INTEGER NOT NULL,
		mark      TEXT    NOT NULL
	) WITHOUT ROWID;`,
	// 6: the decide requests an earlier host kept whole held the page's URL path (and would have held any field a
	// request carried): each is rewritten to the fields the log keeps (log.go requestKeys; the path's class is in
	// path_class). Open then vacuums the file (vacuumAfter), so that the old rows' bytes leave its free pages too.
	`UPDATE decisions SET request = CASE
		WHEN json_valid(request) AND json_type(request) = 'object' THEN (
			SELECT json_group_object(key, CASE type WHEN 'true' THEN json('true') WHEN 'false' THEN json('false')
				WHEN 'null' THEN json('null') ELSE value END)
			FROM json_each(decisions.request)
			WHERE key IN ('origin', 'tab', 'nav', 'kind', 'size', 'protocol') AND type NOT IN ('object', 'array'))
		ELSE 'null' END;`,
	// 7: the log's own secrets: the key of the path-class tokens of pseudonymous exports (pseudonym.go), made at
	// the first export, so that the same page kind gets the same token within one log and another in another's.
	`CREATE TABLE secrets (
		name  TEXT PRIMARY KEY,
		value BLOB NOT NULL
	) WITHOUT ROWID;`,
	// 8: the reads of the decide path served by indexes alone, without the table's rows. A page's history (History,
	// Protocol) walks the origin's latest observations in the index and finds its columns there instead of seeking
	// each row; it replaces observations_origin, which it begins with. The learned corrections (Measurements) walk
	// the origin's reported loads of the path class, newest first: through decisions_origin_time, every decision of
	// the origin was read whole to test its path class and outcome, whose columns sit past the decision's JSON, on
	// overflow pages. The index holds only the rows Measurements can return (partial) and their four values.
	`CREATE INDEX observations_history ON observations(origin, id, path_class, transfer_bytes, objects, conns, protocol);
	DROP INDEX observations_origin;
	CREATE INDEX decisions_measured ON decisions(origin, coalesce(path_class, ''), time_ms, id, plt_ms,
		predicted_sp_ms, predicted_mp_ms, mp_used)
		WHERE plt_ms IS NOT NULL AND predicted_sp_ms IS NOT NULL AND mp_used IS NOT NULL;`,
	// 9: the observations' generation, raised by every insert, update and delete of one, whoever writes: a host
	// keeps the latest loads in memory (recent.go) while the generation is the one it read them at.
	`CREATE TABLE generations (
		name  TEXT    PRIMARY KEY,
		value INTEGER NOT NULL
	) WITHOUT ROWID;
	INSERT INTO generations VALUES ('observations', 0);
	CREATE TRIGGER observations_inserted AFTER INSERT ON observations BEGIN
		UPDATE generations SET value = value + 1 WHERE name = 'observations'; END;
	CREATE TRIGGER observations_updated AFTER UPDATE ON observations BEGIN
		UPDATE generations SET value = value + 1 WHERE name = 'observations'; END;
	CREATE TRIGGER observations_deleted AFTER DELETE ON observations BEGIN
		UPDATE generations SET value = value + 1 WHERE name = 'observations'; END;`,
	// 10: the measured decisions' generation (those Measurements returns: an outcome measured and predicted),
	// raised by every change to a decision measured before or after it, whoever writes: a host keeps the latest
	// of them in memory (measured.go). A decision logged without an outcome raises none.
	`INSERT INTO generations VALUES ('measured', 0);
	CREATE TRIGGER decisions_measured_inserted AFTER INSERT ON decisions
		WHEN NEW.plt_ms IS NOT NULL AND NEW.predicted_sp_ms IS NOT NULL AND NEW.mp_used IS NOT NULL BEGIN
		UPDATE generations SET value = value + 1 WHERE name = 'measured'; END;
	CREATE TRIGGER decisions_measured_updated
		AFTER UPDATE OF id, origin, path_class, time_ms, plt_ms, predicted_sp_ms, predicted_mp_ms, mp_used ON decisions
		WHEN (OLD.plt_ms IS NOT NULL AND OLD.predicted_sp_ms IS NOT NULL AND OLD.mp_used IS NOT NULL)
		OR (NEW.plt_ms IS NOT NULL AND NEW.predicted_sp_ms IS NOT NULL AND NEW.mp_used IS NOT NULL) BEGIN
		UPDATE generations SET value = value + 1 WHERE name = 'measured'; END;
	CREATE TRIGGER decisions_measured_deleted AFTER DELETE ON decisions
		WHEN OLD.plt_ms IS NOT NULL AND OLD.predicted_sp_ms IS NOT NULL AND OLD.mp_used IS NOT NULL BEGIN
		UPDATE generations SET value = value + 1 WHERE name = 'measured'; END;`,
}

// vacuumAfter: a database that passes through this version on Open is vacuumed after its migration, so that no
// deleted byte of the earlier rows stays in the file or its write-ahead log (migration 6).
const vacuumAfter = 6

// SchemaVersion is the version Open brings every database to.
var SchemaVersion = len(migrations)

// migrate brings db's schema to SchemaVersion, then vacuums it when the migrations passed vacuumAfter on a
// database that had rows before.
func migrate(ctx context.Context, db *sql.DB) error {
	from, err := migrateTx(ctx, db)
	if err != nil {
		return err
	}
	if from == 0 || from >= vacuumAfter {
		return nil
	}
	// VACUUM cannot run inside a transaction. It writes the database anew, without free pages, through the WAL;
	// the checkpoint then moves it into the file and truncates the WAL, which held the old rows' pages as well.
	if _, err := db.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("vacuum after migration %d: %w", vacuumAfter, err)
	}
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("checkpoint after migration %d: %w", vacuumAfter, err)
	}
	return nil
}

// migrateTx runs the migrations in one transaction and returns the version the database had before.
func migrateTx(ctx context.Context, db *sql.DB) (int, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("reading the schema version: %w", err)
	}
	from := v
	if v > len(migrations) {
		return 0, fmt.Errorf("schema version %d is newer than this host's %d; update mpsurf-host", v, len(migrations))
	}
	for ; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return 0, fmt.Errorf("migration to version %d: %w", v+1, err)
		}
		// PRAGMA takes no parameters; v is an int we own.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
			return 0, err
		}
	}
	return from, tx.Commit()
}
