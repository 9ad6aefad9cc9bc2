package origin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"io"
	"net/http"
	"testing"
	"time"
)

// The large files answer ranges and If-Range as a download client needs, from the plain-TCP listener too.
func TestDownloadFiles(t *testing.T) {
	srv, err := New(Config{Listen: "127.0.0.1:0", ListenTCP: "127.0.0.1:0", Names: []string{"127.0.0.1"}, Seed: 1, MPTCP: true, ErrorLog: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	files := DownloadFiles()
	if len(files) != 3 || files[0].Bytes != 1<<20 || files[2].Bytes != 32<<20 {
		t.Fatalf("files %+v", files)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	for _, ln := range []string{"h2", "tcp"} {
		base := "https://" + srv.Addr(ln).String()
		get := func(hdr map[string]string) (*http.Response, []byte) {
			req, _ := http.NewRequest("GET", base+files[0].Path, nil)
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, b
		}
		resp, whole := get(nil)
		sum := sha256.Sum256(whole)
		if resp.StatusCode != 200 || hex.EncodeToString(sum[:]) != files[0].SHA256 || resp.ProtoMajor != 2 ||
			resp.Header.Get("Repr-Digest") == "" || resp.Header.Get("Accept-Ranges") != "bytes" {
			t.Fatalf("%s: whole file: %d %s %v", ln, resp.StatusCode, resp.Proto, resp.Header)
		}
		etag := resp.Header.Get("ETag")
		resp, part := get(map[string]string{"Range": "bytes=1000-1999", "If-Range": etag})
		if resp.StatusCode != 206 || resp.Header.Get("Content-Range") != "bytes 1000-1999/1048576" || !bytes.Equal(part, whole[1000:2000]) {
			t.Errorf("%s: range: %d %v", ln, resp.StatusCode, resp.Header)
		}
		if resp, _ := get(map[string]string{"Range": "bytes=1000-1999", "If-Range": `"other"`}); resp.StatusCode != 200 {
			t.Errorf("%s: If-Range with another ETag: %d, want the whole file", ln, resp.StatusCode)
		}
	}
	// The tcp listener is plain TCP even though the server listens with MPTCP elsewhere (where the kernel has it).
	for _, ln := range srv.running {
		proto, err := listenerProtocol(ln.ln.TCPListener)
		if err != nil {
			t.Skipf("SO_PROTOCOL: %v", err)
		}
		if ln.name == "tcp" && proto != 6 {
			t.Errorf("tcp listener has protocol %d, want 6 (TCP)", proto)
		}
	}
}
