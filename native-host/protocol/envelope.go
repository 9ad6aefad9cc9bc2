package protocol

import (
	"encoding/json"
	"fmt"
)

// Request types (PROTOCOL.md §4).
const (
	TypeHello           = "hello"
	TypeDecide          = "decide"
	TypeStatus          = "status"
	TypeReport          = "report"
	TypePrefs           = "prefs"
	TypeLogExport       = "log_export"
	TypeLogDelete       = "log_delete"
	TypePeers           = "peers"
	TypeAnnounce        = "announce"
	TypeProxyStatus     = "proxy_status"
	TypeProxyConfig     = "proxy_config"
	TypeProxyTest       = "proxy_test"
	TypePause           = "pause"
	TypeDownloadOffer   = "download_offer"
	TypeDownloadControl = "download_control"
	TypeDownloadList    = "download_list"
)

// RequestTypes are every request type, in the order an unknown_type error lists them.
var RequestTypes = []string{TypeHello, TypeDecide, TypeStatus, TypeReport, TypePrefs, TypeLogExport, TypeLogDelete,
	TypePeers, TypeAnnounce, TypeProxyStatus, TypeProxyConfig, TypeProxyTest, TypePause, TypeDownloadOffer,
	TypeDownloadControl, TypeDownloadList}

// Push types (PROTOCOL.md §5).
const (
	TypePolicy       = "policy"
	TypeProxyPush    = "proxy"
	TypeDownloadPush = "download"
)

// PushTypes are every push type.
var PushTypes = []string{TypePolicy, TypeProxyPush, TypeDownloadPush}

// TypeError is the type of a reply to a request whose id and type could not be read.
const TypeError = "error"

// HostName is what the host calls itself in hello and status replies.
const HostName = "mpsurf-host"

// Error is the "error" member of a failed reply. It is also a Go error.
type Error struct {
	Code    Code   `json:"code"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

// Errorf returns an *Error with the code's name filled in.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Name: code.Name(), Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Name + ": " + e.Message }

// Request is a parsed request envelope. Body is nil when the request has none.
type Request struct {
	ID   int64
	Type string
	Body json.RawMessage
}

// Reply answers one request. Exactly one of Body and Error is set.
type Reply struct {
	V     int    `json:"v"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
	OK    bool   `json:"ok"`
	Body  any    `json:"body,omitempty"`
	Error *Error `json:"error,omitempty"`
}

// OK returns a successful reply to req.
func OK(req Request, body any) Reply {
	return Reply{V: Version, ID: req.ID, Type: req.Type, OK: true, Body: body}
}

// Fail returns a failed reply to req. A zero Request (id and type unknown) gives id 0 and type "error".
func Fail(req Request, err *Error) Reply {
	if req.ID == 0 || req.Type == "" {
		req.ID, req.Type = 0, TypeError
	}
	return Reply{V: Version, ID: req.ID, Type: req.Type, OK: false, Error: err}
}

// Push is an unsolicited host -> extension message.
type Push struct {
	V    int    `json:"v"`
	Type string `json:"type"`
	Push bool   `json:"push"`
	Body any    `json:"body"`
}

// PolicyPush announces a new network-wide policy.
func PolicyPush(p Policy) Push {
	return Push{V: Version, Type: TypePolicy, Push: true, Body: p}
}
