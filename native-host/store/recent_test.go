package store

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// stored is what History and Protocol return read from SQLite alone, the memories' reference: the origin's latest
// loads as the window's statement reads them, the others' loads as stHistoryOthers does, the measured loads as
// Measurements' statement does.
func stored(t *testing.T, s *Store, origin, class string) (History, string) {
	t.Helper()
	var h History
	var proto string
	err := s.with(func(db *sql.DB) error {
		return snapshot(ctx, db, func(conn *sql.Conn) error {
			own, err := readWindow(ctx, conn, stmtSQL[stRecentOrigin], originWindow, origin)
			if err != nil {
				return err
			}
			h = historyOf(own.rows, class)
			if len(own.rows) > 0 {
				proto = own.rows[0].proto
			}
			h.Protocol = proto
			h.Others, err = othersStored(ctx, s.stmt(stHistoryOthers), origin)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Measured = storedMeasurements(t, s, origin, class)
	h.Prefs, h.PrefsErr = s.Prefs(ctx)
	return h, proto
}

// same checks that the Store's History and Protocol of origin's class are what SQLite alone holds.
func same(t *testing.T, s *Store, origin, class, when string) {
	t.Helper()
	h, err := s.History(ctx, origin, class)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	p, err := s.Protocol(ctx, origin)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	wh, wp := stored(t, s, origin, class)
	if !reflect.DeepEqual(h, wh) || p != wp {
		t.Fatalf("%s, %s %q: from the store\n%+v %q\nfrom SQLite\n%+v %q", when, origin, class, h, p, wh, wp)
	}
}

// The memory answers what SQLite would, through a browsing session of random loads over a few origins (one of
// them taking most loads for a while, so that the others' loads lie beyond the memory's window), with retention
// deleting rows by count and by age inside the windows, and by age with the clock set back, where a window loses
// rows while older ones stay beyond it.
func TestRecentMatchesTheTable(t *testing.T) {
	origins := []string{"https://a.example", "https://b.example", "https://c.example", "https://d.example"}
	classes := []string{"", "/", "/article/:id", "/gallery/:id"}
	for _, tc := range []struct {
		name    string
		maxRows int64
		maxAge  time.Duration
		step    time.Duration // the clock's advance per load
		hog     bool          // one origin takes nearly every load
		back    bool          // the clock is set back by an hour halfway: rows older by id outlive newer ones
	}{
		{"no retention", 0, 0, time.Second, false, false},
		{"retention by rows inside the windows", 45, 0, time.Second, false, false},
		{"retention by age inside the windows", 0, 70 * time.Second, time.Second, false, false},
		{"one origin takes most loads", 0, 0, time.Second, true, false},
		{"one origin, retention by rows", 90, 0, time.Second, true, false},
		{"the clock set back, retention by age", 0, 150 * time.Second, time.Second, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.UnixMilli(1_790_000_000_000)
			s := open(t, Options{MaxRows: tc.maxRows, MaxAge: tc.maxAge, Now: func() time.Time { return clock }})
			r := rand.New(rand.NewPCG(3, 4))
			for i := range 600 {
				clock = clock.Add(tc.step)
				if tc.back && i == 300 {
					clock = clock.Add(-time.Hour)
				}
				o := origins[r.IntN(len(origins))]
				if tc.hog && r.IntN(10) > 0 {
					o = origins[0]
				}
				if _, err := s.Report(ctx, Observation{Origin: o, Tab: 1, Nav: strconv.Itoa(i), PathClass: classes[r.IntN(len(classes))],
					Protocol: []string{"h2", "http/1.1", "h3"}[r.IntN(3)], TransferBytes: r.Int64N(3e6), PLTms: 100,
					Objects: r.Int64N(4) - 1, Conns: r.Int64N(4) - 1}); err != nil {
					t.Fatal(err)
				}
				// A decision between loads, as a browsing session makes them.
				same(t, s, origins[r.IntN(len(origins))], classes[r.IntN(len(classes))], fmt.Sprintf("after load %d", i))
			}
			for _, o := range append(origins, "https://never.example") {
				for _, c := range classes {
					same(t, s, o, c, "at the end")
				}
			}
		})
	}
}

// A browsing session keeps the memories: a decision (its reads, then its row), its load's report and outcome and
// a load elsewhere leave them at the database's generations with the origin's windows in them, so the next
// decision reads no row of the observations or of the measured decisions.
func TestRecentKeptThroughASession(t *testing.T) {
	s := open(t, Options{})
	const o, class = "https://a.example", "/a/:id"
	for i := range 5 {
		if _, err := s.History(ctx, o, class); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Measurements(ctx, o, class, PredictWindow); err != nil {
			t.Fatal(err)
		}
		d := decision(o, i)
		if err := s.LogDecision(ctx, request(d), d, nil, DecisionMeta{PathClass: class}); err != nil {
			t.Fatal(err)
		}
		for _, ob := range []Observation{
			{Origin: o, Tab: d.Tab, Nav: d.Nav, PathClass: class, Protocol: "h2", TransferBytes: 2e6, PLTms: 100},
			{Origin: "https://b.example", Tab: 99, Nav: strconv.Itoa(i), Protocol: "h2", TransferBytes: 5e4, PLTms: 100},
		} {
			if _, err := s.Report(ctx, ob); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SetOutcome(ctx, o, d.Tab, d.Nav, Outcome{PredictedSPMS: 90, PredictedMPMS: 80, MPUsed: true}); err != nil {
			t.Fatal(err)
		}
		var g, gm int64
		if err := s.with(func(db *sql.DB) error {
			var err error
			if g, err = generation(s.stmt(stObservationsGeneration).QueryRowContext(ctx)); err != nil {
				return err
			}
			gm, err = generation(s.stmt(stMeasuredGeneration).QueryRowContext(ctx))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		s.recent.mu.Lock()
		kept := s.recent.valid && s.recent.gen == g && s.recent.origins[o] != nil && s.recent.latest != nil &&
			len(s.recent.origins[o].rows) == i+1
		s.recent.mu.Unlock()
		if !kept {
			t.Fatalf("after load %d: the memory of the latest loads was dropped (generation %d, the memory's %d)", i, g, s.recent.gen)
		}
		s.measured.mu.Lock()
		w := s.measured.windows[measuredKey{o, class}]
		kept = s.measured.valid && s.measured.gen == gm && gm > 0 && w != nil && len(w.rows) == i+1
		s.measured.mu.Unlock()
		if !kept {
			t.Fatalf("after load %d: the memory of measured decisions was dropped (generation %d, the memory's %d)", i, gm, s.measured.gen)
		}
	}
	same(t, s, o, class, "at the end")
	sameMeasured(t, s, o, class, "at the end")
}

// The helper process of TestRecentSeesOtherProcesses: it opens the database named by MPSURF_TEST_OTHER_DB as a
// second host would and writes what MPSURF_TEST_OTHER_DO says.
func TestRecentOtherProcessHelper(t *testing.T) {
	path := os.Getenv("MPSURF_TEST_OTHER_DB")
	if path == "" {
		t.Skip("the helper process of TestRecentSeesOtherProcesses")
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	switch do := os.Getenv("MPSURF_TEST_OTHER_DO"); do {
	case "report":
		_, err = s.Report(ctx, Observation{Origin: "https://a.example", Tab: 9, Nav: "other", PathClass: "/a/:id", Protocol: "http/1.1",
			TransferBytes: 7777, PLTms: 100})
	case "report elsewhere":
		_, err = s.Report(ctx, Observation{Origin: "https://z.example", Tab: 9, Nav: "other", Protocol: "h2", TransferBytes: 8888, PLTms: 100})
	case "delete origin", "change a row", "delete all", "change an outcome", "delete decisions", "log a measured decision":
		q := map[string]string{
			"delete origin":     "DELETE FROM observations WHERE origin = 'https://a.example'",
			"change a row":      "UPDATE observations SET transfer_bytes = 1 WHERE id = (SELECT max(id) FROM observations)",
			"delete all":        "DELETE FROM observations",
			"change an outcome": "UPDATE decisions SET plt_ms = 1 WHERE id = (SELECT max(id) FROM decisions WHERE origin = 'https://a.example')",
			"delete decisions":  "DELETE FROM decisions WHERE origin = 'https://a.example' AND id % 4 = 1",
			"log a measured decision": `INSERT INTO decisions (time_ms, origin, tab, nav, multipath, deadline_ms, model_id, model_version,
				request, decision, path_class, plt_ms, predicted_sp_ms, predicted_mp_ms, mp_used)
				VALUES (9e12, 'https://a.example', 9, 'other', 1, 3000, 'm', 1, 'null', '{}', '/a/:id', 5, 6, 7, 1)`,
		}[do]
		err = s.with(func(db *sql.DB) error { _, err := db.ExecContext(ctx, q); return err })
	default:
		t.Fatalf("unknown action %q", do)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Another process's write to the observations (another browser's host, the sqlite3 shell) takes effect on the
// next read: the memory is read again once the table's generation moved. And the log's deletion by the host
// itself (log_delete) leaves nothing in memory.
func TestRecentSeesOtherProcesses(t *testing.T) {
	for _, tc := range []struct {
		do, origin string
	}{
		{"report", "https://a.example"},
		{"report elsewhere", "https://a.example"},
		{"delete origin", "https://a.example"},
		{"change a row", "https://b.example"},
		{"delete all", "https://a.example"},
		{"change an outcome", "https://a.example"},
		{"delete decisions", "https://a.example"},
		{"log a measured decision", "https://a.example"},
	} {
		t.Run(tc.do, func(t *testing.T) {
			s := open(t, Options{})
			for i := range 30 {
				for _, o := range []string{"https://a.example", "https://b.example"} {
					d := decision(o, i)
					if err := s.LogDecision(ctx, request(d), d, nil, DecisionMeta{PathClass: "/a/:id"}); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Report(ctx, Observation{Origin: o, Tab: d.Tab, Nav: d.Nav, PathClass: "/a/:id", Protocol: "h2",
						TransferBytes: int64(1000 + i), PLTms: float64(100 + i)}); err != nil {
						t.Fatal(err)
					}
					if err := s.SetOutcome(ctx, o, d.Tab, d.Nav, Outcome{PredictedSPMS: 90, PredictedMPMS: 80, MPUsed: i%2 == 0}); err != nil {
						t.Fatal(err)
					}
				}
			}
			before, _ := s.History(ctx, tc.origin, "/a/:id")
			beforeM, _ := s.Measurements(ctx, tc.origin, "/a/:id", PredictWindow)
			same(t, s, tc.origin, "/a/:id", "before")
			sameMeasured(t, s, tc.origin, "/a/:id", "before")
			cmd := exec.Command(os.Args[0], "-test.run=^TestRecentOtherProcessHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), "MPSURF_TEST_OTHER_DB="+s.Path(), "MPSURF_TEST_OTHER_DO="+tc.do)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the other process: %v\n%s", err, out)
			}
			after, _ := s.History(ctx, tc.origin, "/a/:id")
			afterM, _ := s.Measurements(ctx, tc.origin, "/a/:id", PredictWindow)
			same(t, s, tc.origin, "/a/:id", "after the other process's write")
			sameMeasured(t, s, tc.origin, "/a/:id", "after the other process's write")
			if reflect.DeepEqual(before, after) && reflect.DeepEqual(beforeM, afterM) {
				t.Errorf("the other process's write changed nothing the history or the measurements show: the test proves nothing")
			}
		})
	}
	t.Run("log deleted by the host", func(t *testing.T) {
		s := open(t, Options{})
		if _, err := s.Report(ctx, Observation{Origin: "https://a.example", Tab: 1, Nav: "1", Protocol: "h2", TransferBytes: 5000, PLTms: 10}); err != nil {
			t.Fatal(err)
		}
		if h, _ := s.History(ctx, "https://a.example", ""); len(h.Origin) != 1 {
			t.Fatalf("before: %+v", h)
		}
		if err := s.DeleteAll(); err != nil {
			t.Fatal(err)
		}
		if h, err := s.History(ctx, "https://a.example", ""); err != nil || h.Samples() != 0 || len(h.Others) != 0 {
			t.Errorf("after the deletion: %+v %v", h, err)
		}
		if p, err := s.Protocol(ctx, "https://a.example"); err != nil || p != "" {
			t.Errorf("protocol after the deletion: %q %v", p, err)
		}
	})
}

// storedMeasurements is Measurements read from SQLite alone, the memory's reference.
func storedMeasurements(t *testing.T, s *Store, origin, class string) []Measured {
	t.Helper()
	var out []Measured
	err := s.with(func(db *sql.DB) error {
		var err error
		out, err = measurementsOf(ctx, s.stmt(stMeasurements), origin, class, PredictWindow)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameMeasured checks that the Store's Measurements of origin's class are what SQLite alone holds.
func sameMeasured(t *testing.T, s *Store, origin, class, when string) {
	t.Helper()
	got, err := s.Measurements(ctx, origin, class, PredictWindow)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if want := storedMeasurements(t, s, origin, class); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s, %s %q: from the store\n%+v\nfrom SQLite\n%+v", when, origin, class, got, want)
	}
}

// The memory of measured decisions answers what SQLite would, through a session of decisions whose loads are
// reported and learned from in either order, some never, some twice, several in one millisecond, with retention
// deleting decisions by count and by age inside the windows, and with the clock set back (then retention by count
// deletes decisions at the head of a window, by time, while older ones by time stay beyond it).
func TestMeasuredMatchesTheTable(t *testing.T) {
	origins := []string{"https://a.example", "https://b.example"}
	classes := []string{"", "/a/:id"}
	for _, tc := range []struct {
		name    string
		maxRows int64
		maxAge  time.Duration
		back    bool
	}{
		{"no retention", 0, 0, false},
		{"retention by rows inside the windows", 60, 0, false},
		{"retention by age inside the windows", 0, 40 * time.Second, false},
		{"the clock set back, retention by age", 0, 100 * time.Second, true},
		{"the clock set back, retention by rows", 150, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.UnixMilli(1_790_000_000_000)
			s := open(t, Options{MaxRows: tc.maxRows, MaxAge: tc.maxAge, Now: func() time.Time { return clock }})
			r := rand.New(rand.NewPCG(5, 6))
			type load struct {
				d protocol.Decision
				c string
			}
			var pending []load
			for i := range 600 {
				if r.IntN(3) > 0 {
					clock = clock.Add(time.Second)
				}
				if tc.back && i == 300 {
					clock = clock.Add(-time.Hour)
				}
				o, c := origins[r.IntN(len(origins))], classes[r.IntN(len(classes))]
				d := decision(o, i)
				if err := s.LogDecision(ctx, request(d), d, nil, DecisionMeta{PathClass: c}); err != nil {
					t.Fatal(err)
				}
				pending = append(pending, load{d, c})
				// Some earlier load's report and outcome, in either order, or twice.
				l := pending[r.IntN(len(pending))]
				report := func() {
					mp := r.IntN(2) == 0
					if _, err := s.Report(ctx, Observation{Origin: l.d.Origin, Tab: l.d.Tab, Nav: l.d.Nav, PathClass: l.c, Protocol: "h2",
						TransferBytes: r.Int64N(3e6), PLTms: float64(1 + r.IntN(5000)), Multipath: &mp}); err != nil {
						t.Fatal(err)
					}
				}
				outcome := func() {
					if err := s.SetOutcome(ctx, l.d.Origin, l.d.Tab, l.d.Nav, Outcome{PredictedSPMS: float64(1 + r.IntN(5000)),
						PredictedMPMS: float64(1 + r.IntN(5000)), MPUsed: r.IntN(2) == 0}); err != nil {
						t.Fatal(err)
					}
				}
				switch r.IntN(5) {
				case 0:
					report()
					outcome()
				case 1:
					outcome()
					report()
				case 2:
					report()
				case 3:
					outcome()
				}
				sameMeasured(t, s, origins[r.IntN(len(origins))], classes[r.IntN(len(classes))], fmt.Sprintf("after decision %d", i))
			}
			for _, o := range append(origins, "https://never.example") {
				for _, c := range classes {
					sameMeasured(t, s, o, c, "at the end")
				}
			}
			if got := storedMeasurements(t, s, origins[0], classes[1]); len(got) < PredictWindow && tc.maxRows == 0 && tc.maxAge == 0 {
				t.Errorf("%d measured decisions: the window was never full, the test proves less than it says", len(got))
			}
		})
	}
}

// A decision's history carries the user's preferences as Prefs reads them: none, saved, changed in SQLite by
// another writer, and a row that does not parse, which leaves the sizes as they are.
func TestHistoryCarriesPrefs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		do      func(t *testing.T, s *Store)
		mode    string // "" none
		corrupt bool
	}{
		{"none saved", func(*testing.T, *Store) {}, "", false},
		{"saved", func(t *testing.T, s *Store) {
			if err := s.SavePrefs(ctx, protocol.Prefs{Mode: "battery_saver", DeadlineMS: 5000}); err != nil {
				t.Fatal(err)
			}
		}, "battery_saver", false},
		{"changed by another writer", func(t *testing.T, s *Store) {
			if err := s.SavePrefs(ctx, protocol.Prefs{Mode: "battery_saver"}); err != nil {
				t.Fatal(err)
			}
			execSQL(t, s, `UPDATE prefs SET prefs = '{"mode":"balanced","deadline_ms":4000}' WHERE id = 1`)
		}, "balanced", false},
		{"a row that does not parse", func(t *testing.T, s *Store) {
			execSQL(t, s, `INSERT INTO prefs (id, time_ms, prefs) VALUES (1, 0, '{"mode":')`)
		}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, Options{})
			if _, err := s.Report(ctx, Observation{Origin: "https://a.example", Tab: 1, Nav: "1", PathClass: "/a/:id", Protocol: "h2",
				TransferBytes: 5000, PLTms: 10}); err != nil {
				t.Fatal(err)
			}
			tc.do(t, s)
			h, err := s.History(ctx, "https://a.example", "/a/:id")
			if err != nil || len(h.Class) != 1 {
				t.Fatalf("history %+v %v", h, err)
			}
			if (h.PrefsErr != nil) != tc.corrupt {
				t.Errorf("prefs error %v", h.PrefsErr)
			}
			if got := h.Prefs; (got == nil) != (tc.mode == "") || (got != nil && got.Mode != tc.mode) {
				t.Errorf("prefs %+v, want mode %q", got, tc.mode)
			}
			same(t, s, "https://a.example", "/a/:id", "with the prefs")
		})
	}
}

// execSQL runs q on s's database, as another writer would.
func execSQL(t *testing.T, s *Store, q string) {
	t.Helper()
	if err := s.with(func(db *sql.DB) error { _, err := db.ExecContext(ctx, q); return err }); err != nil {
		t.Fatal(err)
	}
}
