package protocol

import (
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
)

// MaxPeers bounds one peers request: the privileged helper takes at most as many addresses per policy
// (actuate.MaxAddrs; native-host/carry checks that the two agree).
const MaxPeers = 64

// Peer is one host a page's requests reached and the address the browser used for it (PROTOCOL.md §4 Peers).
type Peer struct {
	Host string
	Addr netip.Addr
}

// PeersReply is the body of a successful peers reply: how many distinct addresses were taken, which were not
// and why, and what the helper said ("ok", "not_configured", "skipped: ...", "queued: ...", "refused: ...",
// "unavailable: ...").
type PeersReply struct {
	Addrs     int           `json:"addrs"`
	Refused   []PeerRefusal `json:"refused,omitempty"`
	Actuation string        `json:"actuation"`
}

// PeerRefusal is a reported peer that was not put under the page's decision, and why.
type PeerRefusal struct {
	Host string `json:"host"`
	IP   string `json:"ip"`
	Why  string `json:"why"`
}

// ParsePeers checks a peers body: origin (as in decide), tab, and 1 to MaxPeers {host, ip}. An address the
// browser gives in brackets (IPv6) is taken without them.
func ParsePeers(body json.RawMessage) (string, []Peer, *Error) {
	obj, perr := AsObject(body, "body")
	if perr != nil {
		return "", nil, perr
	}
	origin, perr := obj.String("origin", -1)
	if perr != nil {
		return "", nil, perr
	}
	if _, perr = obj.Int("tab", -1, MaxID); perr != nil {
		return "", nil, perr
	}
	items, perr := obj.Array("peers", MaxSafeInt)
	if perr != nil {
		return "", nil, perr
	}
	if len(items) < 1 || len(items) > MaxPeers {
		return "", nil, Errorf(CodeBadRequest, "peers: must list 1 to %d", MaxPeers)
	}
	out := make([]Peer, 0, len(items))
	for i, it := range items {
		name := "peers[" + strconv.Itoa(i) + "]"
		o, perr := AsObject(it, name)
		if perr != nil {
			return "", nil, perr
		}
		h, perr := o.String("host", -1)
		if perr != nil {
			return "", nil, Errorf(CodeBadRequest, "%s.%s", name, perr.Message)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if lit, err := netip.ParseAddr(host); err == nil {
			host = lit.String() // an IP-literal URL's host
		} else if norm, msg := NormalizeHost(host); msg != "" {
			return "", nil, Errorf(CodeBadRequest, "%s.host: %s", name, msg)
		} else {
			host = norm
		}
		ip, perr := o.String("ip", -1)
		if perr != nil {
			return "", nil, Errorf(CodeBadRequest, "%s.%s", name, perr.Message)
		}
		a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(ip, "["), "]"))
		if err != nil {
			return "", nil, Errorf(CodeBadRequest, "%s.ip: not an IP address", name)
		}
		out = append(out, Peer{Host: host, Addr: a.Unmap()})
	}
	norm, err := NormalizeOrigin(origin)
	if err != nil {
		return "", nil, Errorf(CodeBadOrigin, "origin: %v", err)
	}
	return norm, out, nil
}
