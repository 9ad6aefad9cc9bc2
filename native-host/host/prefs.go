package host

import (
	"context"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

func (s *Server) prefs(req protocol.Request) protocol.Reply {
	p, perr := protocol.ParsePrefs(req.Body)
	if perr != nil {
		s.log.Warn("prefs refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	db, perr := s.storeDB()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := db.SavePrefs(ctx, p); err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeStoreUnavailable, "%v", err))
	}
	return protocol.OK(req, protocol.PrefsReply{Applied: true, Prefs: p})
}
