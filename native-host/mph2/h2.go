package mph2

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// HTTP/2 flow-control numbers of the client.
const (
	// initialWindow is the stream window every new stream starts with: the protocol default, which the client
	// does not change, so no SETTINGS race can make a stream's credit other than what the client counts.
	initialWindow = 65535
	// connWindow is the connection-level window kept open: large, because each stream is bounded on its own.
	connWindow = 1 << 30
	// defaultCredit is a stream's credit before the path's rate and RTT are known (Credit).
	defaultCredit = 256 << 10
	// refillStep is how far a stream's credit may fall below its target before a WINDOW_UPDATE tops it up: one
	// DATA frame of the default size, so the server always has nearly the whole target to send.
	refillStep = 16384
)

// h2conn is one HTTP/2 connection driven on x/net/http2's Framer: GET streams only, each given flow-control
// credit up to its range end and no further (see the package documentation).
type h2conn struct {
	nc        net.Conn
	fr        *http2.Framer
	bw        *bufio.Writer
	authority string
	path      string // request target
	header    http.Header

	wmu  sync.Mutex // the Framer's writer, the hpack encoder and stream id order
	henc *hpack.Encoder
	hbuf bytes.Buffer

	mu         sync.Mutex
	streams    map[uint32]*h2stream
	nextID     uint32
	maxStreams uint32
	goAway     bool
	failErr    error
	connUnack  int64
	pings      map[uint64]time.Time
	pingSeq    uint64
	rttEst     RTT
	minRTT     time.Duration
	credit     atomic.Int64
	wasted     atomic.Int64
	deadCh     chan struct{}
	pingEvery  time.Duration
	pingExpiry time.Duration
}

type h2stream struct {
	c     *h2conn
	id    uint32
	h     handler
	limit atomic.Int64 // body bytes it may deliver in all; < 0 unknown
	// Read-loop state, under c.mu.
	body, flow, granted int64
	headed, ended       bool
}

// newH2 starts the client side of an HTTP/2 connection on nc (TLS, ALPN h2 agreed) for requests to target
// (the URL's path and query) at authority, with header on every request.
func newH2(nc net.Conn, authority, target string, header http.Header, pingTimeout time.Duration) (*h2conn, error) {
	c := &h2conn{
		nc: nc, authority: authority, path: target, header: header,
		streams: map[uint32]*h2stream{}, nextID: 1, maxStreams: 100, pings: map[uint64]time.Time{},
		deadCh: make(chan struct{}), pingEvery: PingEvery, pingExpiry: pingTimeout,
	}
	c.bw = bufio.NewWriterSize(nc, 32<<10)
	c.fr = http2.NewFramer(c.bw, bufio.NewReaderSize(nc, 64<<10))
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = 1 << 20
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.credit.Store(defaultCredit)
	c.wmu.Lock()
	_, err := c.bw.WriteString(http2.ClientPreface)
	if err == nil {
		err = c.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 1 << 20})
	}
	if err == nil {
		err = c.fr.WriteWindowUpdate(0, connWindow-initialWindow)
	}
	if err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("http2 preface: %w", err)
	}
	go c.readLoop()
	go c.pingLoop()
	return c, nil
}

func (c *h2conn) proto() string         { return "h2" }
func (c *h2conn) setCredit(n int64)     { c.credit.Store(max(n, initialWindow)) }
func (c *h2conn) waste() int64          { return c.wasted.Load() }
func (c *h2conn) dead() <-chan struct{} { return c.deadCh }
func (c *h2conn) close()                { c.fail(errors.New("closed")) }
func (c *h2conn) rtt() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rttEst.Value()
}
func (c *h2conn) baseRTT() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.minRTT
}
func (c *h2conn) draining() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.goAway && c.failErr == nil
}
func (c *h2conn) err() error { c.mu.Lock(); defer c.mu.Unlock(); return c.failErr }

// fail ends the connection and every stream on it once.
func (c *h2conn) fail(err error) {
	c.mu.Lock()
	if c.failErr != nil {
		c.mu.Unlock()
		return
	}
	c.failErr = err
	streams := c.streams
	c.streams = map[uint32]*h2stream{}
	for _, s := range streams {
		s.ended = true
	}
	c.mu.Unlock()
	close(c.deadCh)
	c.nc.Close()
	for _, s := range streams {
		s.h.end(fmt.Errorf("connection: %w", err))
	}
}

// hopHeaders may not appear in HTTP/2 (RFC 9113 §8.2.2), or are the client's own to set.
var hopHeaders = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true, "upgrade": true,
	"host": true, "te": true, "range": true, "if-range": true, "accept-encoding": true,
}

func (c *h2conn) get(req request, h handler) (stream, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if c.failErr != nil || c.goAway {
		err := c.failErr
		c.mu.Unlock()
		if err == nil {
			err = errors.New("server sent GOAWAY")
		}
		return nil, err
	}
	if uint32(len(c.streams)) >= c.maxStreams {
		c.mu.Unlock()
		return nil, fmt.Errorf("server allows %d concurrent streams", c.maxStreams)
	}
	s := &h2stream{c: c, id: c.nextID, h: h, granted: initialWindow}
	s.limit.Store(-1)
	if req.end >= 0 {
		s.limit.Store(req.end - req.start)
	}
	c.nextID += 2
	c.streams[s.id] = s
	c.mu.Unlock()

	c.hbuf.Reset()
	enc := func(k, v string) { c.henc.WriteField(hpack.HeaderField{Name: k, Value: v}) }
	enc(":method", "GET")
	enc(":scheme", "https")
	enc(":authority", c.authority)
	enc(":path", c.path)
	for k, vs := range c.header {
		lk := strings.ToLower(k)
		if hopHeaders[lk] {
			continue
		}
		for _, v := range vs {
			enc(lk, v)
		}
	}
	enc("accept-encoding", "identity") // byte offsets are of the representation as stored
	enc("range", RangeHeader(req.start, req.rangeEnd()))
	if req.ifRange != "" {
		enc("if-range", req.ifRange)
	}
	block := c.hbuf.Bytes()
	const maxFrag = 16384 // the peer's SETTINGS_MAX_FRAME_SIZE is at least this
	first := block[:min(len(block), maxFrag)]
	err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: first, EndStream: true, EndHeaders: len(first) == len(block)})
	for rest := block[len(first):]; err == nil && len(rest) > 0; {
		frag := rest[:min(len(rest), maxFrag)]
		rest = rest[len(frag):]
		err = c.fr.WriteContinuation(s.id, len(rest) == 0, frag)
	}
	if err == nil {
		c.mu.Lock()
		inc := s.grantLocked()
		c.mu.Unlock()
		if inc > 0 {
			err = c.fr.WriteWindowUpdate(s.id, uint32(inc))
		}
	}
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		go c.fail(fmt.Errorf("writing a request: %w", err))
		return nil, err
	}
	return s, nil
}

// grantLocked returns the WINDOW_UPDATE increment that keeps the stream's credit at the connection's target,
// never beyond the stream's limit. Called with c.mu held; the caller writes the frame.
func (s *h2stream) grantLocked() int64 {
	if s.ended {
		return 0
	}
	target := s.c.credit.Load()
	avail := s.granted - s.flow // what the server may still send
	want := target
	if lim := s.limit.Load(); lim >= 0 {
		// Flow-control bytes map one to one to body bytes unless the server pads; granting no more than the body
		// still wanted means a padded stream stops early and asks for more, never that it overshoots.
		want = min(want, lim-s.body)
	}
	if want <= avail {
		return 0
	}
	if want == target && want-avail < refillStep {
		return 0
	}
	inc := min(want-avail, 1<<31-1-s.granted)
	s.granted += inc
	return inc
}

func (s *h2stream) SetLimit(n int64) {
	s.limit.Store(n)
	c := s.c
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if s.ended {
		c.mu.Unlock()
		return
	}
	var inc int64
	reached := n >= 0 && s.body >= n
	if !reached {
		inc = s.grantLocked()
	} else {
		s.ended = true
		delete(c.streams, s.id)
	}
	c.mu.Unlock()
	var err error
	if reached {
		err = c.fr.WriteRSTStream(s.id, http2.ErrCodeCancel)
	} else if inc > 0 {
		err = c.fr.WriteWindowUpdate(s.id, uint32(inc))
	}
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		go c.fail(err)
	}
	if reached {
		s.h.end(nil)
	}
}

func (s *h2stream) Committed() int64 {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.body + (s.granted - s.flow)
}

func (s *h2stream) Received() int64 {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.body
}

func (s *h2stream) Cancel() {
	c := s.c
	c.wmu.Lock()
	c.mu.Lock()
	if s.ended {
		c.mu.Unlock()
		c.wmu.Unlock()
		return
	}
	s.ended = true
	// Bytes the server sends on the stream from now on are counted as waste when they arrive (onData), not here:
	// credit granted is not yet bytes sent.
	delete(c.streams, s.id)
	c.mu.Unlock()
	err := c.fr.WriteRSTStream(s.id, http2.ErrCodeCancel)
	if err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		go c.fail(err)
	}
	s.h.end(errCanceled)
}

func (c *h2conn) write(fn func() error) {
	c.wmu.Lock()
	err := fn()
	if err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		go c.fail(err)
	}
}

func (c *h2conn) readLoop() {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.fail(fmt.Errorf("reading: %w", err))
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
				c.mu.Lock()
				c.maxStreams = v
				c.mu.Unlock()
			}
			if v, ok := f.Value(http2.SettingHeaderTableSize); ok {
				// The encoder's dynamic table may not outgrow what the server's decoder keeps.
				c.wmu.Lock()
				c.henc.SetMaxDynamicTableSizeLimit(v)
				c.wmu.Unlock()
			}
			c.write(c.fr.WriteSettingsAck)
		case *http2.MetaHeadersFrame:
			c.onHeaders(f)
		case *http2.DataFrame:
			c.onData(f)
		case *http2.PingFrame:
			if !f.IsAck() {
				data := f.Data
				c.write(func() error { return c.fr.WritePing(true, data) })
				continue
			}
			seq := binary.BigEndian.Uint64(f.Data[:])
			c.mu.Lock()
			if t, ok := c.pings[seq]; ok {
				d := time.Since(t)
				c.rttEst.Add(d)
				if c.minRTT == 0 || d < c.minRTT {
					c.minRTT = d
				}
				delete(c.pings, seq)
			}
			c.mu.Unlock()
		case *http2.RSTStreamFrame:
			if s := c.take(f.StreamID); s != nil {
				s.h.end(fmt.Errorf("server reset the stream: %v", f.ErrCode))
			}
		case *http2.GoAwayFrame:
			c.mu.Lock()
			c.goAway = true
			var lost []*h2stream
			for id, s := range c.streams {
				if id > f.LastStreamID {
					s.ended = true
					delete(c.streams, id)
					lost = append(lost, s)
				}
			}
			c.mu.Unlock()
			for _, s := range lost {
				s.h.end(fmt.Errorf("%w (%v) before the stream started", errGoAway, f.ErrCode))
			}
		case *http2.PushPromiseFrame:
			c.fail(errors.New("server pushed although the client disabled push"))
			return
		}
	}
}

// take removes a stream that ends now and returns it, nil when it has ended already.
func (c *h2conn) take(id uint32) *h2stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.streams[id]
	if s == nil || s.ended {
		return nil
	}
	s.ended = true
	delete(c.streams, id)
	return s
}

func (c *h2conn) onHeaders(f *http2.MetaHeadersFrame) {
	c.mu.Lock()
	s := c.streams[f.StreamID]
	c.mu.Unlock()
	if s == nil {
		return
	}
	status, err := strconv.Atoi(f.PseudoValue("status"))
	if err != nil {
		if s = c.take(f.StreamID); s != nil {
			c.write(func() error { return c.fr.WriteRSTStream(f.StreamID, http2.ErrCodeProtocol) })
			s.h.end(fmt.Errorf("bad :status %q", f.PseudoValue("status")))
		}
		return
	}
	if status >= 100 && status < 200 {
		return // interim response
	}
	if s.headed {
		return // trailers: nothing the download needs
	}
	s.headed = true
	h := http.Header{}
	for _, hf := range f.RegularFields() {
		h.Add(http.CanonicalHeaderKey(hf.Name), hf.Value)
	}
	if err := s.h.head(status, h); err != nil {
		if s = c.take(f.StreamID); s != nil {
			c.write(func() error { return c.fr.WriteRSTStream(f.StreamID, http2.ErrCodeCancel) })
			s.h.end(err)
		}
		return
	}
	if f.StreamEnded() {
		if s = c.take(f.StreamID); s != nil {
			s.h.end(nil)
		}
	}
}

func (c *h2conn) onData(f *http2.DataFrame) {
	flow := int64(f.Length)
	c.mu.Lock()
	c.connUnack += flow
	var connInc int64
	if c.connUnack >= connWindow/2 {
		connInc, c.connUnack = c.connUnack, 0
	}
	s := c.streams[f.StreamID]
	data := f.Data()
	if s != nil {
		s.flow += flow
		if lim := s.limit.Load(); lim >= 0 && s.body+int64(len(data)) > lim {
			c.wasted.Add(s.body + int64(len(data)) - lim)
			data = data[:max(lim-s.body, 0)]
		}
		s.body += int64(len(data))
	} else {
		c.wasted.Add(int64(len(data)))
	}
	c.mu.Unlock()
	if connInc > 0 {
		c.write(func() error { return c.fr.WriteWindowUpdate(0, uint32(connInc)) })
	}
	if s == nil {
		return
	}
	if len(data) > 0 {
		s.h.data(data)
	}
	c.mu.Lock()
	lim := s.limit.Load()
	reached := lim >= 0 && s.body >= lim
	switch {
	case f.StreamEnded():
		reached = false
		s.ended = true
		delete(c.streams, s.id)
	case reached:
		s.ended = true
		delete(c.streams, s.id)
	}
	ended := s.ended
	var inc int64
	if !ended {
		inc = s.grantLocked()
	}
	c.mu.Unlock()
	switch {
	case reached:
		// The range end moved below what the server was asked for: it has sent exactly up to it (its credit ran
		// out there) and waits; reset the stream.
		c.write(func() error { return c.fr.WriteRSTStream(s.id, http2.ErrCodeCancel) })
		s.h.end(nil)
	case ended:
		s.h.end(nil)
	case inc > 0:
		c.write(func() error { return c.fr.WriteWindowUpdate(s.id, uint32(inc)) })
	}
}

// pingLoop sends a PING every pingEvery (seed 003 §3.4.1) and fails the connection when one goes unanswered for
// pingExpiry: the path is gone.
func (c *h2conn) pingLoop() {
	t := time.NewTicker(c.pingEvery)
	defer t.Stop()
	for {
		select {
		case <-c.deadCh:
			return
		case now := <-t.C:
			c.mu.Lock()
			var oldest time.Time
			for _, sent := range c.pings {
				if oldest.IsZero() || sent.Before(oldest) {
					oldest = sent
				}
			}
			if !oldest.IsZero() && now.Sub(oldest) > c.pingExpiry {
				c.mu.Unlock()
				c.fail(fmt.Errorf("no PING answer for %v: the path is gone", c.pingExpiry))
				return
			}
			c.pingSeq++
			seq := c.pingSeq
			c.pings[seq] = now
			c.mu.Unlock()
			var data [8]byte
			binary.BigEndian.PutUint64(data[:], seq)
			c.write(func() error { return c.fr.WritePing(false, data) })
		}
	}
}
