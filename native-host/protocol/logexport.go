package protocol

import "encoding/json"

// Formats of a log export (PROTOCOL.md §4 Log export).
const (
	FormatCSV   = "csv"
	FormatJSONL = "jsonl"
)

// LogExport is a parsed log_export body. Cursor is the previous chunk's, as the host made it (nil: the first
// chunk); the store decodes it.
type LogExport struct {
	Format  string
	SinceMS int64
	Cursor  *string
}

// LogExportReply is the body of a successful log_export reply.
type LogExportReply struct {
	Format string  `json:"format"`
	Data   string  `json:"data"`
	Rows   int64   `json:"rows"`
	Cursor *string `json:"cursor"`
}

// LogDeleteReply is the body of a successful log_delete reply.
type LogDeleteReply struct {
	Deleted bool `json:"deleted"`
}

// ParseLogExport checks a log_export body: format, and since_ms and cursor when given.
func ParseLogExport(body json.RawMessage) (LogExport, *Error) {
	obj, perr := AsObject(body, "body")
	if perr != nil {
		return LogExport{}, perr
	}
	var e LogExport
	if e.Format, perr = obj.OneOf("format", FormatCSV, FormatJSONL); perr != nil {
		return e, perr
	}
	if obj.Has("since_ms") {
		if e.SinceMS, perr = obj.Int("since_ms", 0, MaxSafeInt); perr != nil {
			return e, perr
		}
	}
	if obj.Has("cursor") && !obj.Null("cursor") {
		s, perr := obj.String("cursor", -1)
		if perr != nil {
			return e, perr
		}
		e.Cursor = &s
	}
	return e, nil
}
