package store

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
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
		{"the origin's latest loads", stRecentOrigin, "SEARCH observations USING COVERING INDEX observations_history (origin=?)"},
		{"the observations' generation", stObservationsGeneration, "SEARCH generations USING PRIMARY KEY (name=?)"},
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
				{stRecentOrigin, []any{o, originWindow}},
				{stRecentAll, []any{recentWindow}},
				{stHistoryOthers, []any{o, OthersWindow}},
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
	// Back to schema 7: its indexes, no generations, its version.
	err := s.with(func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, `DROP INDEX observations_history; DROP INDEX decisions_measured;
			CREATE INDEX observations_origin ON observations(origin, id); DROP TRIGGER observations_inserted;
			DROP TRIGGER observations_updated; DROP TRIGGER observations_deleted; DROP TABLE generations;
			DROP TRIGGER decisions_measured_inserted; DROP TRIGGER decisions_measured_updated;
			DROP TRIGGER decisions_measured_deleted;
			PRAGMA user_version = 7`)
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

// History stops walking the origin's latest loads once both levels are full: what it returns is what the whole
// window of 3 x PredictWindow loads gives, taken in full.
func TestHistoryStopsWhenFull(t *testing.T) {
	type load struct {
		class string
		bytes int64
	}
	// want is the history of the loads (oldest first) as the whole window gives it.
	want := func(loads []load, class string) History {
		var h History
		var objects, classObjects []int64
		for i, n := len(loads)-1, 0; i >= 0 && n < 3*PredictWindow; i, n = i-1, n+1 {
			l := loads[i]
			if l.class == class && class != "" {
				if len(h.Class) < PredictWindow {
					h.Class, classObjects = append(h.Class, l.bytes), append(classObjects, l.bytes/1000)
				}
			} else if len(h.Origin) < PredictWindow {
				h.Origin, objects = append(h.Origin, l.bytes), append(objects, l.bytes/1000)
			}
		}
		if len(classObjects) > 0 {
			objects = classObjects
		}
		h.Objects, h.Conns = medianOf(objects), medianOf(objects)
		return h
	}
	many := func(n int, class string, from int64) []load {
		var out []load
		for i := range int64(n) {
			out = append(out, load{class, (from + i) * 1000})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		loads []load
		class string
	}{
		{"never seen", nil, "/a/:id"},
		{"no class asked: the latest 20", many(70, "/a/:id", 1), ""},
		{"the class fills first, the rest later", append(many(30, "/b/:id", 1), many(25, "/a/:id", 100)...), "/a/:id"},
		{"the rest fills first, the class later", append(many(25, "/a/:id", 1), many(30, "/b/:id", 100)...), "/a/:id"},
		{"the class beyond the window", append(many(5, "/a/:id", 1), many(70, "/b/:id", 100)...), "/a/:id"},
		{"neither level full", append(many(10, "/a/:id", 1), many(10, "", 100)...), "/a/:id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, Options{})
			for i, l := range tc.loads {
				if _, err := s.Report(ctx, Observation{Origin: "https://a.example", Tab: 1, Nav: strconv.Itoa(i), PathClass: l.class,
					Protocol: "h2", TransferBytes: l.bytes, Objects: l.bytes / 1000, Conns: l.bytes / 1000}); err != nil {
					t.Fatal(err)
				}
			}
			h, err := s.History(ctx, "https://a.example", tc.class)
			if err != nil {
				t.Fatal(err)
			}
			w := want(tc.loads, tc.class)
			if !slices.Equal(h.Class, w.Class) || !slices.Equal(h.Origin, w.Origin) || h.Objects != w.Objects || h.Conns != w.Conns {
				t.Errorf("got %+v\nwant %+v", h, w)
			}
		})
	}
}

// BenchmarkHistory reads a page's history as the decide path does, from a log like hostbench's: 20 loads of the
// page's class and 20 of other pages of its origin, then 200 of its origin without a class between 200 of other
// sites; with its class (which the latest 60 loads lack) and without one. Under valgrind --tool=callgrind the
// difference of two runs' instructions (-test.benchtime 2001x and 10001x) over 8000 is one call's, the same on
// every run.
func BenchmarkHistory(b *testing.B) {
	s := open(b, Options{})
	for i := range int64(20) {
		for _, o := range []Observation{
			{Origin: "https://example.com", Tab: 1, Nav: "c", PathClass: "/gallery/:id", Protocol: "h2", TransferBytes: 1_900_000 + i*10_000},
			{Origin: "https://example.com", Tab: 1, Nav: "o", PathClass: "/page/:id", Protocol: "h2", TransferBytes: 30_000 + i*40_000},
		} {
			if _, err := s.Report(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range int64(200) {
		for _, o := range []Observation{
			{Origin: "https://example.com", Tab: 1, Nav: "n", Protocol: "h2", TransferBytes: 1_900_000 + i%20*10_000},
			{Origin: fmt.Sprintf("https://site%d.example", i%30), Tab: 1, Nav: "s", Protocol: "h2", TransferBytes: 20_000 + i%30*50_000},
		} {
			if _, err := s.Report(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, class := range []string{"/gallery/:id", ""} {
		b.Run("class="+class, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.History(ctx, "https://example.com", class); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
