package mph2

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// h1conn is one path's HTTP/1.1 client (net/http): each range request on a connection of its own, and a range
// end that moves below what was asked for is applied by closing that connection (seed 003 §3.4.2). Its RTT is
// the response delay of its requests, the only application-layer RTT HTTP/1.1 has.
type h1conn struct {
	client *http.Client
	tr     *http.Transport
	url    string
	header http.Header

	mu     sync.Mutex
	rttEst RTT
	wasted atomic.Int64
	ctx    context.Context
	cancel context.CancelFunc
}

// newH1 makes the path's client. first, when not nil, is a TLS connection already made on the path (by the ALPN
// probe); the first request uses it.
func newH1(url string, header http.Header, dial func(ctx context.Context) (net.Conn, error), first net.Conn) *h1conn {
	var once sync.Once
	tr := &http.Transport{
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var c net.Conn
			once.Do(func() { c, first = first, nil })
			if c != nil {
				return c, nil
			}
			return dial(ctx)
		},
		// Every request goes to the path's own server over TLS (DialTLSContext): a connection in clear is never
		// made, whatever a response asks for.
		DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
			return nil, fmt.Errorf("refusing a plain-http connection to %s", addr)
		},
		DisableCompression:    true,
		MaxConnsPerHost:       3,
		ResponseHeaderTimeout: 30 * time.Second,
		ForceAttemptHTTP2:     false,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	client := &http.Client{Transport: tr, CheckRedirect: refuseRedirect}
	return &h1conn{client: client, tr: tr, url: url, header: header, ctx: ctx, cancel: cancel}
}

// refuseRedirect is the HTTP/1.1 client's redirect policy: none is followed, as over HTTP/2. The browser hands
// over the URL its own redirects ended at; a range request that is redirected again could lead anywhere (plain
// http with the site's cookies, a service on the user's own machine), and each path's connections are to one
// server only.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("the server redirected the download to %s://%s: a download follows no redirect", req.URL.Scheme, req.URL.Host)
}

func (c *h1conn) proto() string          { return "http/1.1" }
func (c *h1conn) setCredit(int64)        {}
func (c *h1conn) draining() bool         { return false }
func (c *h1conn) baseRTT() time.Duration { return 0 }
func (c *h1conn) waste() int64           { return c.wasted.Load() }
func (c *h1conn) dead() <-chan struct{}  { return c.ctx.Done() }
func (c *h1conn) err() error             { return context.Cause(c.ctx) }
func (c *h1conn) rtt() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rttEst.Value()
}
func (c *h1conn) close() { c.cancel(); c.tr.CloseIdleConnections() }

type h1stream struct {
	limit    atomic.Int64
	received atomic.Int64
	cancel   context.CancelFunc
	canceled atomic.Bool
}

func (s *h1stream) SetLimit(n int64) { s.limit.Store(n) }
func (s *h1stream) Committed() int64 { return -1 }
func (s *h1stream) Received() int64  { return s.received.Load() }
func (s *h1stream) Cancel()          { s.canceled.Store(true); s.cancel() }

func (c *h1conn) get(req request, h handler) (stream, error) {
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(c.ctx)
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	for k, vs := range c.header {
		if !hopHeaders[http.CanonicalHeaderKey(k)] && !hopHeaders[lower(k)] {
			r.Header[k] = vs
		}
	}
	r.Header.Set("Accept-Encoding", "identity")
	r.Header.Set("Range", RangeHeader(req.start, req.rangeEnd()))
	if req.ifRange != "" {
		r.Header.Set("If-Range", req.ifRange)
	}
	s := &h1stream{cancel: cancel}
	s.limit.Store(-1)
	if req.end >= 0 {
		s.limit.Store(req.end - req.start)
	}
	go func() {
		defer cancel()
		sent := time.Now()
		resp, err := c.client.Do(r)
		if err != nil {
			// net/http names the whole URL in its errors; the query may hold a token, and errors reach logs.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			if s.canceled.Load() {
				err = errCanceled
			}
			h.end(err)
			return
		}
		defer resp.Body.Close()
		c.mu.Lock()
		c.rttEst.Add(time.Since(sent))
		c.mu.Unlock()
		if err := h.head(resp.StatusCode, resp.Header); err != nil {
			h.end(err)
			return
		}
		buf := make([]byte, 32<<10)
		for {
			lim := s.limit.Load()
			got := s.received.Load()
			if lim >= 0 && got >= lim {
				// The range end moved: closing the response (and with it the connection) is how HTTP/1.1 stops
				// a transfer. What the kernel had buffered beyond it is lost.
				if resp.ContentLength < 0 || got < resp.ContentLength {
					cancel()
				}
				h.end(nil)
				return
			}
			want := len(buf)
			if lim >= 0 {
				want = int(min(int64(want), lim-got))
			}
			n, err := resp.Body.Read(buf[:want])
			if n > 0 {
				s.received.Add(int64(n))
				h.data(buf[:n])
			}
			if err == io.EOF {
				h.end(nil)
				return
			}
			if err != nil {
				if s.canceled.Load() {
					err = errCanceled
				}
				h.end(fmt.Errorf("reading the body: %w", err))
				return
			}
		}
	}()
	return s, nil
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

var errNoPath = errors.New("no path left")
