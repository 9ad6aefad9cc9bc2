package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
	"github.com/mpsurf/mpsurf/native-host/wire"
)

// heldLog is a serving host over pipes whose decision log writer waits until the test releases it, as a writer
// behind a slow store would: its store is a real SQLite database.
type heldLog struct {
	*pipeHost
	s       *Server
	db      *store.Store
	entered chan struct{} // receives once the writer holds its first rows
	release chan struct{} // closed to let the writer go on
	ctx     context.Context
	cancel  context.CancelFunc
}

func startHeldLog(t *testing.T, queue int) *heldLog {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "m.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// The model learns from the store and status reports it: the Decider's memory is the same store.
	s := testServer(t, Parts{Policy: policy.NewStore(policy.EmbeddedSource()), Store: db, LogQueue: queue,
		Decider: decide.New(decide.Config{Params: params(t), Memory: db})})
	h := &heldLog{s: s, db: db, entered: make(chan struct{}, 1), release: make(chan struct{})}
	s.dlog.hold = func(ctx context.Context) {
		select {
		case h.entered <- struct{}{}:
		default:
		}
		select {
		case <-h.release:
		case <-ctx.Done():
		}
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	t.Cleanup(h.cancel)
	t.Cleanup(h.letGo) // before the store closes (cleanups run last first)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h.pipeHost = &pipeHost{toHost: inW, fromHost: wire.NewReader(outR, wire.MaxOut), done: make(chan error, 1)}
	go func() {
		err := s.Serve(h.ctx, Config{In: inR, Out: outW, Log: quietLog()})
		outW.Close()
		inR.Close()
		h.done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return h
}

// letGo releases the writer (once).
func (h *heldLog) letGo() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// ask sends one request and returns its reply.
func (h *heldLog) ask(t *testing.T, id int, typ, body string) map[string]any {
	t.Helper()
	msg := fmt.Sprintf(`{"v":1,"id":%d,"type":%q`, id, typ)
	if body != "" {
		msg += `,"body":` + body
	}
	h.send(t, wire.Append(nil, []byte(msg+"}")))
	r := h.next(t)
	if r["id"] != float64(id) {
		t.Fatalf("reply %v to request %d", r, id)
	}
	return r
}

// decide sends a navigation's decide and checks its reply came while the writer was held: its row not yet written.
func (h *heldLog) decide(t *testing.T, id int, nav string) {
	t.Helper()
	if r := h.ask(t, id, protocol.TypeDecide, fmt.Sprintf(`{"origin":"https://a.example","tab":3,"nav":%q,"path":"/gallery/7"}`, nav)); r["ok"] != true {
		t.Fatalf("decide %s: %v", nav, r)
	}
	if n, _, err := h.db.Counts(context.Background()); err != nil || n != 0 {
		t.Fatalf("with the writer held, %d decisions are in the log (%v): the reply waited for the row", n, err)
	}
}

// answerOnceLogged sends a request that reads the log, releases the writer once the request waits for it (or once
// its reply came anyway, which is then checked to have seen nothing it should), and returns the reply.
func (h *heldLog) answerOnceLogged(t *testing.T, id int, typ, body string) map[string]any {
	t.Helper()
	msg := fmt.Sprintf(`{"v":1,"id":%d,"type":%q`, id, typ)
	if body != "" {
		msg += `,"body":` + body
	}
	replies := make(chan map[string]any, 1)
	go func() {
		h.send(t, wire.Append(nil, []byte(msg+"}")))
	}()
	go func() { replies <- h.next(t) }()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case r := <-replies:
			h.letGo() // it did not wait: the checks below see what it saw
			return r
		case <-deadline:
			t.Fatalf("%s: neither a reply nor a wait for the log", typ)
		default:
		}
		if h.s.dlog.waiting.Load() > 0 {
			h.letGo()
			select {
			case r := <-replies:
				return r
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: no reply after the writer went on", typ)
			}
		}
		time.Sleep(time.Millisecond)
	}
}

func body(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	b, ok := r["body"].(map[string]any)
	if !ok || r["ok"] != true {
		t.Fatalf("reply %v", r)
	}
	return b
}

// exported is the log's rows as the log_export request gives them (JSON lines).
func exported(t *testing.T, db *store.Store) []map[string]any {
	t.Helper()
	var out strings.Builder
	if _, err := db.Export(context.Background(), &out, "jsonl", 0, store.PathsRaw); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	return rows
}

// A decision's reply goes out before its row is written; every request that reads the log right after sees the row:
// the report that learns from its decision, an export, status, and delete all, which deletes it.
func TestLogReadsWaitForTheRowsReplied(t *testing.T) {
	for _, tc := range []struct {
		typ, body string
		check     func(t *testing.T, h *heldLog, reply map[string]any)
	}{
		{protocol.TypeReport, `{"origin":"https://a.example","tab":3,"nav":"3-1","protocol":"h2","transfer_bytes":2000000,"plt_ms":2500,"multipath":true,"path":"/gallery/7"}`,
			func(t *testing.T, h *heldLog, reply map[string]any) {
				body(t, reply)
				rows := exported(t, h.db)
				if len(rows) != 1 || rows[0]["plt_ms"] != 2500.0 || rows[0]["predicted_sp_ms"] == nil || rows[0]["mp_used"] == nil {
					t.Errorf("the load's outcome is not on its decision's row: %v", rows)
				}
			}},
		{protocol.TypeLogExport, `{"format":"jsonl"}`, func(t *testing.T, h *heldLog, reply map[string]any) {
			b := body(t, reply)
			if b["rows"] != 1.0 || !strings.Contains(b["data"].(string), `"nav":"3-1"`) {
				t.Errorf("export %v", b)
			}
		}},
		{protocol.TypeStatus, "", func(t *testing.T, h *heldLog, reply map[string]any) {
			st, _ := body(t, reply)["store"].(map[string]any)
			if st["decisions"] != 1.0 || st["unlogged"] != 0.0 {
				t.Errorf("status store %v", st)
			}
		}},
		{protocol.TypeLogDelete, "", func(t *testing.T, h *heldLog, reply map[string]any) {
			body(t, reply)
			h.s.Close() // whatever was still queued is written now
			if rows := exported(t, h.db); len(rows) != 0 {
				t.Errorf("a decision replied before delete all outlived it: %v", rows)
			}
		}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			h := startHeldLog(t, 0)
			h.decide(t, 1, "3-1")
			tc.check(t, h, h.answerOnceLogged(t, 2, tc.typ, tc.body))
		})
	}
}

// The rows are written in the order decided, each with the time it was decided, however long it waited.
func TestLogRowsInTheOrderDecided(t *testing.T) {
	h := startHeldLog(t, 0)
	const n = 30
	for i := range n {
		h.decide(t, i+1, fmt.Sprintf("3-%d", i))
	}
	decided := time.Now().UnixMilli()
	time.Sleep(20 * time.Millisecond) // a row written now would carry a later time
	h.letGo()
	h.answerOnceLogged(t, n+1, protocol.TypeStatus, "")
	rows := exported(t, h.db)
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
	for i, row := range rows {
		req, _ := row["request"].(map[string]any)
		if req["nav"] != fmt.Sprintf("3-%d", i) {
			t.Errorf("row %d is nav %v", i, req["nav"])
		}
		if i > 0 && (row["id"].(float64) <= rows[i-1]["id"].(float64) || row["time_ms"].(float64) < rows[i-1]["time_ms"].(float64)) {
			t.Errorf("row %d (id %v, time %v) after row %d (id %v, time %v)", i, row["id"], row["time_ms"], i-1, rows[i-1]["id"], rows[i-1]["time_ms"])
		}
		if row["time_ms"].(float64) > float64(decided) {
			t.Errorf("row %d: time %v is when it was written, not decided (by %d)", i, row["time_ms"], decided)
		}
	}
}

// A full queue costs the row, never the reply: the decision is answered at once, the row is not logged, and status
// counts it.
func TestFullLogQueueDropsTheRowNotTheReply(t *testing.T) {
	h := startHeldLog(t, 1)
	h.decide(t, 1, "3-1")
	<-h.entered           // the writer holds row 1
	h.decide(t, 2, "3-2") // queued
	h.decide(t, 3, "3-3") // the queue is full
	st, _ := body(t, h.answerOnceLogged(t, 4, protocol.TypeStatus, ""))["store"].(map[string]any)
	if st["decisions"] != 2.0 || st["unlogged"] != 1.0 {
		t.Errorf("status store %v, want 2 decisions and 1 unlogged", st)
	}
	var navs []string
	for _, row := range exported(t, h.db) {
		navs = append(navs, row["request"].(map[string]any)["nav"].(string))
	}
	if strings.Join(navs, " ") != "3-1 3-2" {
		t.Errorf("logged %v, want 3-1 3-2", navs)
	}
}

// When the port closes or a signal stops the host, Serve returns only once the decisions it replied are written.
func TestServeWritesTheLogBeforeReturning(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(h *heldLog)
	}{
		{"the port closed", func(h *heldLog) { h.toHost.Close() }},
		{"a signal", func(h *heldLog) { h.cancel() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHeldLog(t, 0)
			h.decide(t, 1, "3-1")
			h.decide(t, 2, "3-2")
			tc.stop(h)
			for h.s.dlog.waiting.Load() == 0 {
				select {
				case err := <-h.done:
					t.Fatalf("Serve returned (%v) with the decisions not written", err)
				case <-time.After(time.Millisecond):
				}
			}
			h.letGo()
			h.wait(t)
			if rows := exported(t, h.db); len(rows) != 2 {
				t.Errorf("%d rows after Serve returned, want 2", len(rows))
			}
		})
	}
}

// Closing the Server writes what is queued; a store that takes no write cannot hold it past its bound, and the
// rows it could not write are counted.
func TestCloseBoundsTheWrites(t *testing.T) {
	h := startHeldLog(t, 0)
	h.decide(t, 1, "3-1")
	<-h.entered
	h.s.dlog.close(50 * time.Millisecond) // never released: the bound ends it
	if n := h.s.dlog.dropped(); n != 1 {
		t.Errorf("%d unlogged after the bound, want 1", n)
	}
	if rows := exported(t, h.db); len(rows) != 0 {
		t.Errorf("rows %v", rows)
	}
	h.decide(t, 2, "3-2") // after close: answered, not logged
	// Requests are answered one after the other: by the status, the decision before it was queued or dropped.
	if st, _ := body(t, h.ask(t, 3, protocol.TypeStatus, ""))["store"].(map[string]any); st["unlogged"] != 2.0 || st["decisions"] != 0.0 {
		t.Errorf("status store %v, want 2 unlogged and no decision", st)
	}
}
