package protocol

import "encoding/json"

// MaxAnnounced bounds the announced byte count: 2^40, as a report's transfer_bytes.
const MaxAnnounced = 1 << 40

// Announce is a parsed announce body: a page's responses have announced (Content-Length) at least Bytes
// (PROTOCOL.md §4 Announce).
type Announce struct {
	Origin string
	Tab    int64
	Nav    string
	Bytes  int64
}

// AnnounceReply is the body of a successful announce reply: whether the origin's connections (or the page's
// tunnels through the user's MPTCP proxy) were told to take their cellular subflows now (joined), why not
// otherwise, and what the helper said of the origin's addresses.
type AnnounceReply struct {
	Joined    bool   `json:"joined"`
	Why       string `json:"why,omitempty"`
	Actuation string `json:"actuation"`
	Tunnels   int    `json:"tunnels,omitempty"` // tunnels through the user's MPTCP proxy told to join now
}

// ParseAnnounce checks an announce body: origin, tab and nav as decide's (ParseDecide), and bytes.
func ParseAnnounce(body json.RawMessage) (Announce, *Error) {
	d, perr := ParseDecide(body)
	if perr != nil {
		return Announce{}, perr
	}
	obj, _ := AsObject(body, "body") // ParseDecide has checked it is one
	n, perr := obj.Int("bytes", 0, MaxAnnounced)
	if perr != nil {
		return Announce{}, perr
	}
	return Announce{Origin: d.Origin, Tab: d.Tab, Nav: d.Nav, Bytes: n}, nil
}
