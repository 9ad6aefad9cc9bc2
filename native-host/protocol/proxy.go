package protocol

import (
	"encoding/json"
	"strings"
)

// ProxyConfig is a parsed proxy_config body: the user's MPTCP proxy, or Clear to remove the settings
// (PROTOCOL.md §4 Proxy). The relay checks the values themselves.
type ProxyConfig struct {
	Clear                       bool
	Server, User, Password, Pin string
}

// ParseProxyConfig checks a proxy_config body: {"clear": true} alone, or server, user and password with an
// optional pin, each a string (trimmed), and nothing else.
func ParseProxyConfig(body json.RawMessage) (ProxyConfig, *Error) {
	obj, perr := AsObject(body, "body")
	if perr != nil {
		return ProxyConfig{}, perr
	}
	if raw, ok := obj["clear"]; ok {
		if string(raw) != "true" || len(obj) != 1 {
			return ProxyConfig{}, Errorf(CodeBadRequest, "clear: must be true, alone")
		}
		return ProxyConfig{Clear: true}, nil
	}
	var c ProxyConfig
	for _, f := range []struct {
		name string
		dst  *string
		opt  bool
	}{{"server", &c.Server, false}, {"user", &c.User, false}, {"password", &c.Password, false}, {"pin", &c.Pin, true}} {
		if _, ok := obj[f.name]; !ok && f.opt {
			continue
		}
		v, perr := obj.String(f.name, -1)
		if perr != nil {
			return ProxyConfig{}, perr
		}
		*f.dst = strings.TrimSpace(v)
	}
	if len(obj) > 4 {
		return ProxyConfig{}, Errorf(CodeBadRequest, "body: only server, user, password, pin")
	}
	return c, nil
}

// ParseProxyTest reads a proxy_test body, which may be absent: the target to reach through the proxy as the
// extension gave it, and whether it gave one (the relay checks it is host:443).
func ParseProxyTest(body json.RawMessage) (target string, given bool, perr *Error) {
	if body == nil {
		return "", false, nil
	}
	obj, perr := AsObject(body, "body")
	if perr != nil {
		return "", false, perr
	}
	if _, ok := obj["target"]; !ok {
		return "", false, nil
	}
	target, perr = obj.String("target", -1)
	return target, perr == nil, perr
}
