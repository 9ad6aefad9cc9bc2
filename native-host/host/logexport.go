package host

import (
	"context"

	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// logExportOf checks a log_export body (protocol.ParseLogExport) and decodes its cursor, which must be one this
// host made for an export of the same format.
func logExportOf(req protocol.Request) (protocol.LogExport, *store.Cursor, *protocol.Error) {
	e, perr := protocol.ParseLogExport(req.Body)
	if perr != nil || e.Cursor == nil {
		return e, nil, perr
	}
	c, err := store.DecodeCursor(*e.Cursor)
	if err != nil {
		return e, nil, protocol.Errorf(protocol.CodeBadRequest, "%v", err)
	}
	if c.Format != e.Format {
		return e, nil, protocol.Errorf(protocol.CodeBadRequest, "cursor: belongs to a %s export, not %s", c.Format, e.Format)
	}
	return e, &c, nil
}

func (s *Server) logExport(req protocol.Request) protocol.Reply {
	e, cursor, perr := logExportOf(req)
	if perr != nil {
		s.log.Warn("log_export refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	db, perr := s.storeDB()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	s.logged(req) // the decisions already replied are in the export
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	// The extension's export is a file to share like any other: its path classes are pseudonymous.
	ch, err := db.ExportChunk(ctx, e.Format, e.SinceMS, cursor, store.MaxChunk, store.PathsPseudonymous)
	if err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeStoreUnavailable, "%v", err))
	}
	out := protocol.LogExportReply{Format: e.Format, Data: ch.Data, Rows: ch.Rows}
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
	// A decision replied before the request is deleted with the rest: a row written after the deletion would
	// outlive it.
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.dlog.flush(ctx); err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeStoreUnavailable,
			"decisions still being written to the log (%v); nothing deleted, try again", err))
	}
	if err := db.DeleteAll(); err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeStoreUnavailable, "%v", err))
	}
	s.log.Info("decision log deleted at the user's request")
	return protocol.OK(req, protocol.LogDeleteReply{Deleted: true})
}
