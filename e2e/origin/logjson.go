package origin

import (
	"encoding/json"
	"io"
	"sync"
)

// RequestLine is the log line of one response.
type RequestLine struct {
	Type     string    `json:"type"`    // "request"
	Time     int64     `json:"time_ns"` // request received (unix ns)
	End      int64     `json:"end_ns"`  // handler wrote its last byte
	Done     int64     `json:"done_ns"` // the peer acknowledged it (see Acct)
	Conn     uint64    `json:"conn"`
	Listener string    `json:"listener"` // h2 (ALPN h2 + http/1.1), h1 (http/1.1 only) or http
	Remote   string    `json:"remote"`
	Proto    string    `json:"proto"` // HTTP/2.0 or HTTP/1.1
	ALPN     string    `json:"alpn"`
	Method   string    `json:"method"`
	Host     string    `json:"host"`
	Path     string    `json:"path"`
	Query    string    `json:"query,omitempty"` // raw query, e.g. a runner's load tag
	Status   int       `json:"status"`
	Bytes    int64     `json:"bytes"` // response body bytes
	Policy   PolicyLog `json:"mp_policy"`
	MPTCP    bool      `json:"mptcp"`
	// Subflows are the bytes each subflow carried between the response's start and the
	// acknowledgement of its last byte: exact for one response at a time, shared with the
	// others when Concurrent > 1 (HTTP/2 multiplexing).
	Subflows     []SubflowLine `json:"subflows"`
	SubflowBytes uint64        `json:"subflow_bytes"` // sum of the subflows' bytes_sent
	// Reinjected counts bytes MPTCP sent again (mptcpi_bytes_retrans): a subflow does not
	// count a reinjection as its own retransmission, so subflow_bytes holds them twice.
	Reinjected uint64 `json:"reinjected"`
	Concurrent int    `json:"concurrent"` // most responses in flight (written or unacknowledged) on the connection meanwhile
	Acct       string `json:"acct"`       // acked, closed (connection closed first) or timeout
}

// ConnLine is the log line of one connection, written when it closes.
type ConnLine struct {
	Type         string        `json:"type"` // "conn"
	Time         int64         `json:"time_ns"`
	Opened       int64         `json:"open_ns"`
	Conn         uint64        `json:"conn"`
	Listener     string        `json:"listener"`
	Local        string        `json:"local"`
	Remote       string        `json:"remote"`
	SOProtocol   int           `json:"so_protocol"` // 262 = IPPROTO_MPTCP, 6 = TCP
	MPTCP        bool          `json:"mptcp"`       // MPTCP and not fallen back to TCP
	ALPN         string        `json:"alpn"`
	Requests     int           `json:"requests"`
	Bytes        int64         `json:"bytes"`   // response body bytes
	Written      uint64        `json:"written"` // bytes written to the socket, TLS included
	Acked        uint64        `json:"acked"`   // of which acknowledged (MPTCP data level)
	Subflows     []SubflowLine `json:"subflows"`
	SubflowBytes uint64        `json:"subflow_bytes"` // sum of the subflows' bytes_sent
	Reinjected   uint64        `json:"reinjected"`
	// Unaccounted is written bytes missing from subflow_bytes (less retransmissions and
	// reinjections): sent after the last reading of a subflow that closed first.
	Unaccounted uint64 `json:"unaccounted"`
	InfoError   string `json:"info_error,omitempty"`
}

// jsonLog writes one JSON object per line; a nil *jsonLog discards.
type jsonLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *jsonLog) write(v any) {
	if l == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "error": err.Error()})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(append(b, '\n'))
}
