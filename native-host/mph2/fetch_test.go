package mph2

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// object is a test representation: deterministic bytes with an ETag.
func object(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// testServer serves body at /f over TLS (HTTP/2 unless h1) with http.ServeContent (ranges, If-Range). hook may
// change the response; it runs before ServeContent and returns true when it answered itself.
type testServer struct {
	*httptest.Server
	mu     sync.Mutex
	body   []byte
	etag   string
	hook   func(w http.ResponseWriter, r *http.Request) bool
	ranges atomic.Int64 // range requests seen
	pace   *paced
}

func newTestServer(t *testing.T, body []byte, h1 bool, stallAfter ...map[string]int64) *testServer {
	ts := &testServer{body: body, etag: `"v1"`}
	ts.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" && r.Header.Get("Range") != "bytes=0-" {
			ts.ranges.Add(1)
		}
		ts.mu.Lock()
		body, etag, hook := ts.body, ts.etag, ts.hook
		ts.mu.Unlock()
		if hook != nil && hook(w, r) {
			return
		}
		serveObject(w, r, body, etag)
	}))
	ts.EnableHTTP2 = !h1
	// Each client address gets its own rate, so that two paths on loopback (127.0.0.1 and 127.0.0.2) differ the
	// way WiFi and cellular do.
	ts.pace = &paced{Listener: ts.Listener, rates: map[string]float64{"127.0.0.1": 24e6 / 8, "127.0.0.2": 40e6 / 8}, quit: make(chan struct{})}
	if len(stallAfter) > 0 {
		ts.pace.stallAfter = stallAfter[0]
	}
	ts.Listener = ts.pace
	ts.StartTLS()
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(ts.pace.quit) }) // runs first: stalled writers give up

	return ts
}

func serveObject(w http.ResponseWriter, r *http.Request, body []byte, etag string) {
	sum := sha256.Sum256(body)
	w.Header().Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":")
	w.Header().Set("ETag", etag)
	http.ServeContent(w, r, "f.bin", time.Unix(1_700_000_000, 0), bytes.NewReader(body))
}

func (ts *testServer) options(t *testing.T, paths int) Options {
	u, _ := url.Parse(ts.URL)
	addr := netip.MustParseAddrPort(u.Host)
	var ps []Path
	for i := 0; i < paths; i++ {
		ps = append(ps, Path{Name: []string{"a", "b"}[i], Addr: netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)})})
	}
	return Options{
		URL: "https://example.com:" + u.Port() + "/f", Paths: ps, Out: filepath.Join(t.TempDir(), "f.bin"),
		TLS: ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone(), PathTimeout: time.Second,
		Resolve: map[string][]netip.Addr{"example.com": {addr.Addr()}},
	}
}

func fetchOK(t *testing.T, o Options, want []byte) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Fetch(ctx, o)
	if err != nil {
		t.Fatalf("Fetch: %v (result %+v)", err, res)
	}
	got, err := os.ReadFile(res.File)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file differs: %d bytes, want %d (result %+v)", len(got), len(want), res)
	}
	noneLeft(t, o.Out+PartSuffix, o.Out+SidecarSuffix)
	return res
}

// Both paths carry the object: the primary's first response pauses after its first 256 KiB until the secondary
// has asked for its share (an event, not a race between the secondary's handshake and the primary's transfer),
// and no path is given up for a pause: a loaded machine can starve a paced writer or a PING reply for seconds,
// and giving a path up is what the fault tests test (TestFetchPathDies), not this one.
func TestFetchTwoPathsLocal(t *testing.T) {
	for _, h1 := range []bool{false, true} {
		name := map[bool]string{false: "h2", true: "http1.1"}[h1]
		t.Run(name, func(t *testing.T) {
			body := object(3<<20+12345, 1)
			ts := newTestServer(t, body, h1)
			secondary := make(chan struct{})
			var asked sync.Once
			ts.mu.Lock()
			ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
				if host, _, _ := net.SplitHostPort(r.RemoteAddr); host == "127.0.0.2" {
					asked.Do(func() { close(secondary) })
					return false
				}
				serveObject(&gated{ResponseWriter: w, left: 256 << 10, open: secondary, done: r.Context().Done()}, r, body, `"v1"`)
				return true
			}
			ts.mu.Unlock()
			o := ts.options(t, 2)
			o.PathTimeout = time.Minute
			res := fetchOK(t, o, body)
			if res.Fallback != "" {
				t.Errorf("fell back: %s", res.Fallback)
			}
			if res.Paths[0].Bytes == 0 || res.Paths[1].Bytes == 0 {
				t.Errorf("a path carried nothing: %+v", res.Paths)
			}
			if res.Paths[0].Error != "" || res.Paths[1].Error != "" {
				t.Errorf("a path was given up: %+v", res.Paths)
			}
			if res.Digest != "Repr-Digest sha-256" {
				t.Errorf("digest %q", res.Digest)
			}
			if res.DupBytes != 0 {
				t.Errorf("%d duplicate bytes", res.DupBytes)
			}
			if !h1 && res.WasteBytes != 0 {
				t.Errorf("%d bytes wasted over HTTP/2", res.WasteBytes)
			}
			t.Logf("%+v", res)
		})
	}
}

// gated passes the first `left` bytes of a response body, sends them, and passes the rest once open is closed
// (or fails once done is).
type gated struct {
	http.ResponseWriter
	left       int
	open, done <-chan struct{}
}

func (g *gated) Write(b []byte) (int, error) {
	if g.left < 0 || len(b) <= g.left {
		g.left -= len(b)
		if g.left < 0 {
			g.left = 0
		}
		return g.ResponseWriter.Write(b)
	}
	n, err := g.ResponseWriter.Write(b[:g.left])
	if err != nil {
		return n, err
	}
	// The head and the first bytes reach the client now: it learns the size, and the secondary gets its share.
	if err := http.NewResponseController(g.ResponseWriter).Flush(); err != nil {
		return n, err
	}
	select {
	case <-g.open:
	case <-g.done:
		return n, net.ErrClosed
	}
	g.left = -1
	m, err := g.ResponseWriter.Write(b[n:])
	return n + m, err
}

func TestFetchServerIgnoresRanges(t *testing.T) {
	body := object(1<<20, 2)
	ts := newTestServer(t, body, false)
	ts.hook = serveWhole(body)
	res := fetchOK(t, ts.options(t, 2), body)
	if !strings.Contains(res.Fallback, "does not serve ranges") {
		t.Errorf("fallback %q", res.Fallback)
	}
}

// paced slows each accepted connection's writes to the rate of its client address (bytes per second).
type paced struct {
	net.Listener
	rates map[string]float64
	// stallAfter stops writing (without closing) to a client address after this many bytes on one connection.
	stallAfter map[string]int64
	quit       chan struct{}
}

func (l *paced) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	if r := l.rates[host]; r > 0 {
		return &pacedConn{Conn: c, rate: r, stall: float64(l.stallAfter[host]), quit: l.quit}, nil
	}
	return c, nil
}

type pacedConn struct {
	net.Conn
	rate  float64
	next  time.Time // when the next byte may leave
	sent  float64
	stall float64
	quit  chan struct{}
}

func (c *pacedConn) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k := min(len(b)-n, 16<<10)
		w, err := c.Conn.Write(b[n : n+k])
		n += w
		if err != nil {
			return n, err
		}
		c.sent += float64(w)
		if c.stall > 0 && c.sent > c.stall {
			<-c.quit // a path that went silent until the test ends
			return n, net.ErrClosed
		}
		// A token bucket of 20 ms: time the connection spent idle is no credit for a burst later.
		now := time.Now()
		if c.next.Before(now.Add(-20 * time.Millisecond)) {
			c.next = now.Add(-20 * time.Millisecond)
		}
		c.next = c.next.Add(time.Duration(float64(w) / c.rate * float64(time.Second)))
		if d := c.next.Sub(now); d > 0 {
			time.Sleep(d)
		}
	}
	return n, nil
}
