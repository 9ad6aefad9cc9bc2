package mph2

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serveUnstated answers every request with the whole body, in chunks and without a Content-Length or range
// support: a response that does not say how large it is.
func serveUnstated(body []byte, sent *atomic.Int64) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("ETag", `"v1"`)
		f := w.(http.Flusher)
		for off := 0; off < len(body); off += 32 << 10 {
			n, err := w.Write(body[off:min(off+32<<10, len(body))])
			sent.Add(int64(n))
			if err != nil {
				return true
			}
			f.Flush()
		}
		return true
	}
}

// The browser announced 1 MB; the server sends 8 MB without saying how much. The download must fail, publish
// nothing and never write much more than the announced size.
func TestFetchUnstatedLengthBounded(t *testing.T) {
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			body := object(8<<20, 31)
			ts := newTestServer(t, body, proto == "http/1.1")
			var sent atomic.Int64
			ts.hook = serveUnstated(body, &sent)
			o := ts.options(t, 1)
			o.HTTP1 = proto == "http/1.1"
			o.Size = 1 << 20
			var most atomic.Int64
			o.ProgressEvery = 20 * time.Millisecond
			o.Progress = func(p Progress) {
				if p.Received > most.Load() {
					most.Store(p.Received)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := Fetch(ctx, o)
			if err == nil {
				fi, _ := os.Stat(res.File)
				t.Fatalf("published %s of %d bytes; the browser announced %d", res.File, fi.Size(), o.Size)
			}
			if !strings.Contains(err.Error(), "announced") {
				t.Errorf("err %v, want it to name the announced size", err)
			}
			noneLeft(t, o.Out, o.Out+PartSuffix, o.Out+SidecarSuffix)
			if m := most.Load(); m > o.Size {
				t.Errorf("%d bytes were written for an announced %d", m, o.Size)
			}
			t.Logf("server sent %d bytes before the download stopped", sent.Load())
		})
	}
}

// A response that says its size is still bounded by the announced one (a server that says 8 MB fails before it
// writes), and one that ends below the announced size without saying its size fails too.
func TestFetchUnstatedLengthShort(t *testing.T) {
	body := object(512<<10, 32)
	ts := newTestServer(t, body, true)
	var sent atomic.Int64
	ts.hook = serveUnstated(body, &sent)
	o := ts.options(t, 1)
	o.HTTP1 = true
	o.Size = 1 << 20
	if _, err := Fetch(context.Background(), o); err == nil || !strings.Contains(err.Error(), "announced") {
		t.Fatalf("a 512 KiB response for an announced 1 MiB: err %v", err)
	}
	noneLeft(t, o.Out, o.Out+PartSuffix, o.Out+SidecarSuffix)
}

// planted puts a symlink at path to a file of the user's (someone else's doing, in a folder others can write to),
// and returns a check that the user's file is unchanged.
func planted(t *testing.T, path string) (unchanged func()) {
	t.Helper()
	v := filepath.Join(t.TempDir(), "bashrc")
	const precious = "the user's own file\n"
	if err := os.WriteFile(v, []byte(precious), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(v, path); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		b, err := os.ReadFile(v)
		if err != nil || string(b) != precious {
			t.Errorf("the user's file was changed through a planted symlink: %d bytes now, starting %.60q (%v)", len(b), b, err)
		}
	}
}

// stopAfter stops the download (cancels its context) once more than n bytes are on disk.
func stopAfter(o *Options, n int64) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	o.ProgressEvery = 50 * time.Millisecond
	o.Progress = func(p Progress) {
		if p.Received > n {
			cancel()
		}
	}
	return ctx
}

// In a download folder others can write to, someone plants NAME.mpsurf-part as a symlink to a file of the user's.
// A new download must not truncate or write it.
func TestFetchPlantedPartSymlink(t *testing.T) {
	body := object(300<<10, 33)
	ts := newTestServer(t, body, false)
	o := ts.options(t, 1)
	part, _ := PartPaths(o.Out)
	unchanged := planted(t, part)
	res, err := Fetch(context.Background(), o)
	unchanged()
	if err == nil {
		if fi, err := os.Lstat(res.File); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("published %s: %v %v", res.File, fi, err)
		}
	}
}

// The same with a sidecar that claims the planted part file is the download half done: a resume must not write
// into the file the symlink names.
func TestFetchResumePlantedPartSymlink(t *testing.T) {
	body := object(1<<20, 34)
	ts := newTestServer(t, body, false)
	o := ts.options(t, 1)
	part, sc := PartPaths(o.Out)
	unchanged := planted(t, part)
	data, _ := json.Marshal(&Sidecar{Version: sidecarFormat, URL: o.URL, Size: int64(len(body)), ETag: `"v1"`, Done: Spans{{0, 10}}})
	if err := os.WriteFile(sc, data, 0o600); err != nil {
		t.Fatal(err)
	}
	o.Resume = true
	Fetch(context.Background(), o)
	unchanged()
}

// The sidecar's temporary file planted as a symlink: writing the sidecar must not follow it.
func TestFetchPlantedSidecarTempSymlink(t *testing.T) {
	body := object(4<<20, 35)
	ts := newTestServer(t, body, false)
	o := ts.options(t, 2)
	_, sc := PartPaths(o.Out)
	unchanged := planted(t, sc+".tmp")
	ctx := stopAfter(&o, 1<<20)
	if _, err := Fetch(ctx, o); !errors.Is(err, ErrStopped) {
		t.Fatalf("err %v, want ErrStopped", err)
	}
	unchanged()
	if s, err := ReadSidecar(o.Out); err != nil || s.Done.Total() == 0 {
		t.Errorf("no sidecar kept for the stopped download: %+v %v", s, err)
	}
}

// Multipath paused mid-way (Options.DropSecondary): the second path stops at once and the first finishes the file.
func TestFetchDropSecondary(t *testing.T) {
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			body := object(6<<20, 36)
			ts := newTestServer(t, body, proto == "http/1.1")
			o := ts.options(t, 2)
			o.HTTP1 = proto == "http/1.1"
			drop := make(chan struct{})
			o.DropSecondary = drop
			var at atomic.Int64
			o.ProgressEvery = 20 * time.Millisecond
			o.Progress = func(p Progress) {
				if b := p.Paths[1].Bytes; b > 512<<10 && at.Load() == 0 {
					at.Store(b)
					close(drop)
				}
			}
			res := fetchOK(t, o, body)
			if at.Load() == 0 {
				t.Fatal("the second path never carried 512 KiB: the drop was not exercised")
			}
			after := res.Paths[1].Bytes - at.Load()
			t.Logf("second path: %d bytes at the drop, %d after; first path %d; %s", at.Load(), after, res.Paths[0].Bytes, res.Fallback)
			if after > 256<<10 {
				t.Errorf("the second path carried %d bytes after it was dropped", after)
			}
			if !strings.Contains(res.Fallback, "stopped") {
				t.Errorf("fallback %q", res.Fallback)
			}
		})
	}
}
