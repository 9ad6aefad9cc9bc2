package store

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// plan is SQLite's query plan of q, one line per step.
func plan(t *testing.T, s *Store, q string) string {
	t.Helper()
	args := make([]any, strings.Count(q, "?"))
	var lines []string
	err := s.with(func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			lines = append(lines, detail)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "; ")
}

// The decide path's reads are answered from an index alone, in the index's order: no row of the table is sought
// and nothing is sorted, however many loads an origin has.
func TestDecidePathPlans(t *testing.T) {
	s := open(t, Options{})
	for _, c := range []struct {
		name string
		k    stmt
		want string
	}{
		{"history of the origin", stHistoryOrigin, "SEARCH observations USING COVERING INDEX observations_history (origin=?)"},
		{"protocol of the latest load", stProtocol, "SEARCH observations USING COVERING INDEX observations_history (origin=?)"},
		{"loads counted", stCountObservations, "COVERING INDEX observations_history (origin=?)"},
		{"learned measurements", stMeasurements, "SEARCH decisions USING COVERING INDEX decisions_measured (origin=? AND <expr>=?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := plan(t, s, stmtSQL[c.k])
			if !strings.Contains(p, c.want) || strings.Contains(p, "TEMP B-TREE") {
				t.Errorf("plan %q, want %q and no sort", p, c.want)
			}
		})
	}
}

// unindexed is q with every table read without an index, for the reference answer.
func unindexed(q string) string {
	q = strings.ReplaceAll(q, "FROM observations", "FROM observations NOT INDEXED")
	return strings.ReplaceAll(q, "FROM decisions", "FROM decisions NOT INDEXED")
}

// rowsOf runs q with args and returns every row's columns as text.
func rowsOf(t *testing.T, s *Store, q string, args ...any) [][]string {
	t.Helper()
	var out [][]string
	err := s.with(func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			row := make([]string, len(cols))
			for i, v := range vals {
				row[i] = fmt.Sprint(v)
			}
			out = append(out, row)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The indexes change how the decide path's reads find their rows, never which rows nor their order: on a log with
// several origins and classes (a missing class among them), loads without an outcome, and decisions made in the
// same millisecond, each prepared statement returns what the same text returns reading the tables alone.
func TestIndexedReadsMatchTables(t *testing.T) {
	clock := time.UnixMilli(1_790_000_000_000)
	s := open(t, Options{Now: func() time.Time { return clock }})
	r := rand.New(rand.NewPCG(1, 2))
	origins := []string{"https://a.example", "https://b.example", "https://c.example"}
	classes := []string{"", "/", "/article/:id", "/gallery/:id"}
	for i := range 600 {
		if r.IntN(3) > 0 { // two of three share the previous one's millisecond
			clock = clock.Add(time.Millisecond)
		}
		o, c := origins[r.IntN(len(origins))], classes[r.IntN(len(classes))]
		d := decision(o, i)
		if err := s.LogDecision(ctx, request(d), d, nil, DecisionMeta{PathClass: c}); err != nil {
			t.Fatal(err)
		}
		if r.IntN(4) == 0 {
			continue // never reported
		}
		mp := r.IntN(2) == 0
		if _, err := s.Report(ctx, Observation{Origin: o, Tab: d.Tab, Nav: d.Nav, PathClass: c, Protocol: []string{"h2", "http/1.1"}[r.IntN(2)],
			TransferBytes: r.Int64N(3e6), PLTms: float64(r.IntN(5000)), Multipath: &mp, Objects: r.Int64N(3), Conns: r.Int64N(3)}); err != nil {
			t.Fatal(err)
		}
		if r.IntN(3) > 0 {
			if err := s.SetOutcome(ctx, o, d.Tab, d.Nav, Outcome{PredictedSPMS: float64(r.IntN(5000)), PredictedMPMS: float64(r.IntN(5000)), MPUsed: mp}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, o := range append(origins, "https://never.example") {
		for _, c := range classes {
			for _, q := range []struct {
				k    stmt
				args []any
			}{
				{stHistoryOrigin, []any{o, 3 * PredictWindow}},
				{stHistoryOthers, []any{o, OthersWindow}},
				{stProtocol, []any{o}},
				{stCountObservations, []any{o}},
				{stMeasurements, []any{o, c, PredictWindow}},
				{stMeasurements, []any{o, c, 1000}},
			} {
				got, want := rowsOf(t, s, stmtSQL[q.k], q.args...), rowsOf(t, s, unindexed(stmtSQL[q.k]), q.args...)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("statement %d %v: %d rows through the index, %d from the table; differ", q.k, q.args, len(got), len(want))
				}
				if q.k == stMeasurements && q.args[2] == 1000 && o != "https://never.example" && len(got) == 0 {
					t.Errorf("%s %q: no measurements: the comparison proves nothing", o, c)
				}
			}
		}
	}
}

// The statements belong to the open database: DeleteAll prepares them on the new one, Close closes them, and a
// closed store refuses instead of running a closed statement.
func TestStatementsFollowTheDatabase(t *testing.T) {
	s := open(t, Options{})
	report := func() error {
		_, err := s.Report(ctx, Observation{Origin: "https://a.example", Tab: 1, Nav: "1-1", Protocol: "h2", TransferBytes: 5000, PLTms: 10})
		return err
	}
	if err := report(); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAll(); err != nil {
		t.Fatal(err)
	}
	if h, err := s.History(ctx, "https://a.example", ""); err != nil || h.Samples() != 0 {
		t.Fatalf("after delete: %+v %v", h, err)
	}
	if err := report(); err != nil {
		t.Fatalf("report after delete: %v", err)
	}
	if h, err := s.History(ctx, "https://a.example", ""); err != nil || len(h.Origin) != 1 {
		t.Fatalf("the new database's history: %+v %v", h, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(ctx, "https://a.example", ""); !errors.Is(err, ErrClosed) {
		t.Errorf("history after close: %v, want ErrClosed", err)
	}
	if err := report(); !errors.Is(err, ErrClosed) {
		t.Errorf("report after close: %v, want ErrClosed", err)
	}
}

// A log of schema 7 with rows in it gains the indexes (migration 8) and keeps every row, and its reads use them.
func TestMigrationIndexesAnExistingLog(t *testing.T) {
	s := open(t, Options{})
	for i := range 30 {
		d := decision("https://a.example", i)
		if err := s.LogDecision(ctx, request(d), d, nil, DecisionMeta{PathClass: "/"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Report(ctx, Observation{Origin: d.Origin, Tab: d.Tab, Nav: d.Nav, PathClass: "/", Protocol: "h2", TransferBytes: 1000, PLTms: 50}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetOutcome(ctx, d.Origin, d.Tab, d.Nav, Outcome{PredictedSPMS: 40, PredictedMPMS: 30}); err != nil {
			t.Fatal(err)
		}
	}
	// Back to schema 7: its indexes, its version.
	err := s.with(func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, `DROP INDEX observations_history; DROP INDEX decisions_measured;
			CREATE INDEX observations_origin ON observations(origin, id); PRAGMA user_version = 7`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p := plan(t, s, stmtSQL[stMeasurements]); !strings.Contains(p, "COVERING INDEX decisions_measured") {
		t.Errorf("after the migration: plan %q", p)
	}
	if ms, err := s.Measurements(ctx, "https://a.example", "/", 100); err != nil || len(ms) != 30 {
		t.Errorf("measurements after the migration: %d %v, want 30", len(ms), err)
	}
	if h, err := s.History(ctx, "https://a.example", "/"); err != nil || len(h.Class) != PredictWindow {
		t.Errorf("history after the migration: %+v %v", h, err)
	}
	if rows := rowsOf(t, s, "SELECT name FROM sqlite_master WHERE name = 'observations_origin'"); len(rows) != 0 {
		t.Errorf("observations_origin still there: %v", rows)
	}
}
