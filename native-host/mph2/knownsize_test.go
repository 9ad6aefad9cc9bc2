package mph2

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// protos runs f once over HTTP/2 and once over HTTP/1.1.
func protos(t *testing.T, f func(t *testing.T, h1 bool)) {
	for _, h1 := range []bool{false, true} {
		t.Run(map[bool]string{false: "h2", true: "http1.1"}[h1], func(t *testing.T) { f(t, h1) })
	}
}

// holdWait is how long a test server holds a response for an event that should come; a hold that runs out is the
// failure the test reports.
const holdWait = 5 * time.Second

// signal is an event a test server's handlers wait for.
type signal struct {
	once sync.Once
	ch   chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }
func (s *signal) fire()  { s.once.Do(func() { close(s.ch) }) }

// wait says whether the event came within holdWait.
func (s *signal) wait() bool {
	select {
	case <-s.ch:
		return true
	case <-time.After(holdWait):
		return false
	}
}

func isFirst(r *http.Request) bool { return r.Header.Get("Range") == "bytes=0-" }

func clientIP(r *http.Request) string {
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	return host
}

// With the size known beforehand both paths ask at once (seed 003 §3.6): the server holds the response to the
// primary's request until the secondary's has arrived, which without the known-size start would come only after
// that response. The secondary asks for the second half (no estimates yet) and the file is exact.
func TestFetchKnownSize(t *testing.T) {
	protos(t, func(t *testing.T, h1 bool) {
		body := object(3<<20+12345, 31)
		size := int64(len(body))
		ts := newTestServer(t, body, h1)
		tail := newSignal()
		var mu sync.Mutex
		var tailRange, tailFrom string
		held := true
		ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
			if isFirst(r) {
				if !tail.wait() {
					mu.Lock()
					held = false
					mu.Unlock()
				}
				return false
			}
			mu.Lock()
			if tailRange == "" {
				tailRange, tailFrom = r.Header.Get("Range"), clientIP(r)
			}
			mu.Unlock()
			tail.fire()
			return false
		}
		o := ts.options(t, 2)
		o.Size = size
		res := fetchOK(t, o, body)
		mu.Lock()
		defer mu.Unlock()
		if !held {
			t.Errorf("the secondary's request did not come before the primary's first response")
		}
		if want := fmt.Sprintf("bytes=%d-%d", size/2, size-1); tailRange != want || tailFrom != "127.0.0.2" {
			t.Errorf("the first range request was %q from %s, want %q from the secondary", tailRange, tailFrom, want)
		}
		if res.Fallback != "" || res.Paths[0].Bytes == 0 || res.Paths[1].Bytes == 0 || res.DupBytes != 0 {
			t.Errorf("%+v", res)
		}
		if !h1 && res.WasteBytes != 0 {
			t.Errorf("%d bytes wasted over HTTP/2", res.WasteBytes)
		}
	})
}

// With priors and the size known, the first split follows Eq. 1 (the faster secondary gets the larger share), not
// halves.
func TestFetchKnownSizePriors(t *testing.T) {
	body := object(3<<20, 32)
	size := int64(len(body))
	ts := newTestServer(t, body, false)
	tail := newSignal()
	var mu sync.Mutex
	var tailRange string
	ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if isFirst(r) {
			tail.wait() // a secondary that connects after the first response would split by Algorithm 1
			return false
		}
		mu.Lock()
		if tailRange == "" {
			tailRange = r.Header.Get("Range")
		}
		mu.Unlock()
		tail.fire()
		return false
	}
	o := ts.options(t, 2)
	o.Size = size
	o.Priors = map[string]Prior{"a": {BPS: 24e6, RTT: 2 * time.Millisecond}, "b": {BPS: 40e6, RTT: 2 * time.Millisecond}}
	fetchOK(t, o, body)
	mu.Lock()
	defer mu.Unlock()
	var first, last int64
	if _, err := fmt.Sscanf(tailRange, "bytes=%d-%d", &first, &last); err != nil || last != size-1 {
		t.Fatalf("the secondary's first request %q: %v", tailRange, err)
	}
	// Eq. 1 with equal RTTs gives the primary 24/64 of the object. A path's RTT may be its own measurement by then
	// (loopback, below the prior's 2 ms): 2 ms at these rates moves the split by under 4 kB.
	if want := size * 24 / 64; first < want-8<<10 || first > want+8<<10 {
		t.Errorf("split at %d, want about %d", first, want)
	}
}

// A known size that is wrong (the object is smaller or larger, or so much smaller that the secondary's range is
// past its end: a 416) fails the download on the first response, before a byte is written, as without the
// known-size start: the browser's own download goes on.
func TestFetchKnownSizeWrong(t *testing.T) {
	protos(t, func(t *testing.T, h1 bool) {
		body := object(1<<20, 33)
		for _, size := range []int64{int64(len(body)) - 12345, int64(len(body)) + 12345, 3 * int64(len(body))} {
			t.Run(fmt.Sprint(size), func(t *testing.T) {
				ts := newTestServer(t, body, h1)
				tail := newSignal()
				ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
					if isFirst(r) {
						tail.wait() // so that the secondary's answer is read too
					} else {
						tail.fire()
					}
					return false
				}
				o := ts.options(t, 2)
				o.Size = size
				started := false
				o.OnStart = func(int64) { started = true }
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res, err := Fetch(ctx, o)
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("expected %d", size)) {
					t.Fatalf("err %v", err)
				}
				if started || res.Paths[0].Bytes+res.Paths[1].Bytes != 0 {
					t.Errorf("the download started: %+v", res)
				}
				if ts.ranges.Load() == 0 {
					t.Errorf("the secondary sent no request before the first response")
				}
				noneLeft(t, o.Out, o.Out+PartSuffix, o.Out+SidecarSuffix)
			})
		}
	})
}

// A server that ignores ranges answers both of the known-size start's requests with the whole object: the
// download goes on over the primary alone, whichever answer the client reads first, and the secondary's answer
// writes nothing.
func TestFetchKnownSizeIgnoresRanges(t *testing.T) {
	protos(t, func(t *testing.T, h1 bool) {
		body := object(1<<20, 34)
		for _, order := range []string{"secondary first", "primary first"} {
			t.Run(order, func(t *testing.T) {
				ts := newTestServer(t, body, h1)
				whole := serveWhole(body)
				secondaryDone, tailArrived := newSignal(), newSignal()
				var mu sync.Mutex
				var failures []string
				fail := func(s string) { mu.Lock(); failures = append(failures, s); mu.Unlock() }
				ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
					first := isFirst(r)
					if !first {
						tailArrived.fire()
					}
					switch {
					case order == "secondary first" && first:
						// The secondary's 200 is read first: the client cancels it (its connection ends or
						// the stream is reset) before the primary answers.
						if !secondaryDone.wait() {
							fail("the secondary's whole-object answer was not cancelled")
						}
					case order == "secondary first":
						defer secondaryDone.fire()
						w.Header().Set("Content-Length", fmt.Sprint(len(body)))
						w.WriteHeader(http.StatusOK)
						w.(http.Flusher).Flush()
						select {
						case <-r.Context().Done():
						case <-time.After(holdWait):
						}
						return true
					case first:
						// The secondary has asked; the primary's 200 is read first.
						if !tailArrived.wait() {
							fail("the secondary did not ask before the first response")
						}
					case !first:
						// The secondary's request, not yet answered, is cancelled after the primary's 200.
						select {
						case <-r.Context().Done():
							return true
						case <-time.After(holdWait):
							fail("the secondary's request was not cancelled after the primary's whole-object answer")
						}
					}
					return whole(w, r)
				}
				o := ts.options(t, 2)
				o.Size = int64(len(body))
				res := fetchOK(t, o, body)
				if !strings.Contains(res.Fallback, "does not serve ranges") || res.Paths[1].Bytes != 0 || res.DupBytes != 0 {
					t.Errorf("%+v", res)
				}
				// The secondary's answer sent no body byte before it was cancelled: nothing was wasted, however
				// much credit its stream had been granted.
				if !h1 && res.WasteBytes != 0 {
					t.Errorf("%d bytes counted as waste", res.WasteBytes)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, f := range failures {
					t.Error(f)
				}
			})
		}
	})
}

// Without a validator the two answers of the known-size start cannot be told apart from two versions: the
// secondary's is dropped and the primary's single stream carries the whole object.
func TestFetchKnownSizeNoValidator(t *testing.T) {
	protos(t, func(t *testing.T, h1 bool) {
		body := object(1<<20, 35)
		ts := newTestServer(t, body, h1)
		tail := newSignal()
		ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
			if isFirst(r) {
				tail.wait() // the secondary asks before the first response
			} else {
				tail.fire()
			}
			http.ServeContent(w, r, "f.bin", time.Time{}, strings.NewReader(string(body)))
			return true
		}
		o := ts.options(t, 2)
		o.Size = int64(len(body))
		res := fetchOK(t, o, body)
		if !strings.Contains(res.Fallback, "no validator") || res.Paths[1].Bytes != 0 || res.Paths[0].Requests != 1 || res.DupBytes != 0 {
			t.Errorf("%+v", res)
		}
	})
}

// The object changes between the known-size start's two requests (the secondary's carries no If-Range: no
// validator is known yet): the ETags differ, and the download starts over on one path with the new version
// instead of mixing the two.
func TestFetchKnownSizeObjectChanges(t *testing.T) {
	protos(t, func(t *testing.T, h1 bool) {
		oldBody, newBody := object(2<<20, 36), object(2<<20, 37)
		ts := newTestServer(t, oldBody, h1)
		answered, tail := newSignal(), newSignal()
		ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
			if isFirst(r) {
				tail.wait() // the secondary asks before the first response
				ts.mu.Lock()
				body, etag := ts.body, ts.etag
				ts.mu.Unlock()
				answered.fire() // the old version's headers go out first
				serveObject(w, r, body, etag)
				return true
			}
			tail.fire()
			answered.wait()
			ts.mu.Lock()
			ts.body, ts.etag = newBody, `"v2"`
			ts.mu.Unlock()
			serveObject(w, r, newBody, `"v2"`)
			return true
		}
		o := ts.options(t, 2)
		o.Size = int64(len(oldBody))
		res := fetchOK(t, o, newBody)
		if !strings.Contains(res.Fallback, "changed") {
			t.Errorf("fallback %q", res.Fallback)
		}
	})
}
