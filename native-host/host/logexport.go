package host

import (
	"context"
	"encoding/json"

	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

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

type logExport struct {
	format  string
	sinceMS int64
	cursor  *store.Cursor
}

func parseLogExport(body json.RawMessage) (logExport, *protocol.Error) {
	obj, perr := protocol.AsObject(body, "body")
	if perr != nil {
		return logExport{}, perr
	}
	var e logExport
	if e.format, perr = obj.OneOf("format", store.FormatCSV, store.FormatJSONL); perr != nil {
		return e, perr
	}
	if obj.Has("since_ms") {
		if e.sinceMS, perr = obj.Int("since_ms", 0, protocol.MaxSafeInt); perr != nil {
			return e, perr
		}
	}
	if obj.Has("cursor") && !obj.Null("cursor") {
		s, perr := obj.String("cursor", -1)
		if perr != nil {
			return e, perr
		}
		c, err := store.DecodeCursor(s)
		if err != nil {
			return e, protocol.Errorf(protocol.CodeBadRequest, "%v", err)
		}
		if c.Format != e.format {
			return e, protocol.Errorf(protocol.CodeBadRequest, "cursor: belongs to a %s export, not %s", c.Format, e.format)
		}
		e.cursor = &c
	}
	return e, nil
}

func (s *Server) logExport(req protocol.Request) protocol.Reply {
	e, perr := parseLogExport(req.Body)
	if perr != nil {
		s.log.Warn("log_export refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	db, perr := s.storeDB()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	// The extension's export is a file to share like any other: its path classes are pseudonymous.
	ch, err := db.ExportChunk(ctx, e.format, e.sinceMS, e.cursor, store.MaxChunk, store.PathsPseudonymous)
	if err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeStoreUnavailable, "%v", err))
	}
	out := LogExportReply{Format: e.format, Data: ch.Data, Rows: ch.Rows}
	if ch.Next != nil {
		c := ch.Next.Encode()
		out.Cursor = &c
	}
	return protocol.OK(req, out)
}

func (s *Server) logDelete(req protocol.Request) protocol.Reply {
	db, perr := s.storeDB()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	if err := db.DeleteAll(); err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeStoreUnavailable, "%v", err))
	}
	s.log.Info("decision log deleted at the user's request")
	return protocol.OK(req, LogDeleteReply{Deleted: true})
}
