package origin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpsurf/mpsurf/e2e/corpus"

	"github.com/mpsurf/mpsurf/native-host/netns"
)

// Config says what to serve where. Empty listen addresses are left off.
type Config struct {
	Listen     string // HTTPS, ALPN h2 and http/1.1
	ListenH1   string // HTTPS, ALPN http/1.1 only: lets a client force HTTP/1.1 per load
	ListenHTTP string // plain HTTP/1.1
	// ListenTCP is HTTPS (ALPN h2 and http/1.1) on plain TCP whatever MPTCP says: a server as nearly every
	// website is, for clients that bring their own multipath (MP-H2, segmented downloaders).
	ListenTCP string
	// Names are the certificate's DNS names and IP literals.
	Names []string
	// ThirdParty is the host name (or IP) of the second origin the landing pages point
	// their third-party objects at, on the same port and scheme as the page; "" keeps
	// every object first-party. It gets a certificate of its own (chosen by SNI): with
	// one certificate for both names at one address, Chromium would coalesce the second
	// origin's HTTP/2 requests onto the first origin's connection.
	ThirdParty string
	Paths      map[netip.Addr]string // subflow remote address -> client interface name
	Seed       uint64
	// Corpus holds corpus files (corpus.SiteFile) whose sites are served beside the built-in pages.
	Corpus   []*corpus.SiteFile
	MPTCP    bool      // listen with IPPROTO_MPTCP (falls back to TCP per connection)
	Log      io.Writer // JSONL; nil discards
	ErrorLog io.Writer // net/http's own errors (TLS handshake failures ...); nil = stderr
	// CC is the TCP congestion control of every connection ("cubic", "bbr", ...; "" = the namespace's default).
	// Set on the listener, it is inherited by each accepted socket and, with MPTCP, by every subflow.
	CC string
}

// Server serves the corpus and logs every response and connection.
type Server struct {
	cfg      Config
	Corpus   *corpus.Corpus
	Cert     *Certificate
	Third    *Certificate // the second origin's, nil without one
	log      *jsonLog
	nextConn atomic.Uint64
	running  []*listener
	wg       sync.WaitGroup
	errMu    sync.Mutex
	serveErr error
}

type listener struct {
	name   string
	tls    bool
	ln     *trackingListener
	srv    *http.Server
	origin string // the second origin as seen from this listener
}

// New builds the corpus and the certificate. The certificate covers cfg.Names and every site's host name.
func New(cfg Config) (*Server, error) {
	c, err := corpus.New(cfg.Seed, cfg.Corpus...)
	if err != nil {
		return nil, err
	}
	cert, err := NewCertificate(append(append([]string{}, cfg.Names...), c.Hosts()...))
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, Corpus: c, Cert: cert}
	if cfg.ThirdParty != "" {
		for _, n := range append(append([]string{}, cfg.Names...), c.Hosts()...) {
			if n == cfg.ThirdParty {
				return nil, fmt.Errorf("second origin %q is also a first-party name", n)
			}
		}
		if s.Third, err = NewCertificate([]string{cfg.ThirdParty}); err != nil {
			return nil, err
		}
	}
	if cfg.Log != nil {
		s.log = &jsonLog{w: cfg.Log}
	}
	return s, nil
}

// StartLine is the first log line; Start also returns it (the command prints it).
type StartLine struct {
	Type       string            `json:"type"` // "start"
	Time       int64             `json:"time_ns"`
	SPKI       string            `json:"spki_sha256"` // the first-party certificate's
	SPKIThird  string            `json:"spki_sha256_third_party,omitempty"`
	SPKIList   string            `json:"spki_list"`   // both, for --ignore-certificate-errors-spki-list
	Listeners  map[string]string `json:"listeners"`   // name -> bound address
	ThirdParty map[string]string `json:"third_party"` // listener -> second origin
	Names      []string          `json:"names"`
	Seed       uint64            `json:"seed"`
	Pages      int               `json:"pages"`
	MPTCP      bool              `json:"mptcp"`
}

// Start binds every configured listener, makes all bodies, then serves in the background.
func (s *Server) Start(ctx context.Context) (StartLine, error) {
	specs := []struct {
		name, addr string
		tls, h2    bool
		tcpOnly    bool
	}{
		{"h2", s.cfg.Listen, true, true, false},
		{"h1", s.cfg.ListenH1, true, false, false},
		{"http", s.cfg.ListenHTTP, false, false, false},
		{"tcp", s.cfg.ListenTCP, true, true, true},
	}
	errLog := s.cfg.ErrorLog
	if errLog == nil {
		errLog = os.Stderr
	}
	var origins []string
	for _, sp := range specs {
		if sp.addr == "" {
			continue
		}
		var lc net.ListenConfig
		lc.SetMultipathTCP(s.cfg.MPTCP && !sp.tcpOnly)
		if s.cfg.CC != "" {
			lc.Control = netns.CongestionControl(s.cfg.CC)
		}
		l, err := lc.Listen(ctx, "tcp", sp.addr)
		if err != nil {
			s.closeListeners()
			return StartLine{}, fmt.Errorf("listen %s (%s): %w", sp.addr, sp.name, err)
		}
		ln := &listener{name: sp.name, tls: sp.tls, ln: &trackingListener{TCPListener: l.(*net.TCPListener), srv: s, name: sp.name}}
		s.running = append(s.running, ln)
		if s.cfg.ThirdParty != "" {
			scheme := "http"
			if sp.tls {
				scheme = "https"
			}
			ln.origin = originURL(scheme, s.cfg.ThirdParty, l.Addr().(*net.TCPAddr).Port)
			if err := corpus.CheckOrigin(ln.origin); err != nil {
				s.closeListeners()
				return StartLine{}, err
			}
			origins = append(origins, ln.origin)
		}
		var protos http.Protocols
		protos.SetHTTP1(true)
		protos.SetHTTP2(sp.h2)
		ln.srv = &http.Server{
			Handler:           s.handler(ln),
			Protocols:         &protos,
			ReadHeaderTimeout: 30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          log.New(errLog, "origin "+sp.name+": ", log.LstdFlags),
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				return context.WithValue(ctx, connKey{}, c)
			},
		}
		if sp.tls {
			// crypto/tls serves the first certificate matching the client's SNI, the first
			// one when there is none.
			certs := []tls.Certificate{s.Cert.TLS}
			if s.Third != nil {
				certs = append(certs, s.Third.TLS)
			}
			ln.srv.TLSConfig = &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS12}
		}
	}
	if len(s.running) == 0 {
		return StartLine{}, errors.New("no listen address")
	}
	// With a plain-TCP listener (the downloads grid's), the large files (files.go) are made in the background now
	// rather than on their first request, which would otherwise pay for all of them. Other servers make them only
	// if asked: 46 MB of pseudo-random bytes is CPU that timing tests beside them should not lose.
	if s.cfg.ListenTCP != "" {
		go downloadFiles()
	}
	if err := s.Corpus.Materialize(origins...); err != nil {
		s.closeListeners()
		return StartLine{}, err
	}
	start := StartLine{
		Type: "start", Time: time.Now().UnixNano(), SPKI: s.Cert.SPKI, SPKIList: s.Cert.SPKI,
		Listeners: map[string]string{}, ThirdParty: map[string]string{},
		Names: append(append([]string{}, s.Cert.TLS.Leaf.DNSNames...), ipStrings(s.Cert.TLS.Leaf.IPAddresses)...),
		Seed:  s.cfg.Seed, Pages: len(s.Corpus.Pages), MPTCP: s.cfg.MPTCP,
	}
	if s.Third != nil {
		start.SPKIThird = s.Third.SPKI
		start.SPKIList += "," + s.Third.SPKI
		start.Names = append(start.Names, s.cfg.ThirdParty)
	}
	for _, ln := range s.running {
		start.Listeners[ln.name] = ln.ln.Addr().String()
		if ln.origin != "" {
			start.ThirdParty[ln.name] = ln.origin
		}
	}
	s.log.write(start)
	for _, ln := range s.running {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			var err error
			if ln.tls {
				err = ln.srv.ServeTLS(ln.ln, "", "")
			} else {
				err = ln.srv.Serve(ln.ln)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				s.errMu.Lock()
				s.serveErr = errors.Join(s.serveErr, fmt.Errorf("%s: %w", ln.name, err))
				s.errMu.Unlock()
			}
		}()
	}
	return start, nil
}

// Addr is the bound address of listener name ("h2", "h1" or "http"), or nil.
func (s *Server) Addr(name string) net.Addr {
	for _, ln := range s.running {
		if ln.name == name {
			return ln.ln.Addr()
		}
	}
	return nil
}

func (s *Server) closeListeners() {
	for _, ln := range s.running {
		ln.ln.Close()
	}
	s.running = nil
}

// Shutdown stops accepting, lets open responses finish until ctx ends, closes every
// connection (each logs its line) and writes a "stop" line.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	for _, ln := range s.running {
		if err := ln.srv.Shutdown(ctx); err != nil {
			ln.srv.Close()
			errs = append(errs, fmt.Errorf("%s: %w", ln.name, err))
		}
	}
	s.wg.Wait()
	s.log.write(map[string]any{"type": "stop", "time_ns": time.Now().UnixNano()})
	s.errMu.Lock()
	errs = append(errs, s.serveErr)
	s.errMu.Unlock()
	return errors.Join(errs...)
}

func originURL(scheme, host string, port int) string {
	if (scheme == "https" && port == 443) || (scheme == "http" && port == 80) {
		if strings.Contains(host, ":") {
			return scheme + "://[" + host + "]"
		}
		return scheme + "://" + host
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port))
}

func ipStrings(ips []net.IP) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

type connKey struct{}

func connOf(r *http.Request) *trackedConn {
	v := r.Context().Value(connKey{})
	if tc, ok := v.(*tls.Conn); ok {
		v = tc.NetConn()
	}
	c, _ := v.(*trackedConn)
	return c
}

func (s *Server) logLine(v any) { s.log.write(v) }

func (s *Server) logLines(ls []RequestLine) {
	for _, l := range ls {
		s.log.write(l)
	}
}

// subflowLines turns counters into log lines: since start, or totals when start is nil.
func (s *Server) subflowLines(order []uint32, now, start map[uint32]subflowCounters) ([]SubflowLine, uint64) {
	lines := make([]SubflowLine, 0, len(order))
	var total uint64
	for _, id := range order {
		n, st := now[id], start[id]
		l := SubflowLine{
			ID: id, Local: n.Local.String(), Remote: n.Remote.String(), Path: s.cfg.Paths[n.Remote.Addr()],
			BytesAcked: sub(n.Acked, st.Acked), BytesSent: sub(n.Sent, st.Sent), BytesRetrans: sub(n.Retrans, st.Retrans),
		}
		total += l.BytesSent
		lines = append(lines, l)
	}
	return lines, total
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) handler(ln *listener) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := RequestLine{
			Type: "request", Time: time.Now().UnixNano(), Listener: ln.name, Remote: r.RemoteAddr,
			Proto: r.Proto, Method: r.Method, Host: r.Host, Path: r.URL.Path, Query: r.URL.RawQuery, Policy: ReadPolicy(r.Header),
		}
		if r.TLS != nil {
			line.ALPN = r.TLS.NegotiatedProtocol
		}
		c := connOf(r)
		var resp *response
		if c != nil {
			line.Conn = c.id
			resp = c.begin(line)
		}
		cw := &countingWriter{ResponseWriter: w}
		s.serve(cw, r, ln.origin)
		// Push everything to the socket before taking the byte count the accounting
		// waits for.
		http.NewResponseController(cw).Flush()
		line.End = time.Now().UnixNano()
		line.Status, line.Bytes = cw.status, cw.n
		if resp == nil {
			s.logLine(line)
			return
		}
		resp.line = line
		c.finish(resp)
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, origin string) {
	h := w.Header()
	h.Set("Cache-Control", "no-store") // every load is a cold load
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if name, ok := strings.CutPrefix(r.URL.Path, DownloadPrefix); ok {
		serveDownload(w, r, name) // files.go
		return
	}
	var body []byte
	ctype := "text/html; charset=utf-8"
	// A site's own pages first (a site may have a page at "/"), then the paths every host serves.
	p, o, found := s.Corpus.LookupHost(hostOnly(r.Host), r.URL.Path)
	switch {
	case found:
	case r.URL.Path == "/healthz":
		body, ctype = []byte("ok\n"), "text/plain; charset=utf-8"
	case r.URL.Path == "/":
		body = s.index()
	default:
		http.NotFound(w, r)
		return
	}
	if found {
		if o.Index == 0 {
			var err error
			if body, err = s.Corpus.Landing(p, origin); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		} else {
			body = s.Corpus.Body(p, o)
		}
		ctype = o.ContentType
		// Lets the browser's Resource Timing report sizes of third-party objects too.
		h.Set("Timing-Allow-Origin", "*")
	}
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(body)
	}
}

// hostOnly is a Host header without its port, lower-cased.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.ToLower(h)
}

func (s *Server) index() []byte {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>MPSurf testbed origin</title></head><body>\n<ul>\n")
	for _, p := range s.Corpus.Pages {
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a> %d bytes, %d objects, at https://%s%s (%s)</li>\n",
			html.EscapeString("/p/"+p.Name+"/"), html.EscapeString(p.Name), p.Bytes(), len(p.Objects), html.EscapeString(p.Host),
			html.EscapeString(p.Path()), html.EscapeString(p.Source))
	}
	b.WriteString("</ul>\n</body></html>\n")
	return []byte(b.String())
}
