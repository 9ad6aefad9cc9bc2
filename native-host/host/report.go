package host

import (
	"context"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// Request types this file and its siblings answer (PROTOCOL.md §4).
const (
	TypeReport    = "report"
	TypePrefs     = "prefs"
	TypeLogExport = "log_export"
	TypeLogDelete = "log_delete"
)

// Report limits of PROTOCOL.md §4.
const (
	maxReportProtocol = 16
	maxTransferBytes  = 1 << 40
	maxPLTms          = 600000
	maxReportObjects  = 100000
)

// storeTimeout bounds a store call, so that a locked database never hangs a reply.
const storeTimeout = 10 * time.Second

// record is the Server's store: nil with the reason when it could not be opened.
type record struct {
	db  *store.Store
	err error
}

// SetStore gives the Server its store, or the reason there is none: then store requests get store_unavailable and
// decisions go on unlogged.
func (s *Server) SetStore(db *store.Store, err error) {
	s.rec = record{db: db, err: err}
	if db != nil {
		s.proxy.warm(db) // proxy.go: recent decisions route their origins before the browser asks again
	}
}

// storeDB returns the store or the store_unavailable error to reply with.
func (s *Server) storeDB() (*store.Store, *protocol.Error) {
	if s.rec.db == nil {
		if s.rec.err != nil {
			return nil, protocol.Errorf(protocol.CodeStoreUnavailable, "%v", s.rec.err)
		}
		return nil, protocol.Errorf(protocol.CodeStoreUnavailable, "the host runs without a store")
	}
	return s.rec.db, nil
}

// logged writes the decision to the store and only then returns the reply, so that a decision the extension
// received is on disk. A store that fails never stops a decision: navigation goes on, the failure is logged.
func (s *Server) logged(req protocol.Request, d protocol.Decision, body any, meta store.DecisionMeta) protocol.Reply {
	if s.rec.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		if err := s.rec.db.LogDecision(ctx, req.Body, d, body, meta); err != nil {
			s.log.Error("decision not logged", "id", req.ID, "origin", d.Origin, "err", err)
		}
	}
	return protocol.OK(req, body)
}

// ReportReply is the body of a successful report reply.
type ReportReply struct {
	Stored  bool  `json:"stored"`
	Samples int64 `json:"samples"`
}

func (s *Server) report(req protocol.Request) protocol.Reply {
	o, perr := parseReport(req.Body)
	if perr != nil {
		s.log.Warn("report refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	db, perr := s.storeDB()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	n, err := db.Report(ctx, o)
	if err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeStoreUnavailable, "%v", err))
	}
	// What the load measured beside what its decision predicted: the model's error, kept on the decision row and
	// learned from by the origin's next decisions.
	if err := s.dec.Learn(ctx, o); err != nil && !errors.Is(err, store.ErrNoDecision) {
		s.log.Warn("load outcome not learned", "origin", o.Origin, "err", err)
	}
	return protocol.OK(req, ReportReply{Stored: true, Samples: n})
}

// parseReport checks a report body as PROTOCOL.md §4 Report says: every field's presence and type first
// (bad_request), then the origin (bad_origin), as decide does.
func parseReport(body json.RawMessage) (store.Observation, *protocol.Error) {
	obj, perr := protocol.AsObject(body, "body")
	if perr != nil {
		return store.Observation{}, perr
	}
	var o store.Observation
	origin, perr := obj.String("origin", -1)
	if perr != nil {
		return o, perr
	}
	if o.Tab, perr = obj.Int("tab", -1, protocol.MaxID); perr != nil {
		return o, perr
	}
	if o.Nav, perr = obj.String("nav", -1); perr != nil {
		return o, perr
	}
	if n := utf8.RuneCountInString(o.Nav); n < 1 || n > protocol.MaxNavLen {
		return o, protocol.Errorf(protocol.CodeBadRequest, "nav: must be 1 to %d characters", protocol.MaxNavLen)
	}
	if o.Protocol, perr = obj.String("protocol", maxReportProtocol); perr != nil {
		return o, protocol.Errorf(protocol.CodeBadRequest, "protocol: longer than %d bytes", maxReportProtocol)
	}
	if o.TransferBytes, perr = obj.Int("transfer_bytes", 0, maxTransferBytes); perr != nil {
		return o, perr
	}
	if o.PLTms, perr = obj.Number("plt_ms", 0, maxPLTms); perr != nil {
		return o, perr
	}
	if o.Multipath, perr = obj.BoolOrNull("multipath"); perr != nil {
		return o, perr
	}
	path, perr := protocol.PathField(obj)
	if perr != nil {
		return o, perr
	}
	if path != "" {
		o.PathClass = store.PathClass(path)
	}
	if obj.Has("objects") {
		if o.Objects, perr = obj.Int("objects", 0, maxReportObjects); perr != nil {
			return o, perr
		}
	}
	if obj.Has("conns") {
		if o.Conns, perr = obj.Int("conns", 0, maxReportObjects); perr != nil {
			return o, perr
		}
	}
	norm, err := protocol.NormalizeOrigin(origin)
	if err != nil {
		return o, protocol.Errorf(protocol.CodeBadOrigin, "origin: %v", err)
	}
	o.Origin = norm
	return o, nil
}
