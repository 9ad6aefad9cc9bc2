package host

import (
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// StatusExtra is what the host measures and remembers beyond the protocol's required status fields (PROTOCOL.md
// §4: paths, rrc, prefs, store); each is omitted when unknown.
type StatusExtra struct {
	Paths any             `json:"paths,omitempty"`
	RRC   any             `json:"rrc,omitempty"`
	Prefs json.RawMessage `json:"prefs,omitempty"`
	Store *StoreStatus    `json:"store,omitempty"`
	Usage *UsageStatus    `json:"usage,omitempty"`
	// Actuator and BrowserMPTCP are filled by the host itself for every status reply.
	Actuator     *ActuatorHealth `json:"actuator,omitempty"`
	BrowserMPTCP *BrowserMPTCP   `json:"browser_mptcp,omitempty"`
}

// StoreStatus is the decision log's place and size.
type StoreStatus struct {
	Path         string `json:"path"`
	Decisions    int64  `json:"decisions"`
	Observations int64  `json:"observations"`
}

// UsageStatus is the cellular data measured on the cellular interface since the billing cycle began.
type UsageStatus struct {
	Interface  string `json:"interface"`
	SinceMS    int64  `json:"since_ms"` // unix ms of the cycle's start
	UsedBytes  int64  `json:"used_bytes"`
	QuotaBytes *int64 `json:"quota_bytes"`
}

// StatusBody is the status reply: the required fields and the extras.
type StatusBody struct {
	protocol.StatusReply
	StatusExtra
}

var statusExtra atomic.Pointer[func() StatusExtra]

// SetStatusExtra installs f as the source of the status extras; nil removes it.
func SetStatusExtra(f func() StatusExtra) {
	if f == nil {
		statusExtra.Store(nil)
		return
	}
	statusExtra.Store(&f)
}

func (s *Server) status(req protocol.Request) protocol.Reply {
	snap, perr := s.snapshot()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	body := StatusBody{StatusReply: protocol.StatusReply{
		Host:      protocol.HostName,
		Version:   Version,
		Protocol:  protocol.Version,
		PID:       s.pid,
		UptimeMS:  time.Since(s.start).Milliseconds(),
		Decisions: s.decisions.Load(),
		Policy:    snap.Policy,
	}}
	if f := statusExtra.Load(); f != nil {
		body.StatusExtra = (*f)()
	}
	act, mp := actuatorHealth(), browserMPTCP()
	body.Actuator, body.BrowserMPTCP = &act, &mp
	return protocol.OK(req, body)
}
