package host

import (
	"context"
	"errors"
	"time"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// storeTimeout bounds a store call, so that a locked database never hangs a reply.
const storeTimeout = store.Timeout

// record is the Server's store: nil with the reason when it could not be opened.
type record struct {
	db  *store.Store
	err error
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

// logRow is the decision log's row for a decision decided at `at`, answering a request with body request; nil
// when the host runs without a store.
func (s *Server) logRow(request []byte, dec decide.Decision, body decide.Body, at time.Time) *store.DecisionRow {
	if s.rec.db == nil {
		return nil
	}
	return &store.DecisionRow{Request: request, Decision: body.Decision, Reply: body,
		Meta: store.DecisionMeta{PathClass: dec.PathClass, Basis: string(dec.Basis), CellRxStart: dec.CellRxStart, At: at}}
}

// logged waits until the decisions replied so far are in the log, for a request that reads them next; what ends
// it early (the store's bound) is logged, and the request goes on with what the log holds.
func (s *Server) logged(req protocol.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.dlog.flush(ctx); err != nil {
		s.log.Warn("the decisions replied are not all logged yet", "id", req.ID, "type", req.Type, "err", err)
	}
}

func (s *Server) report(req protocol.Request) protocol.Reply {
	r, perr := protocol.ParseReport(req.Body)
	if perr != nil {
		s.log.Warn("report refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	db, perr := s.storeDB()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	// The load's outcome is written on its decision's row, and learned from it: the row must be in the log.
	s.logged(req)
	o := store.Observation{Origin: r.Origin, Tab: r.Tab, Nav: r.Nav, Protocol: r.Protocol, TransferBytes: r.TransferBytes,
		PLTms: r.PLTms, Multipath: r.Multipath, Objects: r.Objects, Conns: r.Conns}
	if r.Path != "" {
		o.PathClass = store.PathClass(r.Path)
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
	return protocol.OK(req, protocol.ReportReply{Stored: true, Samples: n})
}
