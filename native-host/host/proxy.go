package host

import (
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/relay"
)

// The MPTCP proxy deployment (PROTOCOL.md §4 Proxy): the carrier's relay (carry.Carrier) answers for it.

func (s *Server) proxyStatus(req protocol.Request) protocol.Reply {
	return protocol.OK(req, s.carry.ProxyStatus())
}

func (s *Server) proxyConfig(req protocol.Request) protocol.Reply {
	c, perr := protocol.ParseProxyConfig(req.Body)
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	if c.Clear {
		if err := s.carry.ClearProxy(); err != nil {
			return protocol.Fail(req, protocol.Errorf(protocol.CodeInternal, "%v", err))
		}
		return protocol.OK(req, s.carry.ProxyStatus())
	}
	up := relay.Upstream{Addr: c.Server, User: c.User, Password: c.Password, Pin: c.Pin}
	if err := up.Check(); err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeBadRequest, "%v", err))
	}
	if err := s.carry.SetProxy(up); err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeInternal, "proxy settings not saved: %v", err))
	}
	return protocol.OK(req, s.carry.ProxyStatus())
}

func (s *Server) proxyTest(req protocol.Request) protocol.Reply {
	target, given, perr := protocol.ParseProxyTest(req.Body)
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	if given {
		host, ok := relay.Target(target)
		if !ok {
			return protocol.Fail(req, protocol.Errorf(protocol.CodeBadRequest, "target: must be host:443"))
		}
		target = host + ":443"
	}
	return protocol.OK(req, s.carry.TestProxy(target))
}
