package origin

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/e2e/corpus"
)

// syncBuffer is a log sink the test can read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Bytes(), err)
		}
		out = append(out, m)
	}
	return out
}

// TestServeLoopback runs the three listeners on loopback. MPTCP is asked for but not
// required: without it the kernel gives TCP sockets and the log says so.
func TestServeLoopback(t *testing.T) {
	var logBuf syncBuffer
	srv, err := New(Config{
		Listen: "127.0.0.1:0", ListenH1: "127.0.0.1:0", ListenHTTP: "127.0.0.1:0",
		Names: []string{"localhost", "127.0.0.1"}, ThirdParty: "third.test",
		Paths: map[netip.Addr]string{netip.MustParseAddr("127.0.0.1"): "lo"},
		Seed:  1, MPTCP: true, Log: &logBuf, ErrorLog: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	start, err := srv.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	shut := false
	shutdown := func() {
		if !shut {
			shut = true
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		}
	}
	t.Cleanup(shutdown)

	h2Port := srv.Addr("h2").(*net.TCPAddr).Port
	h1Port := srv.Addr("h1").(*net.TCPAddr).Port
	if start.SPKI != srv.Cert.SPKI || start.SPKIThird != srv.Third.SPKI || start.SPKIList != start.SPKI+","+start.SPKIThird ||
		start.ThirdParty["h2"] != "https://third.test:"+itoa(uint16(h2Port)) ||
		start.ThirdParty["http"] == "" || start.Pages != len(srv.Corpus.Pages) {
		t.Errorf("start line %+v", start)
	}

	// The client trusts the certificates only through the SPKI hashes the server printed,
	// and resolves the second origin's name to loopback.
	var seenSPKI string
	var dialer net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			// Every name is the loopback server: the second origin and the sites' own host names.
			_, port, _ := net.SplitHostPort(addr)
			return dialer.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, VerifyConnection: func(cs tls.ConnectionState) error {
			sum := sha256.Sum256(cs.PeerCertificates[0].RawSubjectPublicKeyInfo)
			seenSPKI = base64.StdEncoding.EncodeToString(sum[:])
			return nil
		}},
		ForceAttemptHTTP2: true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	do := func(method, url, policy string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		if policy != "" {
			req.Header.Set(PolicyHeaderName, policy)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}

	page, _ := srv.Corpus.Page("wiki")
	h2 := "https://" + srv.Addr("h2").String()
	h1 := "https://" + srv.Addr("h1").String()
	plain := "http://" + srv.Addr("http").String()

	resp, body := do("GET", h2+page.Path(), "v=1, mp=?1, t1=256, dl=3")
	if resp.Proto != "HTTP/2.0" || len(body) != page.Objects[0].Size || resp.Header.Get("Cache-Control") != "no-store" ||
		resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("h2 landing: %s, %d bytes (want %d), headers %v", resp.Proto, len(body), page.Objects[0].Size, resp.Header)
	}
	if seenSPKI != start.SPKI {
		t.Errorf("handshake key %s, start line says %s", seenSPKI, start.SPKI)
	}
	var third *corpus.Object
	for i := range page.Objects {
		if page.Objects[i].ThirdParty {
			third = &page.Objects[i]
			break
		}
	}
	if third == nil {
		t.Fatal("wiki has no third-party object")
	}
	if want := `"https://third.test:` + itoa(uint16(h2Port)) + third.Path + `"`; !bytes.Contains(body, []byte(want)) {
		t.Errorf("h2 landing page does not reference %s", want)
	}
	resp, body = do("GET", h1+page.Path(), "")
	if resp.Proto != "HTTP/1.1" || len(body) != page.Objects[0].Size {
		t.Errorf("h1 port answered %s with %d bytes", resp.Proto, len(body))
	}
	if want := `"https://third.test:` + itoa(uint16(h1Port)) + third.Path + `"`; !bytes.Contains(body, []byte(want)) {
		t.Errorf("h1 landing page does not reference %s", want)
	}
	resp, body = do("GET", "https://third.test:"+itoa(uint16(h2Port))+third.Path, "")
	if seenSPKI != start.SPKIThird || resp.Proto != "HTTP/2.0" {
		t.Errorf("second origin answered %s with key %s, want %s", resp.Proto, seenSPKI, start.SPKIThird)
	}
	if len(body) != third.Size || resp.Header.Get("Content-Type") != third.ContentType || resp.Header.Get("Timing-Allow-Origin") != "*" {
		t.Errorf("object: %d bytes, headers %v", len(body), resp.Header)
	}
	resp, body = do("HEAD", plain+third.Path, "")
	if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(third.Size) {
		t.Errorf("HEAD over http: %d, %d body bytes, length %d", resp.StatusCode, len(body), resp.ContentLength)
	}
	if resp, body = do("GET", plain+"/healthz", "mp=?2"); resp.StatusCode != 200 || string(body) != "ok\n" {
		t.Errorf("healthz: %d %q", resp.StatusCode, body)
	}
	if resp, _ = do("GET", h2+"/p/nope/", ""); resp.StatusCode != 404 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("unknown page: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ = do("POST", h2+page.Path(), ""); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, body = do("GET", h2+"/", ""); resp.StatusCode != 200 || !bytes.Contains(body, []byte(`href="/p/e3-2k/"`)) {
		t.Errorf("index: %d", resp.StatusCode)
	}
	// A site's own pages are at its host name, "/" included, under the one certificate that covers every site.
	list, _ := srv.Corpus.Page("news-list")
	resp, body = do("GET", "https://news.origin.test:"+itoa(uint16(h2Port))+"/", "")
	if resp.StatusCode != 200 || len(body) != list.Objects[0].Size || !bytes.Contains(body, []byte("<title>news-list</title>")) ||
		resp.TLS.PeerCertificates[0].VerifyHostname("news.origin.test") != nil || seenSPKI != start.SPKI {
		t.Errorf("news.origin.test/: %d, %d bytes (want %d)", resp.StatusCode, len(body), list.Objects[0].Size)
	}
	if resp, _ = do("GET", "https://shop.origin.test:"+itoa(uint16(h2Port))+"/article/1", ""); resp.StatusCode != 404 {
		t.Errorf("another site's path on shop.origin.test: %d, want 404", resp.StatusCode)
	}
	tr.CloseIdleConnections()
	shutdown()

	lines := logBuf.lines(t)
	if lines[0]["type"] != "start" || lines[len(lines)-1]["type"] != "stop" {
		t.Errorf("log starts with %v and ends with %v", lines[0]["type"], lines[len(lines)-1]["type"])
	}
	var reqs, conns int
	for _, l := range lines {
		switch l["type"] {
		case "request":
			reqs++
			pol := l["mp_policy"].(map[string]any)
			switch l["path"] {
			case page.Path():
				if l["method"] != "GET" {
					break
				}
				if l["listener"] == "h2" && (pol["raw"] != "v=1, mp=?1, t1=256, dl=3" || pol["ok"] != true || pol["t1"] != 256.0 || l["alpn"] != "h2") {
					t.Errorf("h2 landing line %v", l)
				}
				if l["listener"] == "h1" && (pol["present"] != false || l["alpn"] != "http/1.1" || l["proto"] != "HTTP/1.1") {
					t.Errorf("h1 landing line %v", l)
				}
			case "/healthz":
				if pol["raw"] != "mp=?2" || pol["dict"] != false || pol["error"] == "" {
					t.Errorf("healthz policy %v", pol)
				}
			}
			subs, _ := l["subflows"].([]any)
			if len(subs) == 0 || subs[0].(map[string]any)["path"] != "lo" {
				t.Errorf("request without subflows or path name: %v", l)
			}
		case "conn":
			conns++
			if p := l["so_protocol"].(float64); (p == ipprotoMPTCP) != (l["mptcp"] == true) || (p != ipprotoMPTCP && p != 6) {
				t.Errorf("connection with so_protocol %v, mptcp %v", p, l["mptcp"])
			}
			if l["requests"].(float64) > 0 && l["subflow_bytes"].(float64) == 0 {
				t.Errorf("connection carried nothing: %v", l)
			}
		}
	}
	if reqs != 10 || conns < 4 {
		t.Errorf("%d request lines and %d connection lines, want 10 and at least 4", reqs, conns)
	}
}

// builtinPages: 6 e3 pages, 25 Table 1 pages, 10 pages of the mixed sites.
const builtinPages = 6 + 25 + 10

func TestMainCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"corpus", "--list", "--json", "--seed", "3"}, &out, &errOut); code != 0 {
		t.Fatalf("corpus --list --json: exit %d: %s", code, errOut.String())
	}
	var m corpus.Manifest
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m.Seed != 3 || len(m.Pages) != builtinPages {
		t.Fatalf("manifest: %v, seed %d, %d pages", err, m.Seed, len(m.Pages))
	}
	// A researcher's corpus file adds its site; a bad one is refused with its name in the message.
	dir := t.TempDir()
	good := filepath.Join(dir, "mine.json")
	os.WriteFile(good, []byte(`{"set": "mine", "sites": [{"host": "blog.example.test", "source": "test",
		"pages": [{"name": "blog-post", "path": "/post/1", "bytes": 40000, "objects": {"html": 1, "image": 3}}]}]}`), 0o644)
	out.Reset()
	if code := Main([]string{"corpus", "--list", "--json", "--corpus", good}, &out, &errOut); code != 0 {
		t.Fatalf("--corpus: exit %d: %s", code, errOut.String())
	}
	m = corpus.Manifest{}
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || len(m.Pages) != builtinPages+1 {
		t.Fatalf("with --corpus: %v, %d pages", err, len(m.Pages))
	}
	if p := m.Pages[len(m.Pages)-1]; p.Name != "blog-post" || p.Host != "blog.example.test" || p.Path != "/post/1" || p.Set != "mine" ||
		p.Proto != corpus.ProtoH2 || p.Bytes != 40000 || p.Objects != 4 {
		t.Errorf("added page %+v", p)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"sites": [{"host": "origin.test", "source": "x", "pages": []}]}`), 0o644)
	errOut.Reset()
	if code := Main([]string{"corpus", "--list", "--corpus", bad}, io.Discard, &errOut); code != 1 || !strings.Contains(errOut.String(), "bad.json") {
		t.Errorf("bad corpus file: exit %d, %q", code, errOut.String())
	}
	out.Reset()
	if code := Main([]string{"corpus", "--list"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "news-1") {
		t.Errorf("corpus --list: exit %d", code)
	}
	for _, args := range [][]string{
		{"corpus"},
		{"corpus", "--list", "extra"},
		{"--host", "origin.test"},
		{"--paths", "10.0.0.1"},
		{"--bogus"},
		{"serve", "unexpected"},
	} {
		errOut.Reset()
		if code := Main(args, io.Discard, &errOut); code != 2 || errOut.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut.String())
		}
	}
	long := strings.Repeat("x", corpus.MaxOriginLen)
	if code := Main([]string{"--listen", "127.0.0.1:0", "--listen-h1", "", "--third-party", long}, io.Discard, &errOut); code != 1 {
		t.Errorf("overlong third-party name: exit %d", code)
	}
}

func TestCertificate(t *testing.T) {
	c, err := NewCertificate([]string{"origin.test", "10.200.3.2", "origin.test", ""})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(c.PEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.VerifyHostname("origin.test"); err != nil {
		t.Error(err)
	}
	if err := cert.VerifyHostname("10.200.3.2"); err != nil {
		t.Error(err)
	}
	if len(cert.DNSNames) != 1 || len(cert.IPAddresses) != 1 {
		t.Errorf("names %v %v", cert.DNSNames, cert.IPAddresses)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	if c.SPKI != base64.StdEncoding.EncodeToString(sum[:]) {
		t.Error("SPKI hash does not match the certificate")
	}
	if _, err := NewCertificate(nil); err == nil {
		t.Error("certificate without names")
	}
	path := filepath.Join(t.TempDir(), "cert.pem")
	if code := Main([]string{"--listen", "", "--listen-h1", "", "--cert-out", path}, io.Discard, io.Discard); code != 1 {
		t.Errorf("no listeners: exit %d, want 1", code)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.HasPrefix(b, []byte("-----BEGIN CERTIFICATE-----")) {
		t.Errorf("--cert-out wrote %q, %v", b, err)
	}
}
