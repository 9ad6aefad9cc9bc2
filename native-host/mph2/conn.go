package mph2

import (
	"errors"
	"net/http"
	"time"
)

// request is one GET for the object's bytes [start, end); end < 0 asks for everything from start on.
type request struct {
	start, end int64
	ifRange    string
	// open asks the server for everything from start on while the stream still delivers only up to end: the end
	// can then move up later (to the object's end, when the download goes single-path) without a second request.
	open bool
}

// rangeEnd is the end the Range header names: -1 (to the object's end) for an open request.
func (r request) rangeEnd() int64 {
	if r.open {
		return -1
	}
	return r.end
}

// handler receives one response. The connection calls head once, then data with the body bytes in order (never
// past the stream's limit), then end once; all from one goroutine per stream (HTTP/1.1) or the connection's
// reader (HTTP/2), never concurrently for one stream. head returning an error cancels the stream, and end follows.
type handler struct {
	head func(status int, h http.Header) error
	data func(p []byte)
	end  func(err error)
}

// stream is one request in flight.
type stream interface {
	// SetLimit sets how many body bytes, counted from the stream's start, it may deliver in all; the stream ends
	// (reset) once it has. Lowering it below Committed wastes the bytes in between.
	SetLimit(n int64)
	// Committed is how many body bytes the server may already have sent: received plus credit granted (HTTP/2),
	// or -1 when the transport cannot say (HTTP/1.1: the kernel's buffers).
	Committed() int64
	// Received is how many body bytes the transport has read so far. It can be ahead of what the engine has
	// handled: the data waits in the engine's queue.
	Received() int64
	// Cancel stops the stream; end follows with errCanceled.
	Cancel()
}

// conn is one path's HTTP client: an HTTP/2 connection, or HTTP/1.1 connections opened as needed.
type conn interface {
	get(req request, h handler) (stream, error)
	// rtt is the application-layer RTT estimate.
	rtt() (time.Duration, bool)
	// baseRTT is the smallest RTT seen (0 when unknown): the path without its queues.
	baseRTT() time.Duration
	// setCredit sets the HTTP/2 flow-control credit each stream keeps ahead of what it has received.
	setCredit(n int64)
	// waste is how many bytes the server sent that were not delivered (past a limit, or on reset streams).
	waste() int64
	proto() string
	close()
	// draining says the server asked for no new requests (HTTP/2 GOAWAY) while the ones it took go on: the path
	// needs a new connection, not a verdict.
	draining() bool
	// dead is closed when the connection fails; err then says why.
	dead() <-chan struct{}
	err() error
}

var (
	errCanceled = errors.New("stream canceled")
	// errGoAway ends a stream the server never started: it may be sent again on a new connection.
	errGoAway = errors.New("server sent GOAWAY")
)
