package protocol

import (
	"encoding/json"
	"unicode/utf8"
)

// Report limits of PROTOCOL.md §4.
const (
	MaxReportProtocol = 16
	MaxTransferBytes  = 1 << 40
	MaxPLTms          = 600000
	MaxReportObjects  = 100000
)

// Report is a parsed report body: what one page load measured (PROTOCOL.md §4 Report).
type Report struct {
	Origin        string // normalised
	Tab           int64
	Nav           string
	Path          string // the page's URL path; "" when the extension did not say
	Protocol      string
	TransferBytes int64
	PLTms         float64
	Multipath     *bool
	Objects       int64
	Conns         int64
}

// ReportReply is the body of a successful report reply.
type ReportReply struct {
	Stored  bool  `json:"stored"`
	Samples int64 `json:"samples"`
}

// ParseReport checks a report body as PROTOCOL.md §4 Report says: every field's presence and type first
// (bad_request), then the origin (bad_origin), as decide does.
func ParseReport(body json.RawMessage) (Report, *Error) {
	obj, perr := AsObject(body, "body")
	if perr != nil {
		return Report{}, perr
	}
	var o Report
	origin, perr := obj.String("origin", -1)
	if perr != nil {
		return o, perr
	}
	if o.Tab, perr = obj.Int("tab", -1, MaxID); perr != nil {
		return o, perr
	}
	if o.Nav, perr = obj.String("nav", -1); perr != nil {
		return o, perr
	}
	if n := utf8.RuneCountInString(o.Nav); n < 1 || n > MaxNavLen {
		return o, Errorf(CodeBadRequest, "nav: must be 1 to %d characters", MaxNavLen)
	}
	if o.Protocol, perr = obj.String("protocol", MaxReportProtocol); perr != nil {
		return o, Errorf(CodeBadRequest, "protocol: longer than %d bytes", MaxReportProtocol)
	}
	if o.TransferBytes, perr = obj.Int("transfer_bytes", 0, MaxTransferBytes); perr != nil {
		return o, perr
	}
	if o.PLTms, perr = obj.Number("plt_ms", 0, MaxPLTms); perr != nil {
		return o, perr
	}
	if o.Multipath, perr = obj.BoolOrNull("multipath"); perr != nil {
		return o, perr
	}
	if o.Path, perr = PathField(obj); perr != nil {
		return o, perr
	}
	if obj.Has("objects") {
		if o.Objects, perr = obj.Int("objects", 0, MaxReportObjects); perr != nil {
			return o, perr
		}
	}
	if obj.Has("conns") {
		if o.Conns, perr = obj.Int("conns", 0, MaxReportObjects); perr != nil {
			return o, perr
		}
	}
	norm, err := NormalizeOrigin(origin)
	if err != nil {
		return o, Errorf(CodeBadOrigin, "origin: %v", err)
	}
	o.Origin = norm
	return o, nil
}
