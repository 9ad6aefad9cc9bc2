package host

import "github.com/mpsurf/mpsurf/native-host/protocol"

func (s *Server) hello(req protocol.Request) protocol.Reply {
	h, perr := protocol.ParseHello(req.Body)
	if perr != nil {
		s.log.Warn("hello refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	snap, perr := s.snapshot()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	s.log.Info("hello", "client", h.Client, "client_version", h.Version, "revision", snap.Policy.Revision)
	return protocol.OK(req, protocol.HelloReply{
		Host: protocol.HostName, Version: Version, Protocol: protocol.Version, Policy: snap.Policy,
	})
}
