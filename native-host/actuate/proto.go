package actuate

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
)

// Verbs a client may send, one JSON object per line. Anything else is refused with CodeUnknownVerb.
const (
	VerbHello      = "hello"                // start a session: {} -> {session, backend}
	VerbLeaseRenew = "lease-renew"          // {session, lease_ms}
	VerbOrigin     = "set-origin-policy"    // {session, lease_ms, addrs, multipath, theta1, theta2, group, prefer_cellular}
	VerbConn       = "set-conn-policy"      // {session, lease_ms, local, remote, multipath, theta1, theta2, group, prefer_cellular}: one connection of the caller's
	VerbEndpoint   = "set-endpoint-subflow" // {session, lease_ms, enabled}
	VerbEnabled    = "set-mptcp-enabled"    // {session, lease_ms, value: 0|1, mptcpize}
	VerbRelease    = "release"              // {session}: undo everything now
	VerbStatus     = "status"               // {} -> backend state
)

// Error codes in responses.
const (
	CodeBadRequest  = "bad_request"
	CodeUnknownVerb = "unknown_verb"
	CodeBadSession  = "bad_session"
	CodeBadArgument = "bad_argument"
	CodeRateLimited = "rate_limited"
	CodeUnsupported = "unsupported" // the backend does not do this
	CodeNotYet      = "not_implemented"
	CodeRefused     = "refused" // a safety rule forbids it (mptcpize with enabled=0)
	CodeKernel      = "kernel_error"
	CodeBusy        = "busy" // hello: another client holds a live session
)

// Lease bounds. The floor keeps renewals from flooding the helper; the ceiling bounds how long a dead
// client's changes can outlive it.
const (
	MinLeaseMS = 200
	MaxLeaseMS = 60_000
	MaxAddrs   = 64 // addresses per origin: a page's hosts resolve to a handful each
	MaxLine    = 16 << 10
	// MaxConnPolicies bounds the per-connection policies held at once: the host's relay keeps one per tunnel to
	// the proxy, and Chromium opens at most 32 connections to one HTTP proxy.
	MaxConnPolicies = 256
)

// Request is one line from the client.
type Request struct {
	ID        uint64   `json:"id"`
	Verb      string   `json:"verb"`
	Session   string   `json:"session,omitempty"`
	LeaseMS   int64    `json:"lease_ms,omitempty"`
	Addrs     []string `json:"addrs,omitempty"`
	Local     string   `json:"local,omitempty"`  // set-conn-policy: the connection's local address:port
	Remote    string   `json:"remote,omitempty"` // and its remote one
	Multipath *bool    `json:"multipath,omitempty"`
	Theta1    int64    `json:"theta1,omitempty"`
	Theta2    *int64   `json:"theta2,omitempty"`
	Group     uint32   `json:"group,omitempty"` // set-origin-policy, set-conn-policy: the θ1 group (OriginPolicy.Group)
	// PreferCellular: set-origin-policy, set-conn-policy, with multipath only: once the cellular subflow is up,
	// the WiFi subflow becomes backup (OriginPolicy.PreferCellular).
	PreferCellular bool  `json:"prefer_cellular,omitempty"`
	Enabled        *bool `json:"enabled,omitempty"`
	Value          *int  `json:"value,omitempty"`
	Mptcpize       bool  `json:"mptcpize,omitempty"`
}

// Response is one line back.
type Response struct {
	ID      uint64 `json:"id"`
	OK      bool   `json:"ok"`
	Code    string `json:"code,omitempty"`
	Error   string `json:"error,omitempty"`
	Session string `json:"session,omitempty"`
	Backend string `json:"backend,omitempty"`
	Result  any    `json:"result,omitempty"`
}

// Error is a refusal with a code the client can act on.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// OriginPolicy is a validated set-origin-policy.
type OriginPolicy struct {
	Addrs     []netip.Addr
	Multipath bool
	Theta1    int64
	Theta2    *int64
	// Group names the θ1 group: the owner's connections to every address set with the same non-zero Group count
	// their received bytes together towards θ1 (a page's origin and its third parties); 0 counts each address
	// apart. Groups are per uid: one user's group never counts another's bytes.
	Group uint32
	// PreferCellular: once a connection's cellular subflow is established, its initial (WiFi) subflow is marked
	// backup, so that the server sends on cellular and keeps WiFi as the fallback. Beside a slow WiFi and a fast
	// LTE, MPTCP's lowest-RTT-first scheduler keeps filling the slow WiFi queue and head-of-line blocking makes
	// multipath slower than cellular alone (testbed, poor-wifi-fast-lte, 2 Mbit/s WiFi and 33.9 Mbit/s LTE:
	// sp-cell 1.1-1.7 s against mp-always 2.2-2.9 s on shop-product-1 and forum-album-1). Only with Multipath.
	PreferCellular bool
	// UID is the session owner's: the policy applies to that uid's connections only.
	UID uint32
}

// ConnPolicy is a validated set-conn-policy: one MPTCP connection, named by the two ends of its initial subflow,
// gets its own decision. All of the relay's connections go to the one proxy address, so the per-address
// policy of set-origin-policy cannot tell their origins apart.
type ConnPolicy struct {
	Local, Remote netip.AddrPort
	Multipath     bool
	Theta1        int64
	Theta2        *int64
	Group         uint32 // as OriginPolicy.Group: the relay's tunnels of one page count together
	// PreferCellular as OriginPolicy.PreferCellular.
	PreferCellular bool
	// UID is the session owner's, whose connection it was when it was set: the policy applies to a connection of
	// that uid only, however its addresses and ports come round again.
	UID uint32
}

// verbSpec is what one verb takes. A new verb is one more case in verbSpecOf, with its own check, and one
// more case in Server.do.
type verbSpec struct {
	session bool                // needs the session token
	lease   bool                // takes lease_ms, which renews the lease
	change  bool                // changes kernel state: audited with its arguments
	check   func(Request) error // the verb's own fields; nil: none
}

func verbSpecOf(verb string) (verbSpec, bool) {
	switch verb {
	case VerbHello, VerbStatus:
		return verbSpec{}, true
	case VerbRelease:
		return verbSpec{session: true, change: true}, true
	case VerbLeaseRenew:
		return verbSpec{session: true, lease: true}, true
	case VerbOrigin:
		return verbSpec{session: true, lease: true, change: true, check: func(r Request) error { _, err := r.originPolicy(); return err }}, true
	case VerbConn:
		return verbSpec{session: true, lease: true, change: true, check: func(r Request) error { _, err := r.connPolicy(); return err }}, true
	case VerbEndpoint:
		return verbSpec{session: true, lease: true, change: true, check: func(r Request) error {
			if r.Enabled == nil {
				return errorf(CodeBadArgument, "enabled (true|false) is required")
			}
			return nil
		}}, true
	case VerbEnabled:
		return verbSpec{session: true, lease: true, change: true, check: func(r Request) error {
			if r.Value == nil || (*r.Value != 0 && *r.Value != 1) {
				return errorf(CodeBadArgument, "value must be 0 or 1")
			}
			return nil
		}}, true
	}
	return verbSpec{}, false
}

// parseRequest decodes and validates one line. Unknown fields are refused so that a typo never silently
// means "default".
func parseRequest(line []byte) (Request, error) {
	var r Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, errorf(CodeBadRequest, "not a request object: %v", err)
	}
	if dec.More() {
		return r, errorf(CodeBadRequest, "trailing data after the request object")
	}
	spec, ok := verbSpecOf(r.Verb)
	if !ok {
		return r, errorf(CodeUnknownVerb, "unknown verb %.40q", r.Verb)
	}
	if spec.session {
		if err := checkSession(r.Session); err != nil {
			return r, err
		}
	}
	if spec.lease && (r.LeaseMS < MinLeaseMS || r.LeaseMS > MaxLeaseMS) {
		return r, errorf(CodeBadArgument, "lease_ms %d outside [%d, %d]", r.LeaseMS, MinLeaseMS, MaxLeaseMS)
	}
	if spec.check != nil {
		if err := spec.check(r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// WebAddr reports whether a can be a web server's address that a cellular subflow could reach: a unicast address
// routed beyond the link. Unspecified, loopback, multicast (any scope), link-local, the IPv4 limited broadcast and
// the rest of 240.0.0.0/4 (reserved), and 0.0.0.0/8 ("this network") are not.
func WebAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" || a.IsUnspecified() || a.IsLoopback() || a.IsMulticast() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() {
		return false
	}
	if a.Is4() {
		b := a.As4()
		return b[0] != 0 && b[0] < 240
	}
	return true
}

// sessionLen is the length of a session token in hex digits (128 random bits).
const sessionLen = 32

func checkSession(s string) error {
	if len(s) != sessionLen {
		return errorf(CodeBadSession, "session must be %d hex digits", sessionLen)
	}
	if _, err := hex.DecodeString(s); err != nil {
		return errorf(CodeBadSession, "session is not hex")
	}
	return nil
}

func (r Request) connPolicy() (ConnPolicy, error) {
	p := ConnPolicy{Theta1: r.Theta1, Theta2: r.Theta2, Group: r.Group, PreferCellular: r.PreferCellular}
	if r.Multipath == nil {
		return p, errorf(CodeBadArgument, "multipath (true|false) is required")
	}
	if len(r.Addrs) > 0 {
		return p, errorf(CodeBadArgument, "set-conn-policy takes local and remote, not addrs")
	}
	p.Multipath = *r.Multipath
	if r.PreferCellular && !p.Multipath {
		return p, errorf(CodeBadArgument, "prefer_cellular needs multipath: a single-path connection has no cellular subflow to prefer")
	}
	for _, e := range []struct {
		name, s string
		ap      *netip.AddrPort
	}{{"local", r.Local, &p.Local}, {"remote", r.Remote, &p.Remote}} {
		ap, err := netip.ParseAddrPort(e.s)
		if err != nil || ap.Addr().Zone() != "" {
			return p, errorf(CodeBadArgument, "%s %.60q is not an address:port", e.name, e.s)
		}
		a := ap.Addr().Unmap()
		if !WebAddr(a) && !a.IsLoopback() || ap.Port() == 0 {
			return p, errorf(CodeBadArgument, "%s %s cannot be a connection's end", e.name, ap)
		}
		*e.ap = netip.AddrPortFrom(a, ap.Port())
	}
	if p.Local.Addr().Is4() != p.Remote.Addr().Is4() {
		return p, errorf(CodeBadArgument, "local %s and remote %s are of different families", p.Local, p.Remote)
	}
	if r.Theta1 < 0 {
		return p, errorf(CodeBadArgument, "theta1 %d is negative", r.Theta1)
	}
	if r.Theta2 != nil && *r.Theta2 < 0 {
		return p, errorf(CodeBadArgument, "theta2 %d is negative", *r.Theta2)
	}
	return p, nil
}

func (r Request) originPolicy() (OriginPolicy, error) {
	p := OriginPolicy{Theta1: r.Theta1, Theta2: r.Theta2, Group: r.Group, PreferCellular: r.PreferCellular}
	if r.Multipath == nil {
		return p, errorf(CodeBadArgument, "multipath (true|false) is required")
	}
	p.Multipath = *r.Multipath
	if r.PreferCellular && !p.Multipath {
		return p, errorf(CodeBadArgument, "prefer_cellular needs multipath: a single-path connection has no cellular subflow to prefer")
	}
	if len(r.Addrs) == 0 || len(r.Addrs) > MaxAddrs {
		return p, errorf(CodeBadArgument, "addrs must list 1 to %d addresses", MaxAddrs)
	}
	for _, s := range r.Addrs {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, errorf(CodeBadArgument, "bad address %.60q", s)
		}
		a = a.Unmap()
		if !WebAddr(a) {
			return p, errorf(CodeBadArgument, "address %s cannot be a web origin's (loopback, link-local, multicast, broadcast, reserved or unspecified)", a)
		}
		p.Addrs = append(p.Addrs, a)
	}
	if r.Theta1 < 0 {
		return p, errorf(CodeBadArgument, "theta1 %d is negative", r.Theta1)
	}
	if r.Theta2 != nil && *r.Theta2 < 0 {
		return p, errorf(CodeBadArgument, "theta2 %d is negative", *r.Theta2)
	}
	return p, nil
}
