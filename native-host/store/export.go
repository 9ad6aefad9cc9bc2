package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// Export formats: the protocol's (PROTOCOL.md §4 Log export).
const (
	FormatCSV   = protocol.FormatCSV
	FormatJSONL = protocol.FormatJSONL
)

// MaxChunk caps the data of one log_export reply (PROTOCOL.md §4).
const MaxChunk = 512 << 10

// Columns are the exported fields of a decision row, in order: the CSV header and the JSONL keys.
var Columns = []string{"id", "time_ms", "time", "origin", "tab", "nav", "multipath", "theta1", "theta2", "deadline_ms",
	"model_id", "model_version", "plt_ms", "transfer_bytes", "protocol", "actuation", "request", "decision",
	"path_class", "basis", "cell_bytes", "predicted_sp_ms", "predicted_mp_ms", "mp_used"}

// Row is one exported decision. Request, Decision and Actuation are JSON text.
type Row struct {
	ID            int64
	TimeMS        int64
	Origin        string
	Tab           int64
	Nav           string
	Multipath     bool
	Theta1        *int64 // nil: never
	Theta2        *int64
	DeadlineMS    int64
	ModelID       string
	ModelVersion  int64
	PLTms         *float64
	TransferBytes *int64
	Protocol      *string
	Actuation     *string
	Request       string
	Decision      string
	// What the model predicted for the reported load, and what was measured beside the page-load time.
	PathClass     *string
	Basis         *string
	CellBytes     *int64
	PredictedSPMS *float64
	PredictedMPMS *float64
	MPUsed        *bool
}

const rowQuery = `SELECT id, time_ms, origin, tab, nav, multipath, theta1, theta2, deadline_ms, model_id, model_version,
	plt_ms, transfer_bytes, protocol, actuation, request, decision, path_class, basis, cell_bytes, predicted_sp_ms,
	predicted_mp_ms, mp_used FROM decisions
	WHERE time_ms >= ? AND id > ? AND id <= ? ORDER BY id`

func scanRow(rows *sql.Rows) (Row, error) {
	var r Row
	err := rows.Scan(&r.ID, &r.TimeMS, &r.Origin, &r.Tab, &r.Nav, &r.Multipath, &r.Theta1, &r.Theta2, &r.DeadlineMS,
		&r.ModelID, &r.ModelVersion, &r.PLTms, &r.TransferBytes, &r.Protocol, &r.Actuation, &r.Request, &r.Decision,
		&r.PathClass, &r.Basis, &r.CellBytes, &r.PredictedSPMS, &r.PredictedMPMS, &r.MPUsed)
	return r, err
}

// encode appends r in format to buf.
func encode(buf *bytes.Buffer, format string, r Row) error {
	t := time.UnixMilli(r.TimeMS).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if format == FormatJSONL {
		rawOrNull := func(s *string) json.RawMessage {
			if s == nil {
				return json.RawMessage("null")
			}
			return json.RawMessage(*s)
		}
		line, err := json.Marshal(struct {
			ID            int64           `json:"id"`
			TimeMS        int64           `json:"time_ms"`
			Time          string          `json:"time"`
			Origin        string          `json:"origin"`
			Tab           int64           `json:"tab"`
			Nav           string          `json:"nav"`
			Multipath     bool            `json:"multipath"`
			Theta1        *int64          `json:"theta1"`
			Theta2        *int64          `json:"theta2"`
			DeadlineMS    int64           `json:"deadline_ms"`
			ModelID       string          `json:"model_id"`
			ModelVersion  int64           `json:"model_version"`
			PLTms         *float64        `json:"plt_ms"`
			TransferBytes *int64          `json:"transfer_bytes"`
			Protocol      *string         `json:"protocol"`
			Actuation     json.RawMessage `json:"actuation"`
			Request       json.RawMessage `json:"request"`
			Decision      json.RawMessage `json:"decision"`
			PathClass     *string         `json:"path_class"`
			Basis         *string         `json:"basis"`
			CellBytes     *int64          `json:"cell_bytes"`
			PredictedSPMS *float64        `json:"predicted_sp_ms"`
			PredictedMPMS *float64        `json:"predicted_mp_ms"`
			MPUsed        *bool           `json:"mp_used"`
		}{r.ID, r.TimeMS, t, r.Origin, r.Tab, r.Nav, r.Multipath, r.Theta1, r.Theta2, r.DeadlineMS, r.ModelID,
			r.ModelVersion, r.PLTms, r.TransferBytes, r.Protocol, rawOrNull(r.Actuation), json.RawMessage(r.Request),
			json.RawMessage(r.Decision), r.PathClass, r.Basis, r.CellBytes, r.PredictedSPMS, r.PredictedMPMS, r.MPUsed})
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
		return nil
	}
	// CSV: empty cell for null; numbers as Go prints them, which parse back exactly.
	opt := func(p any) string {
		switch v := p.(type) {
		case *int64:
			if v != nil {
				return strconv.FormatInt(*v, 10)
			}
		case *float64:
			if v != nil {
				return strconv.FormatFloat(*v, 'g', -1, 64)
			}
		case *string:
			if v != nil {
				return *v
			}
		case *bool:
			if v != nil {
				return strconv.FormatBool(*v)
			}
		}
		return ""
	}
	w := csv.NewWriter(buf)
	w.Write([]string{strconv.FormatInt(r.ID, 10), strconv.FormatInt(r.TimeMS, 10), t, r.Origin,
		strconv.FormatInt(r.Tab, 10), r.Nav, strconv.FormatBool(r.Multipath), opt(r.Theta1),
		opt(r.Theta2), strconv.FormatInt(r.DeadlineMS, 10), r.ModelID, strconv.FormatInt(r.ModelVersion, 10),
		opt(r.PLTms), opt(r.TransferBytes), opt(r.Protocol), opt(r.Actuation), r.Request, r.Decision,
		opt(r.PathClass), opt(r.Basis), opt(r.CellBytes), opt(r.PredictedSPMS), opt(r.PredictedMPMS), opt(r.MPUsed)})
	w.Flush()
	return w.Error()
}

func header(buf *bytes.Buffer, format string) {
	if format == FormatCSV {
		w := csv.NewWriter(buf)
		w.Write(Columns)
		w.Flush()
	}
}

func checkFormat(format string) error {
	if format != FormatCSV && format != FormatJSONL {
		return fmt.Errorf("format %q: must be csv or jsonl", format)
	}
	return nil
}

// readTx runs f on one connection inside one read transaction, so that every query f makes sees the same snapshot
// however many writes commit meanwhile (WAL readers never block writers, nor writers readers).
func (s *Store) readTx(ctx context.Context, f func(conn *sql.Conn) error) error {
	return s.with(func(db *sql.DB) error { return snapshot(ctx, db, f) })
}

// snapshot is readTx on db, for a caller already inside with.
func snapshot(ctx context.Context, db *sql.DB, f func(conn *sql.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// DEFERRED, not the DSN's IMMEDIATE: a reader must not take the write lock.
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	return f(conn)
}

// rowsFor returns how an export writes a row's path classes: as logged, or pseudonymous with the log's key.
func (s *Store) rowsFor(ctx context.Context, paths PathClasses) (func(*Row) error, error) {
	if paths == PathsRaw {
		return func(*Row) error { return nil }, nil
	}
	key, err := s.exportKey(ctx)
	if err != nil {
		return nil, err
	}
	return func(r *Row) error { return pseudonymizeRow(r, key) }, nil
}

// Export writes every decision logged at or after sinceMS (unix ms) to w in format, from one consistent snapshot,
// with its path classes as paths says, and returns how many rows it wrote.
func (s *Store) Export(ctx context.Context, w io.Writer, format string, sinceMS int64, paths PathClasses) (int64, error) {
	if err := checkFormat(format); err != nil {
		return 0, fmt.Errorf("store: export: %w", err)
	}
	rewrite, err := s.rowsFor(ctx, paths)
	if err != nil {
		return 0, fmt.Errorf("store: export: %w", err)
	}
	var n int64
	err = s.readTx(ctx, func(conn *sql.Conn) error {
		var buf bytes.Buffer
		header(&buf, format)
		rows, err := conn.QueryContext(ctx, rowQuery, sinceMS, 0, int64(1<<62))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRow(rows)
			if err != nil {
				return err
			}
			if err := rewrite(&r); err != nil {
				return err
			}
			if err := encode(&buf, format, r); err != nil {
				return err
			}
			n++
			if buf.Len() >= 64<<10 {
				if _, err := w.Write(buf.Bytes()); err != nil {
					return err
				}
				buf.Reset()
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		_, err = w.Write(buf.Bytes())
		return err
	})
	if err != nil {
		return n, fmt.Errorf("store: export: %w", err)
	}
	return n, nil
}

// Cursor is where a chunked export goes on. Upto fixes the snapshot at the first chunk: rows logged after it are
// not part of this export. Rows that retention deletes between two chunks are missing from it.
type Cursor struct {
	Format  string
	SinceMS int64
	After   int64 // the last id already sent
	Upto    int64 // the largest id when the export began
}

const cursorPrefix = "c1."

// Encode is the cursor's opaque text.
func (c Cursor) Encode() string {
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(
		fmt.Appendf(nil, "%s.%d.%d.%d", c.Format, c.SinceMS, c.After, c.Upto))
}

// DecodeCursor reads a cursor made by Encode, refusing anything else.
func DecodeCursor(s string) (Cursor, error) {
	bad := errors.New("cursor: not one this host made")
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok || len(rest) > 200 {
		return Cursor{}, bad
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(rest) // strict: one cursor, one spelling
	if err != nil {
		return Cursor{}, bad
	}
	f := strings.Split(string(raw), ".")
	if len(f) != 4 || checkFormat(f[0]) != nil {
		return Cursor{}, bad
	}
	var n [3]int64
	for i, x := range f[1:] {
		if n[i], err = strconv.ParseInt(x, 10, 64); err != nil || n[i] < 0 || strconv.FormatInt(n[i], 10) != x {
			return Cursor{}, bad
		}
	}
	c := Cursor{Format: f[0], SinceMS: n[0], After: n[1], Upto: n[2]}
	// The decoder skips \r and \n even when strict, so the spelling is checked whole: one cursor, one spelling.
	if c.After > c.Upto || c.Encode() != s {
		return Cursor{}, bad
	}
	return c, nil
}

// Chunk is one piece of a chunked export.
type Chunk struct {
	Data string
	Rows int64
	Next *Cursor // nil: the export is complete
}

// ExportChunk returns the next piece of an export: at most maxBytes of data, and at most maxBytes once escaped as a
// JSON string, so that the reply carrying it stays under the port's 1 MiB cap. With c nil it starts a new export
// in format from sinceMS. A single row larger than maxBytes is an error rather than a loop that never ends. Path
// classes are written as paths says.
func (s *Store) ExportChunk(ctx context.Context, format string, sinceMS int64, c *Cursor, maxBytes int, paths PathClasses) (Chunk, error) {
	if c != nil {
		format, sinceMS = c.Format, c.SinceMS
	}
	if err := checkFormat(format); err != nil {
		return Chunk{}, fmt.Errorf("store: export: %w", err)
	}
	rewrite, err := s.rowsFor(ctx, paths)
	if err != nil {
		return Chunk{}, fmt.Errorf("store: export: %w", err)
	}
	var out Chunk
	err = s.readTx(ctx, func(conn *sql.Conn) error {
		var buf bytes.Buffer
		cur := Cursor{Format: format, SinceMS: sinceMS}
		if c == nil {
			if err := conn.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM decisions").Scan(&cur.Upto); err != nil {
				return err
			}
			header(&buf, format)
		} else {
			cur = *c
		}
		escaped := jsonLen(buf.Bytes())
		rows, err := conn.QueryContext(ctx, rowQuery, cur.SinceMS, cur.After, cur.Upto)
		if err != nil {
			return err
		}
		defer rows.Close()
		var one bytes.Buffer
		more := false
		for rows.Next() {
			r, err := scanRow(rows)
			if err != nil {
				return err
			}
			if err := rewrite(&r); err != nil {
				return err
			}
			one.Reset()
			if err := encode(&one, format, r); err != nil {
				return err
			}
			e := jsonLen(one.Bytes())
			if buf.Len()+one.Len() > maxBytes || escaped+e > maxBytes {
				if out.Rows == 0 {
					return fmt.Errorf("row %d is larger than a chunk (%d bytes)", r.ID, maxBytes)
				}
				more = true
				break
			}
			buf.Write(one.Bytes())
			escaped += e
			out.Rows++
			cur.After = r.ID
		}
		if err := rows.Err(); err != nil {
			return err
		}
		out.Data = buf.String()
		if more {
			out.Next = &cur
		}
		return nil
	})
	if err != nil {
		return Chunk{}, fmt.Errorf("store: export: %w", err)
	}
	return out, nil
}

// jsonLen is the length of b once written as a JSON string's contents by encoding/json.
func jsonLen(b []byte) int {
	data, _ := json.Marshal(string(b))
	return len(data) - 2
}

// ParseSince reads an export's lower time bound: a date (2026-11-01, local midnight), an RFC 3339 time, or unix
// milliseconds. It returns unix milliseconds.
func ParseSince(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("since: empty")
	}
	if strings.Trim(s, "0123456789") == "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > maxSinceMS {
			return 0, fmt.Errorf("since: %q: unix milliseconds out of range", s)
		}
		return n, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return sinceMS(s, t)
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return sinceMS(s, t)
	}
	return 0, fmt.Errorf("since: %q: want YYYY-MM-DD, an RFC 3339 time or unix milliseconds", s)
}

// maxSinceMS is the year 9999: anything later is a typo, and it keeps arithmetic far from overflow.
const maxSinceMS = 253402300799999

func sinceMS(s string, t time.Time) (int64, error) {
	ms := t.UnixMilli()
	if ms < 0 || ms > maxSinceMS {
		return 0, fmt.Errorf("since: %q: before 1970 or after 9999", s)
	}
	return ms, nil
}
