package mph2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The object changes after the first response: range requests carry If-Range, so the server answers the new
// version whole, and the download starts over on one path instead of mixing versions.
func TestFetchObjectChangesIfRange(t *testing.T) {
	oldBody, newBody := object(2<<20, 3), object(2<<20+7, 4)
	ts := newTestServer(t, oldBody, false)
	ts.hook = swapAtFirstRange(ts, newBody, false)
	res := fetchOK(t, ts.options(t, 2), newBody)
	if !strings.Contains(res.Fallback, "changed") {
		t.Errorf("fallback %q", res.Fallback)
	}
}

// A server that answers a range from the new version as 206 anyway (ignoring If-Range): the ETag differs, and the
// download starts over.
func TestFetchObjectChangesIgnoringIfRange(t *testing.T) {
	oldBody, newBody := object(2<<20, 5), object(2<<20, 6)
	ts := newTestServer(t, oldBody, false)
	ts.hook = swapAtFirstRange(ts, newBody, true)
	res := fetchOK(t, ts.options(t, 2), newBody)
	if !strings.Contains(res.Fallback, "changed") {
		t.Errorf("fallback %q", res.Fallback)
	}
}

// swapAtFirstRange replaces the object with newBody (ETag "v2") when the first range request arrives, and serves
// that request from it; ignoreIfRange makes the server answer the range whatever If-Range says.
func swapAtFirstRange(ts *testServer, newBody []byte, ignoreIfRange bool) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if rg := r.Header.Get("Range"); rg == "" || rg == "bytes=0-" {
			return false
		}
		ts.mu.Lock()
		ts.body, ts.etag, ts.hook = newBody, `"v2"`, nil
		ts.mu.Unlock()
		if ignoreIfRange {
			r.Header.Del("If-Range")
		}
		serveObject(w, r, newBody, `"v2"`)
		return true
	}
}

// Without ETag or Last-Modified nothing can tell two versions apart: one path.
func TestFetchNoValidator(t *testing.T) {
	body := object(1<<20, 7)
	ts := newTestServer(t, body, false)
	ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
		http.ServeContent(w, r, "f.bin", time.Time{}, bytes.NewReader(body))
		return true
	}
	res := fetchOK(t, ts.options(t, 2), body)
	if !strings.Contains(res.Fallback, "no validator") || ts.ranges.Load() != 0 {
		t.Errorf("fallback %q, %d range requests", res.Fallback, ts.ranges.Load())
	}
}

// One path goes silent mid-way (no data, no close, as when a radio loses coverage): after PathTimeout its range
// goes to the other path, and the file is still exact.
func TestFetchPathDies(t *testing.T) {
	for _, h1 := range []bool{false, true} {
		t.Run(map[bool]string{false: "h2", true: "http1.1"}[h1], func(t *testing.T) {
			body := object(3<<20, 8)
			ts := newTestServer(t, body, h1, map[string]int64{"127.0.0.2": 600 << 10})
			o := ts.options(t, 2)
			o.PathTimeout = 700 * time.Millisecond
			res := fetchOK(t, o, body)
			if res.Paths[1].Error == "" || res.Paths[0].Bytes <= res.Paths[1].Bytes {
				t.Errorf("path b should have died and a done the rest: %+v", res.Paths)
			}
			t.Logf("%+v", res.Paths)
		})
	}
}

// Stopped half-way (browser closed), the partial file and its sidecar stay and a later run resumes from them.
func TestFetchStopAndResume(t *testing.T) {
	body := object(4<<20, 9)
	ts := newTestServer(t, body, false)
	o := ts.options(t, 2)
	ctx := stopAfter(&o, 1<<20)
	_, err := Fetch(ctx, o)
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("err %v, want ErrStopped", err)
	}
	if _, err := os.Stat(o.Out); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a stopped download left a file that looks complete")
	}
	sc, err := ReadSidecar(o.Out)
	if err != nil || sc.Done.Total() < 1<<20 || sc.Size != int64(len(body)) {
		t.Fatalf("sidecar %+v, %v", sc, err)
	}
	o.Progress, o.Resume = nil, true
	res := fetchOK(t, o, body)
	if res.Resumed != sc.Done.Total() {
		t.Errorf("resumed %d bytes, the sidecar had %d", res.Resumed, sc.Done.Total())
	}
	if got := res.Paths[0].Bytes + res.Paths[1].Bytes; got > int64(len(body))-sc.Done.Total() {
		t.Errorf("fetched %d bytes again, %d were missing", got, int64(len(body))-sc.Done.Total())
	}
}

// A resume against a changed object starts over rather than keeping the old bytes.
func TestFetchResumeChanged(t *testing.T) {
	body := object(2<<20, 10)
	ts := newTestServer(t, body, false)
	o := ts.options(t, 1)
	part, _ := PartPaths(o.Out)
	os.WriteFile(part, body[:1<<20], 0o644)
	writeSidecar(mustOpen(t, part), o.Out, &Sidecar{Version: 1, URL: o.URL, Size: int64(len(body)), ETag: `"old"`, Done: Spans{{0, 1 << 20}}})
	o.Resume = true
	res := fetchOK(t, o, body)
	if res.Resumed != 0 || res.Paths[0].Bytes != int64(len(body)) {
		t.Errorf("%+v", res)
	}
}

// A server whose size differs from what the browser saw fails before anything is written.
func TestFetchSizeMismatch(t *testing.T) {
	body := object(1<<20, 11)
	ts := newTestServer(t, body, false)
	o := ts.options(t, 2)
	o.Size = 12345
	if _, err := Fetch(context.Background(), o); err == nil || !strings.Contains(err.Error(), "expected 12345") {
		t.Fatalf("err %v", err)
	}
	noneLeft(t, o.Out, o.Out+PartSuffix, o.Out+SidecarSuffix)
	// The first response decides: no range of the object is asked for after it (12345 bytes are too few for the
	// known-size start to send a second request before it).
	if n := ts.ranges.Load(); n != 0 {
		t.Errorf("%d range requests after the first response said the size was wrong", n)
	}
}

// A digest that does not match removes the partial file and fails.
func TestFetchDigestMismatch(t *testing.T) {
	body := object(1<<20, 12)
	ts := newTestServer(t, body, false)
	ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Repr-Digest", "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:")
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "f.bin", time.Time{}, bytes.NewReader(body))
		return true
	}
	o := ts.options(t, 2)
	if _, err := Fetch(context.Background(), o); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("err %v", err)
	}
	noneLeft(t, o.Out, o.Out+PartSuffix)
}

// A file of the final name exists already: the download takes the next free name, never overwrites.
func TestFetchNoClobber(t *testing.T) {
	body := object(300<<10, 13)
	ts := newTestServer(t, body, false)
	o := ts.options(t, 1)
	os.WriteFile(o.Out, []byte("mine"), 0o644)
	res := fetchOK(t, o, body)
	if !strings.HasSuffix(res.File, "f (2).bin") {
		t.Errorf("file %s", res.File)
	}
	if b, _ := os.ReadFile(o.Out); string(b) != "mine" {
		t.Error("the existing file was overwritten")
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Stopped while downloading from a server without ranges: nothing could resume it, so nothing stays behind.
func TestFetchStopWithoutRanges(t *testing.T) {
	body := object(4<<20, 14)
	ts := newTestServer(t, body, false)
	ts.hook = serveWhole(body)
	o := ts.options(t, 2)
	ctx := stopAfter(&o, 1<<20)
	if _, err := Fetch(ctx, o); !errors.Is(err, ErrStopped) {
		t.Fatalf("err %v", err)
	}
	noneLeft(t, o.Out, o.Out+PartSuffix, o.Out+SidecarSuffix)
}

// noneLeft fails the test for each of files that exists.
func noneLeft(t *testing.T, files ...string) {
	t.Helper()
	for _, p := range files {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind", p)
		}
	}
}

// serveWhole answers every request with the whole body and no range support.
func serveWhole(body []byte) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
		return true
	}
}

// A server that compresses the object although identity was asked for fails before anything is written: ranges
// would count encoded bytes.
func TestFetchContentEncoding(t *testing.T) {
	body := object(300<<10, 15)
	ts := newTestServer(t, body, false)
	ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(body)
		return true
	}
	o := ts.options(t, 2)
	if _, err := Fetch(context.Background(), o); err == nil || !strings.Contains(err.Error(), "Content-Encoding") {
		t.Fatalf("err %v", err)
	}
	noneLeft(t, o.Out, o.Out+PartSuffix, o.Out+SidecarSuffix)
}

// The server sends GOAWAY after each range request (Connection: close makes Go's HTTP/2 server do so): each
// path connects again for its next request instead of being given up.
func TestFetchGoAway(t *testing.T) {
	body := object(3<<20, 16)
	ts := newTestServer(t, body, false)
	ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Range") != "bytes=0-" {
			w.Header().Set("Connection", "close")
		}
		return false
	}
	res := fetchOK(t, ts.options(t, 2), body)
	t.Logf("%+v", res)
	if res.Fallback != "" || res.Paths[0].Error != "" || res.Paths[1].Error != "" || res.Moves == 0 {
		t.Errorf("%+v", res)
	}
}

// θ2: the secondary path is never given more than SecondaryCap bytes, however much faster it is.
// With the size known, the secondary's first request is already within the cap.
func TestFetchSecondaryCap(t *testing.T) {
	for _, known := range []bool{false, true} {
		t.Run(map[bool]string{false: "size unknown", true: "size known"}[known], func(t *testing.T) {
			body := object(3<<20, 17)
			ts := newTestServer(t, body, false)
			tail := newSignal()
			var mu sync.Mutex
			var firstRange string
			ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
				if isFirst(r) {
					if known {
						tail.wait() // the secondary asks before the first response
					}
					return false
				}
				mu.Lock()
				if firstRange == "" {
					firstRange = r.Header.Get("Range")
				}
				mu.Unlock()
				tail.fire()
				return false
			}
			o := ts.options(t, 2)
			o.SecondaryCap = 400 << 10
			if known {
				o.Size = int64(len(body))
			}
			res := fetchOK(t, o, body)
			if res.Paths[1].Bytes > o.SecondaryCap || res.Paths[1].Bytes == 0 {
				t.Errorf("secondary carried %d bytes, cap %d", res.Paths[1].Bytes, o.SecondaryCap)
			}
			mu.Lock()
			defer mu.Unlock()
			var first, last int64
			if _, err := fmt.Sscanf(firstRange, "bytes=%d-%d", &first, &last); err != nil || last-first+1 > o.SecondaryCap {
				t.Errorf("the secondary's first request %q is beyond its cap (%v)", firstRange, err)
			}
		})
	}
}

// With priors (the host's measurements of the links), the first split follows the rates instead of halving: the
// faster path gets the larger share from the start, and fewer ranges move afterwards.
func TestFetchPriors(t *testing.T) {
	body := object(3<<20, 18)
	ts := newTestServer(t, body, false)
	o := ts.options(t, 2)
	o.Priors = map[string]Prior{"a": {BPS: 24e6, RTT: 2 * time.Millisecond}, "b": {BPS: 40e6, RTT: 2 * time.Millisecond}}
	res := fetchOK(t, o, body)
	t.Logf("%d moves, %+v", res.Moves, res.Paths)

	// What the scheduler reads of a path before its own estimates exist: the prior, not "unknown" (which would
	// halve the object).
	e := &engine{o: o}
	for _, name := range []string{"a", "b"} {
		v := e.view(&pathState{spec: Path{Name: name}, c: &h1conn{}})
		if want := o.Priors[name]; v.BW != want.BPS/8 || v.RTT != want.RTT {
			t.Errorf("%s: view %+v, prior %+v", name, v, want)
		}
	}
	if v := e.view(&pathState{spec: Path{Name: "c"}, c: &h1conn{}}); v.BW != 0 || v.RTT != 0 {
		t.Errorf("a path without a prior: %+v", v)
	}
}

// The primary's first request is never answered (its path goes silent before the first response): after
// PathTimeout the primary is given up and the first request goes again over the secondary, which fetches the whole
// object. Without a size there was nothing for the secondary to do, and the download waited for ever.
func TestFetchFirstResponseNeverComes(t *testing.T) {
	protos(t, func(t *testing.T, h1 bool) {
		body := object(1<<20, 19)
		ts := newTestServer(t, body, h1)
		ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
			if isFirst(r) && clientIP(r) == "127.0.0.1" {
				<-r.Context().Done() // until the client gives the path up
				return true
			}
			return false
		}
		o := ts.options(t, 2)
		o.PathTimeout = 500 * time.Millisecond
		res := fetchOK(t, o, body)
		if !strings.Contains(res.Paths[0].Error, "no data") || res.Paths[1].Bytes != int64(len(body)) {
			t.Errorf("%+v", res.Paths)
		}
	})
}
