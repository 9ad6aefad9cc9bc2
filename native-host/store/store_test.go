package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
	"io/fs"
)

var ctx = context.Background()

func open(t testing.TB, opt Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "sub", "mpsurf.db"), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func decision(origin string, i int) protocol.Decision {
	t2 := int64(1000 * i)
	var theta2 *int64
	if i%2 == 0 {
		theta2 = &t2
	}
	return protocol.Decision{
		Multipath: i%3 == 0, Theta1: theta1(i), Theta2: theta2, DeadlineMS: 3000,
		Reason: fmt.Sprintf("reason %d, with \"quotes\", commas\nand a newline", i),
		Model:  protocol.Model{ID: "baseline-seed001", Version: 1},
		Origin: origin, Tab: int64(i), Nav: fmt.Sprintf("%d-1", i),
		Inputs: map[string]any{"size": float64(i), "rrc": "idle", "known": false, "rtt": nil},
	}
}

func request(d protocol.Decision) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"origin": d.Origin, "tab": d.Tab, "nav": d.Nav})
	return b
}

func TestOpenMigratesAndReopens(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LogDecision(ctx, nil, decision("https://a.example", 1), nil, DecisionMeta{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	var mode, sync string
	s.with(func(db *sql.DB) error {
		db.QueryRow("PRAGMA user_version").Scan(&v)
		db.QueryRow("PRAGMA journal_mode").Scan(&mode)
		return db.QueryRow("PRAGMA synchronous").Scan(&sync)
	})
	if v != SchemaVersion || mode != "wal" || sync != "2" { // 2 = FULL
		t.Errorf("user_version %d journal_mode %q synchronous %q, want %d wal 2", v, mode, sync, SchemaVersion)
	}
	if d, _, _ := s.Counts(ctx); d != 1 {
		t.Errorf("decisions after reopen: %d, want 1", d)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", f, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, bytes.Repeat([]byte("not sqlite "), 400), 0o600)
	for _, tc := range []struct {
		name, path string
		opt        Options
	}{
		{"parent is a file", filepath.Join(file, "x.db"), Options{}},
		{"not a database", file, Options{}},
		{"bad sync level", filepath.Join(dir, "ok.db"), Options{Sync: "OFF"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := Open(tc.path, tc.opt); err == nil {
				s.Close()
				t.Fatal("opened")
			}
		})
	}
}

func TestLogDecisionRefusesURLs(t *testing.T) {
	s := open(t, Options{})
	for _, o := range []string{"https://a.example/path", "https://A.example", "https://a.example?q=1", "ftp://x"} {
		if err := s.LogDecision(ctx, nil, decision(o, 1), nil, DecisionMeta{}); err == nil {
			t.Errorf("%q: logged", o)
		}
		if _, err := s.Report(ctx, Observation{Origin: o, Nav: "1"}); err == nil {
			t.Errorf("%q: reported", o)
		}
	}
	if d, o, _ := s.Counts(ctx); d != 0 || o != 0 {
		t.Errorf("rows written: %d %d", d, o)
	}
}

func TestRetention(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	s := open(t, Options{MaxRows: 5, MaxAge: time.Hour, Now: func() time.Time { return now }})
	for i := range 8 {
		if err := s.LogDecision(ctx, nil, decision("https://a.example", i), nil, DecisionMeta{}); err != nil {
			t.Fatal(err)
		}
	}
	if d, _, _ := s.Counts(ctx); d != 5 {
		t.Errorf("by rows: %d kept, want 5", d)
	}
	now = now.Add(2 * time.Hour)
	if err := s.LogDecision(ctx, nil, decision("https://a.example", 9), nil, DecisionMeta{}); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := s.Counts(ctx); d != 1 {
		t.Errorf("by age: %d kept, want 1", d)
	}
}

func TestReportAndHistory(t *testing.T) {
	s := open(t, Options{})
	h, err := s.History(ctx, "https://new.example", "/")
	if err != nil || h.Samples() != 0 {
		t.Fatalf("never seen: %+v %v", h, err)
	}
	d := decision("https://a.example", 7)
	if err := s.LogDecision(ctx, request(d), d, nil, DecisionMeta{PathClass: "/article/:id", Basis: "prior", CellRxStart: i64p(1000)}); err != nil {
		t.Fatal(err)
	}
	mp := true
	// 25 loads of /article/:id and 3 of /: the window keeps the class's last 20, 6..25 kB, newest first.
	for i := 1; i <= 25; i++ {
		n, err := s.Report(ctx, Observation{Origin: "https://a.example", Tab: 7, Nav: "7-1", Protocol: "h2", PathClass: "/article/:id",
			TransferBytes: int64(i) * 1000, PLTms: 1234.5, Multipath: &mp, Objects: int64(i), Conns: 1})
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(i) {
			t.Fatalf("samples %d, want %d", n, i)
		}
	}
	for i := 1; i <= 3; i++ {
		s.Report(ctx, Observation{Origin: "https://a.example", Tab: 7, Nav: "7-2", Protocol: "h2", PathClass: "/", TransferBytes: 3e6})
	}
	h, _ = s.History(ctx, "https://a.example", "/article/:id")
	if len(h.Class) != 20 || h.Class[0] != 25000 || h.Class[19] != 6000 || len(h.Origin) != 3 || h.Origin[0] != 3e6 {
		t.Errorf("history %+v", h)
	}
	// Objects 6..25 of the class: median (15+16)/2 rounded down.
	if h.Objects != 15 || h.Conns != 1 {
		t.Errorf("objects %d conns %d", h.Objects, h.Conns)
	}
	if h, _ = s.History(ctx, "https://a.example", "/gallery/:id"); len(h.Class) != 0 || len(h.Origin) != 20 || len(h.Others) != 0 {
		t.Errorf("another class: %+v", h)
	}
	// Another origin sees a.example's loads as the user's loads elsewhere: the latest OthersWindow, newest first.
	for i := 1; i <= OthersWindow; i++ {
		s.Report(ctx, Observation{Origin: "https://c.example", Tab: 7, Nav: "7-3", Protocol: "h2", PathClass: "/", TransferBytes: int64(i)})
	}
	if h, _ = s.History(ctx, "https://b.example", "/"); h.Samples() != 0 || len(h.Others) != OthersWindow || h.Others[0] != OthersWindow || h.Others[OthersWindow-1] != 1 {
		t.Errorf("a new origin: %+v", h)
	}
	if h, _ = s.History(ctx, "https://a.example", "/"); len(h.Others) != OthersWindow || h.Others[0] != OthersWindow || len(h.Class) != 3 {
		t.Errorf("an origin's own loads are not its others: %+v", h)
	}

	dec, err := s.Decided(ctx, "https://a.example", 7, "7-1")
	if err != nil || dec.Theta1 == nil || *dec.Theta1 != 200007 || dec.CellRxStart == nil || *dec.CellRxStart != 1000 {
		t.Errorf("decided %+v %v", dec, err)
	}
	if _, err := s.Decided(ctx, "https://a.example", 9, "9-1"); err != ErrNoDecision {
		t.Errorf("no decision: %v", err)
	}
	if err := s.SetOutcome(ctx, "https://a.example", 7, "7-1", Outcome{PredictedSPMS: 1000, PredictedMPMS: 800, MPUsed: true, CellBytes: i64p(5000)}); err != nil {
		t.Fatal(err)
	}
	ms, err := s.Measurements(ctx, "https://a.example", "/article/:id", 20)
	if err != nil || len(ms) != 1 || ms[0].PLTms != 1234.5 || ms[0].PredictedMS != 800 || !ms[0].MPUsed {
		t.Errorf("measurements %+v %v", ms, err)
	}
	// Another class of the same origin learns nothing from it: the error differs by page size, not by multipath.
	if ms, err := s.Measurements(ctx, "https://a.example", "/gallery/:id", 20); err != nil || len(ms) != 0 {
		t.Errorf("another class's measurements %+v %v", ms, err)
	}
	var buf bytes.Buffer
	if _, err := s.Export(ctx, &buf, FormatJSONL, 0, PathsRaw); err != nil {
		t.Fatal(err)
	}
	var row map[string]any
	json.Unmarshal(buf.Bytes(), &row)
	if row["plt_ms"] != 1234.5 || row["transfer_bytes"] != 25000.0 || row["protocol"] != "h2" || row["path_class"] != "/article/:id" ||
		row["predicted_mp_ms"] != 800.0 || row["cell_bytes"] != 5000.0 || row["mp_used"] != true || row["basis"] != "prior" {
		t.Errorf("outcome not on the decision row: %v", row)
	}
	if ok, err := s.SetActuation(ctx, "https://a.example", 7, "7-1", json.RawMessage(`{"subflows":2}`)); !ok || err != nil {
		t.Errorf("actuation: %v %v", ok, err)
	}
	if ok, _ := s.SetActuation(ctx, "https://a.example", 8, "8-1", json.RawMessage(`{}`)); ok {
		t.Error("actuation recorded for a decision never made")
	}
}

func i64p(n int64) *int64 { return &n }

// theta1 varies a decision's θ1, never included.
func theta1(i int) *int64 {
	if i%5 == 4 {
		return nil
	}
	return i64p(200000 + int64(i))
}

func TestPrefsAndUsage(t *testing.T) {
	s := open(t, Options{})
	if p, err := s.Prefs(ctx); p != nil || err != nil {
		t.Errorf("no prefs yet: %v %v", p, err)
	}
	s.SavePrefs(ctx, protocol.Prefs{Mode: "balanced"})
	s.SavePrefs(ctx, protocol.Prefs{Mode: "performance", DeadlineMS: 4000})
	if p, _ := s.Prefs(ctx); p == nil || p.Mode != "performance" || p.DeadlineMS != 4000 {
		t.Errorf("prefs %+v", p)
	}
	day1 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.Local)
	s.AddUsage(ctx, "wwan0", day1.AddDate(0, 0, -1), 999, 999)
	s.AddUsage(ctx, "wwan0", day1, 100, 10)
	s.AddUsage(ctx, "wwan0", day1.Add(time.Hour), 50, 5)
	s.AddUsage(ctx, "wwan1", day1.AddDate(0, 0, 3), 1, 1)
	if rx, tx, err := s.Usage(ctx, day1); rx != 151 || tx != 16 || err != nil {
		t.Errorf("usage %d %d %v, want 151 16", rx, tx, err)
	}
	if err := s.AddUsage(ctx, "wwan0", day1, -1, 0); err == nil {
		t.Error("negative delta accepted")
	}
}

func TestDeleteAllRemovesFiles(t *testing.T) {
	s := open(t, Options{})
	for i := range 10 {
		s.LogDecision(ctx, nil, decision("https://secret.example", i), nil, DecisionMeta{})
	}
	// While a reader holds the WAL, the -wal and -shm files exist: DeleteAll must remove them too.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if _, err := os.Stat(s.Path() + suffix); err != nil {
			t.Fatalf("before: %v", err)
		}
	}
	orig := s.path
	if err := s.DeleteAll(); err != nil {
		t.Fatal(err)
	}
	if d, o, err := s.Counts(ctx); d != 0 || o != 0 || err != nil {
		t.Errorf("after delete: %d %d %v", d, o, err)
	}
	// The new file is a fresh database: no page of it holds the old origin.
	s.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		data, err := os.ReadFile(orig + suffix)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("secret.example")) {
			t.Errorf("%s still holds the deleted origin", orig+suffix)
		}
	}
}

// fill logs n decisions and reports outcomes for every third one.
func fill(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := range n {
		d := decision(fmt.Sprintf("https://s%d.example", i%7), i)
		if err := s.LogDecision(ctx, request(d), d, nil, DecisionMeta{}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			s.Report(ctx, Observation{Origin: d.Origin, Tab: d.Tab, Nav: d.Nav, Protocol: "h2",
				TransferBytes: int64(i) * 777, PLTms: float64(i) + 0.25})
		}
	}
}

func readAll(t *testing.T, s *Store) []Row {
	t.Helper()
	var out []Row
	s.readTx(ctx, func(conn *sql.Conn) error {
		rows, err := conn.QueryContext(ctx, rowQuery, 0, 0, int64(1<<62))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRow(rows)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return nil
	})
	return out
}

// parseExport reads an export back into rows, for both formats.
func parseExport(t *testing.T, format string, data []byte) []Row {
	t.Helper()
	var out []Row
	if format == FormatJSONL {
		for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("line %s: %v", line, err)
			}
			var r Row
			json.Unmarshal(m["id"], &r.ID)
			json.Unmarshal(m["time_ms"], &r.TimeMS)
			json.Unmarshal(m["origin"], &r.Origin)
			json.Unmarshal(m["tab"], &r.Tab)
			json.Unmarshal(m["nav"], &r.Nav)
			json.Unmarshal(m["multipath"], &r.Multipath)
			json.Unmarshal(m["theta1"], &r.Theta1)
			json.Unmarshal(m["theta2"], &r.Theta2)
			json.Unmarshal(m["deadline_ms"], &r.DeadlineMS)
			json.Unmarshal(m["model_id"], &r.ModelID)
			json.Unmarshal(m["model_version"], &r.ModelVersion)
			json.Unmarshal(m["plt_ms"], &r.PLTms)
			json.Unmarshal(m["transfer_bytes"], &r.TransferBytes)
			json.Unmarshal(m["protocol"], &r.Protocol)
			if string(m["actuation"]) != "null" {
				a := string(m["actuation"])
				r.Actuation = &a
			}
			r.Request, r.Decision = string(m["request"]), string(m["decision"])
			out = append(out, r)
		}
		return out
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recs[0], Columns) {
		t.Fatalf("header %v", recs[0])
	}
	i64 := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	for _, c := range recs[1:] {
		r := Row{ID: i64(c[0]), TimeMS: i64(c[1]), Origin: c[3], Tab: i64(c[4]), Nav: c[5], Multipath: c[6] == "true",
			DeadlineMS: i64(c[9]), ModelID: c[10], ModelVersion: i64(c[11]), Request: c[16], Decision: c[17]}
		if c[7] != "" {
			v := i64(c[7])
			r.Theta1 = &v
		}
		if c[8] != "" {
			v := i64(c[8])
			r.Theta2 = &v
		}
		if c[12] != "" {
			v, _ := strconv.ParseFloat(c[12], 64)
			r.PLTms = &v
		}
		if c[13] != "" {
			v := i64(c[13])
			r.TransferBytes = &v
		}
		if c[14] != "" {
			v := c[14]
			r.Protocol = &v
		}
		if c[15] != "" {
			v := c[15]
			r.Actuation = &v
		}
		out = append(out, r)
	}
	return out
}

func TestExportRoundTrip(t *testing.T) {
	s := open(t, Options{})
	const n = 300
	fill(t, s, n)
	want := readAll(t, s)
	if len(want) != n {
		t.Fatalf("%d rows in the table, want %d", len(want), n)
	}
	for _, format := range []string{FormatCSV, FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			rows, err := s.Export(ctx, &buf, format, 0, PathsPseudonymous)
			if err != nil || rows != n {
				t.Fatalf("Export: %d rows, %v", rows, err)
			}
			got := parseExport(t, format, buf.Bytes())
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip differs: %d rows vs %d", len(got), len(want))
			}
			// Chunked with a small chunk size gives the same bytes.
			var chunks bytes.Buffer
			var c *Cursor
			count := 0
			for {
				ch, err := s.ExportChunk(ctx, format, 0, c, 8<<10, PathsPseudonymous)
				if err != nil {
					t.Fatal(err)
				}
				if len(ch.Data) > 8<<10 || jsonLen([]byte(ch.Data)) > 8<<10 {
					t.Fatalf("chunk of %d bytes", len(ch.Data))
				}
				chunks.WriteString(ch.Data)
				count++
				if ch.Next == nil {
					break
				}
				dec, err := DecodeCursor(ch.Next.Encode())
				if err != nil || dec != *ch.Next {
					t.Fatalf("cursor round trip: %+v %v", dec, err)
				}
				c = &dec
				// A row logged mid-export is not in it: the snapshot is fixed at the first chunk.
				if count == 1 {
					d := decision("https://late.example", 1)
					s.LogDecision(ctx, nil, d, nil, DecisionMeta{})
					defer s.with(func(db *sql.DB) error {
						_, err := db.Exec("DELETE FROM decisions WHERE origin = 'https://late.example'")
						return err
					})
				}
			}
			if count < 3 || chunks.String() != buf.String() {
				t.Errorf("chunked export (%d chunks) differs from the full export", count)
			}
		})
	}
}

func TestExportSince(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	s := open(t, Options{Now: func() time.Time { return now }})
	for i := range 10 {
		now = time.UnixMilli(int64(1_000_000 + i*1000))
		s.LogDecision(ctx, nil, decision("https://a.example", i), nil, DecisionMeta{})
	}
	var buf bytes.Buffer
	if n, _ := s.Export(ctx, &buf, FormatJSONL, 1_005_000, PathsRaw); n != 5 {
		t.Errorf("since: %d rows, want 5", n)
	}
	if _, err := s.Export(ctx, &buf, "xml", 0, PathsRaw); err == nil {
		t.Error("format xml accepted")
	}
}

// Writes go on while an export reads: the export sees exactly the rows of its snapshot.
func TestExportSnapshotWhileWriting(t *testing.T) {
	s := open(t, Options{})
	fill(t, s, 200)
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			s.LogDecision(ctx, nil, decision("https://w.example", n), nil, DecisionMeta{})
			n++
		}
	}()
	var buf bytes.Buffer
	rows, err := s.Export(ctx, &buf, FormatJSONL, 0, PathsRaw)
	close(stop)
	written := <-done
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(buf.String(), "\n")
	if int64(lines) != rows || rows < 200 || rows > int64(200+written) {
		t.Errorf("export %d rows (%d lines) with %d concurrent writes", rows, lines, written)
	}
	ids := parseExport(t, FormatJSONL, buf.Bytes())
	for i := 1; i < len(ids); i++ {
		if ids[i].ID != ids[i-1].ID+1 {
			t.Fatalf("gap in the snapshot at id %d", ids[i].ID)
		}
	}
}

func TestParseSince(t *testing.T) {
	local := time.Date(2026, 11, 1, 0, 0, 0, 0, time.Local).UnixMilli()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"2026-11-01", local, true},
		{"2026-11-01T10:00:00Z", time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).UnixMilli(), true},
		{"2026-11-01T10:00:00.5+01:00", time.Date(2026, 11, 1, 9, 0, 0, 5e8, time.UTC).UnixMilli(), true},
		{"1793491200000", 1793491200000, true},
		{"0", 0, true},
		{"", 0, false},
		{"-5", 0, false},
		{"2026-13-01", 0, false},
		{"yesterday", 0, false},
		{"99999999999999999999", 0, false},
		{"1969-12-31T00:00:00Z", 0, false},
	} {
		got, err := ParseSince(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseSince(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestDecodeCursorRefuses(t *testing.T) {
	good := Cursor{Format: FormatCSV, SinceMS: 5, After: 10, Upto: 20}.Encode()
	if _, err := DecodeCursor(good); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"", "c1.", "c2." + good[3:], good + "!", "c1.eG1sLjAuMC4w",
		Cursor{Format: FormatCSV, After: 30, Upto: 20}.Encode()} {
		if c, err := DecodeCursor(s); err == nil {
			t.Errorf("DecodeCursor(%q) = %+v", s, c)
		}
	}
}

// BenchmarkLogDecision measures one committed decision at each synchronous level.
func BenchmarkLogDecision(b *testing.B) {
	for _, level := range []string{SyncNormal, SyncFull} {
		b.Run(level, func(b *testing.B) {
			s := open(b, Options{Sync: level})
			d := decision("https://a.example", 4)
			req := request(d)
			for b.Loop() {
				if err := s.LogDecision(ctx, req, d, nil, DecisionMeta{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestProtocolOfLatestLoad(t *testing.T) {
	s := open(t, Options{})
	if p, err := s.Protocol(ctx, "https://a.example"); p != "" || err != nil {
		t.Fatalf("never seen: %q %v", p, err)
	}
	for _, proto := range []string{"http/1.1", "h2"} {
		if _, err := s.Report(ctx, Observation{Origin: "https://a.example", Tab: 1, Nav: "1", Protocol: proto, TransferBytes: 10}); err != nil {
			t.Fatal(err)
		}
	}
	s.Report(ctx, Observation{Origin: "https://b.example", Tab: 1, Nav: "2", Protocol: "h3", TransferBytes: 10})
	if p, err := s.Protocol(ctx, "https://a.example"); p != "h2" || err != nil {
		t.Errorf("latest protocol %q %v, want h2", p, err)
	}
}

func TestPathEstimates(t *testing.T) {
	s := open(t, Options{})
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if err := s.SavePaths(ctx, t0, map[string]json.RawMessage{
		"wlan0": json.RawMessage(`{"name":"wlan0","rtt_ms":50}`),
		"wwan0": json.RawMessage(`{"name":"wwan0","rtt_ms":70}`),
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.SavePaths(ctx, t0.Add(time.Minute), map[string]json.RawMessage{"wlan0": json.RawMessage(`{"name":"wlan0","rtt_ms":55}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SavePaths(ctx, t0, map[string]json.RawMessage{"bad": json.RawMessage(`{nope`)}); err == nil {
		t.Error("invalid JSON accepted")
	}
	got, err := s.Paths(ctx, t0.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "wlan0" || string(got[0].Estimate) != `{"name":"wlan0","rtt_ms":55}` {
		t.Errorf("fresh estimates %+v, want wlan0 at 55 ms only", got)
	}
	if all, _ := s.Paths(ctx, t0); len(all) != 2 {
		t.Errorf("%d estimates since t0, want 2", len(all))
	}
}

// TestRadioMarks: a kept RRC mark replaces the interface's earlier one, is read back while young enough, and
// what is not JSON is refused.
func TestRadioMarks(t *testing.T) {
	s := open(t, Options{})
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i, m := range []string{`{"kind":2,"at_ms":1}`, `{"kind":3,"at_ms":2}`} {
		if err := s.SaveRadio(ctx, t0.Add(time.Duration(i)*time.Minute), "wwan0", json.RawMessage(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveRadio(ctx, t0, "wwan1", json.RawMessage(`{nope`)); err == nil {
		t.Error("invalid JSON accepted")
	}
	got, err := s.Radios(ctx, t0.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got["wwan0"]) != `{"kind":3,"at_ms":2}` {
		t.Errorf("marks %v, want wwan0's second only", got)
	}
	if old, _ := s.Radios(ctx, t0.Add(2*time.Minute)); len(old) != 0 {
		t.Errorf("marks older than since returned: %v", old)
	}
}

// Point 8 of issue 12: a database path with URI characters ('?', '#', '%') names that file and no other. The path
// went into SQLite's URI as it was, so MPSURF_DB=/x/a?b.db opened /x/a (the rest read as URI parameters), and
// "delete all" removed a?b.db, an empty file, while the rows stayed in /x/a.
func TestPathWithURICharacters(t *testing.T) {
	for _, name := range []string{"a?b.db", "a#b.db", "a%3Fb.db", "a?mode=memory", "dir with space/x?.db"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if err := s.LogDecision(ctx, nil, decision("https://secret.example", i), nil, DecisionMeta{}); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			var files []string
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					files = append(files, strings.TrimPrefix(p, dir+"/"))
				}
				return nil
			})
			for _, f := range files {
				if f != name && f != name+"-wal" && f != name+"-shm" {
					t.Errorf("a file other than %q and its -wal/-shm: %q (all: %v)", name, f, files)
				}
			}
			if b, _ := os.ReadFile(path); !bytes.HasPrefix(b, []byte("SQLite format 3")) {
				t.Fatalf("%s is not the database (%d bytes)", path, len(b))
			}
			s, err = Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if d, _, err := s.Counts(ctx); d != 3 || err != nil {
				t.Fatalf("reopened: %d decisions, %v", d, err)
			}
			if err := s.DeleteAll(); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s, err = Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d, o, err := s.Counts(ctx); d != 0 || o != 0 || err != nil {
				t.Fatalf("after delete all and a reopen: %d decisions, %d observations, %v", d, o, err)
			}
		})
	}
}

func TestPeers(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	s := open(t, Options{MaxAge: 24 * time.Hour, Now: func() time.Time { return now }})
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	if err := s.SavePeers(ctx, now, "https://news.example", []Peer{{Host: "cdn.example", Addr: a("192.0.2.7")}, {Host: "img.example", Addr: a("::ffff:192.0.2.8")}}); err != nil {
		t.Fatal(err)
	}
	// A newer report of an address replaces the older one (its host too).
	if err := s.SavePeers(ctx, now.Add(time.Minute), "https://news.example", []Peer{{Host: "cdn2.example", Addr: a("192.0.2.7")}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Peers(ctx, "https://news.example", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{{"cdn2.example", a("192.0.2.7"), now.Add(time.Minute)}, {"img.example", a("192.0.2.8"), now}}
	if len(got) != len(want) {
		t.Fatalf("peers %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Host != want[i].Host || got[i].Addr != want[i].Addr || !got[i].Time.Equal(want[i].Time) {
			t.Errorf("peer %d: %v, want %v", i, got[i], want[i])
		}
	}
	if other, _ := s.Peers(ctx, "https://other.example", time.Time{}); len(other) != 0 {
		t.Errorf("another origin's peers: %v", other)
	}
	if recent, _ := s.Peers(ctx, "https://news.example", now.Add(30*time.Second)); len(recent) != 1 {
		t.Errorf("since: %v, want the one newer report", recent)
	}
	// At most MaxPeersPerOrigin per origin, the newest kept.
	var many []Peer
	for i := range MaxPeersPerOrigin + 5 {
		many = append(many, Peer{Host: "x.example", Addr: netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})})
	}
	if err := s.SavePeers(ctx, now.Add(2*time.Minute), "https://news.example", many); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Peers(ctx, "https://news.example", time.Time{}); len(got) != MaxPeersPerOrigin {
		t.Errorf("%d peers kept, want %d", len(got), MaxPeersPerOrigin)
	}
	// Older than the retention age: gone at the next save.
	now = now.Add(48 * time.Hour)
	if err := s.SavePeers(ctx, now, "https://b.example", []Peer{{Host: "c.example", Addr: a("192.0.2.9")}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Peers(ctx, "https://news.example", time.Time{}); len(got) != 0 {
		t.Errorf("peers past the retention age: %v", got)
	}
	for _, bad := range []struct {
		origin string
		p      Peer
	}{
		{"https://a.example/path", Peer{Host: "c.example", Addr: a("192.0.2.1")}},
		{"https://a.example", Peer{Host: "", Addr: a("192.0.2.1")}},
		{"https://a.example", Peer{Host: "c.example"}},
		{"https://a.example", Peer{Host: strings.Repeat("a", 254), Addr: a("192.0.2.1")}},
	} {
		if err := s.SavePeers(ctx, now, bad.origin, []Peer{bad.p}); err == nil {
			t.Errorf("SavePeers(%q, %v) took it", bad.origin, bad.p)
		}
	}
}

// A run of decisions is written in its order, each at the time it was decided; a run with a row the store refuses
// writes none of them.
func TestLogDecisionsRun(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		origins []string
		ok      bool
	}{
		{"three rows", []string{"https://a.example", "https://b.example", "https://a.example"}, true},
		{"one refused", []string{"https://a.example", "https://B.example/x", "https://c.example"}, false},
		{"none", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, Options{Now: func() time.Time { return t0.Add(time.Hour) }})
			var rows []DecisionRow
			for i, o := range tc.origins {
				d := decision(o, i+1)
				rows = append(rows, DecisionRow{Request: request(d), Decision: d, Meta: DecisionMeta{At: t0.Add(time.Duration(i) * time.Second)}})
			}
			err := s.LogDecisions(ctx, rows)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			got := rowsOf(t, s, "SELECT origin, tab, time_ms FROM decisions ORDER BY id")
			if !tc.ok {
				if len(got) != 0 {
					t.Errorf("a refused run wrote %v", got)
				}
				return
			}
			if len(got) != len(rows) {
				t.Fatalf("rows %v", got)
			}
			for i, r := range got {
				want := []string{tc.origins[i], strconv.Itoa(i + 1), strconv.FormatInt(t0.Add(time.Duration(i)*time.Second).UnixMilli(), 10)}
				if fmt.Sprint(r) != fmt.Sprint(textRow(want)) {
					t.Errorf("row %d: %v, want %v", i, r, textRow(want))
				}
			}
		})
	}
}

// textRow is a row of non-null values as rowsOf writes it.
func textRow(vals []string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = fmt.Sprint(sql.NullString{String: v, Valid: true})
	}
	return out
}
