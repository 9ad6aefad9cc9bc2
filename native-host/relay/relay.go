package relay

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Upstream is the user's proxy.
type Upstream struct {
	Addr     string `json:"server"` // host:port of its TLS port
	User     string `json:"user"`
	Password string `json:"password"`
	// Pin is the base64 SHA-256 of the proxy certificate's public key (what mpsurf-proxy-setup prints); with a pin
	// the certificate may be self-signed, without one it must verify against the system's roots.
	Pin string `json:"pin,omitempty"`
}

// Policy is an origin's decision as the proxy leg carries it out.
type Policy struct {
	Multipath bool
	Theta1    int64
	Theta2    *int64
	Group     uint32 // the θ1 group of the page the tunnel serves (actuate.ConnPolicy.Group); 0: its own
}

// Defaults.
const (
	// DefaultBudget is how long the browser's CONNECT may wait for the proxy's answer before the relay gives up
	// and the browser falls back to DIRECT. One second: the bound for a dead or slow proxy, and several
	// round trips of even a poor cellular or WiFi path (the testbed's are 50 and 70 ms).
	DefaultBudget = time.Second
	// downFor is how long, after a failure, new tunnels fail at once instead of each waiting out the budget.
	downFor = 5 * time.Second
	// headLimit bounds a request head from the browser.
	headLimit = 16 << 10
	// countEvery is how often an open tunnel's subflow counters are read: a subflow the helper closes at θ2
	// disappears from MPTCP_FULL_INFO, so what it carried after the last read is not counted. At the testbed's
	// 9 Mbit/s LTE that is at most ~115 KB.
	countEvery = 100 * time.Millisecond
	// maxOrigins bounds the per-origin counters kept in memory (the host stores them; this is the live view).
	maxOrigins = 1000
)

// Config is what Start needs.
type Config struct {
	Upstream Upstream
	// Policy returns the decision for a CONNECT host (lower case, punycode, IP literal without brackets), and
	// whether there is one; the host's answers every host, deciding at run time for one without a decision of its
	// own. Without one the tunnel is single path. It may take the model's time: it runs beside the tunnel's TLS.
	Policy func(host string) (Policy, bool)
	// Conn asks the helper to apply p to the upstream connection local -> remote and says what happened ("ok",
	// "not_configured", "refused: ..."). nil: no helper.
	Conn func(ctx context.Context, local, remote netip.AddrPort, p Policy) string
	// Cellular tells whether a local address is the cellular interface's, for the per-origin accounting.
	Cellular func(netip.Addr) bool
	// Count receives each finished tunnel's bytes (received + acknowledged) per path kind.
	Count func(host string, cell, other uint64)
	// OnState is called (on its own goroutine) whenever the proxy's state changes.
	OnState func(State)
	// Unreachable is called (on its own goroutine) when the proxy answered a CONNECT to host with an error of its
	// own (Squid's 503: a name only the user's network resolves, an intranet address), so that the browser sends
	// the host DIRECT from then on: the browser shows the relay's 502 for this one request, since a reset would
	// make Chromium set the relay aside for every site for minutes.
	Unreachable func(host string, status int)
	// DialDirect, when set, is asked first for every tunnel: for a host whose decision says multipath would not
	// pay there it dials the site itself (ok true) and the tunnel goes straight to it, not through the proxy,
	// whose hop would only add its delay to a single-path connection. The extension's PAC sends such hosts
	// DIRECT too, but a page's first requests often leave before the PAC has the decision. ok false, or a dial
	// that failed: through the proxy.
	DialDirect func(ctx context.Context, host string) (c net.Conn, ok bool, err error)
	Budget     time.Duration // DefaultBudget when 0
	// SpareIdle is how long a spare connection to the proxy (TLS done, for the next tunnel) is kept unused:
	// DefaultSpareIdle when 0, no spare at all when negative.
	SpareIdle time.Duration
	Log       *slog.Logger
	// Listen is the relay's address; "" means 127.0.0.1:0.
	Listen string
}

// State is what the relay knows of the proxy.
type State struct {
	State    string `json:"state"` // "unknown" (no tunnel yet), "up", "down"
	Detail   string `json:"detail"`
	SinceMS  int64  `json:"since_ms"`
	Software string `json:"software,omitempty"` // the proxy's Server header, e.g. squid/5.7
}

// Relay is a running relay.
type Relay struct {
	cfg  Config
	ln   net.Listener
	user string
	pass string
	auth string // the Proxy-Authorization value the browser must send
	up   string // the Proxy-Authorization value the relay sends upstream
	host string // the proxy's host, for TLS ServerName

	open     atomic.Int64
	total    atomic.Int64
	failed   atomic.Int64
	straight atomic.Int64 // tunnels that went straight to the site

	mu      sync.Mutex
	st      State
	downAt  time.Time
	origins map[string]*Usage
	wg      sync.WaitGroup
	conns   map[net.Conn]struct{}
	closed  bool
	spare   *spare // spare.go
	filling bool   // a spare is being made
}

// Usage is what one origin's tunnels carried.
type Usage struct {
	Host       string `json:"host"`
	CellBytes  uint64 `json:"cell_bytes"`
	OtherBytes uint64 `json:"other_bytes"`
	Tunnels    int64  `json:"tunnels"`
}

// Start checks the upstream settings and listens.
func Start(cfg Config) (*Relay, error) {
	if err := cfg.Upstream.Check(); err != nil {
		return nil, err
	}
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	if cfg.SpareIdle == 0 {
		cfg.SpareIdle = DefaultSpareIdle
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	lc.SetMultipathTCP(false) // loopback: nothing to gain, and Go ≥ 1.24 listens with MPTCP by default
	ln, err := lc.Listen(context.Background(), "tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	b := make([]byte, 16)
	rand.Read(b)
	r := &Relay{cfg: cfg, ln: ln, user: "mpsurf", pass: hex.EncodeToString(b), origins: map[string]*Usage{}, conns: map[net.Conn]struct{}{},
		st: State{State: "unknown", Detail: "no tunnel yet", SinceMS: time.Now().UnixMilli()}}
	r.auth = basic(r.user, r.pass)
	r.up = basic(cfg.Upstream.User, cfg.Upstream.Password)
	r.host, _, _ = net.SplitHostPort(cfg.Upstream.Addr)
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

// Check validates the settings a user entered.
func (u Upstream) Check() error {
	host, port, err := net.SplitHostPort(u.Addr)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("proxy address %.80q: want host:port", u.Addr)
	}
	if !validHost(strings.ToLower(host)) {
		return fmt.Errorf("proxy address %.80q: not a host name or IP address", u.Addr)
	}
	if n, err := parsePort(port); err != nil || n == 0 {
		return fmt.Errorf("proxy address %.80q: bad port", u.Addr)
	}
	if u.User == "" || len(u.User) > 64 || strings.ContainsAny(u.User, ":\r\n") {
		return errors.New("proxy user: 1 to 64 characters, no colon")
	}
	if u.Password == "" || len(u.Password) > 256 || strings.ContainsAny(u.Password, "\r\n") {
		return errors.New("proxy password: 1 to 256 characters")
	}
	if u.Pin != "" {
		if b, err := base64.StdEncoding.DecodeString(u.Pin); err != nil || len(b) != sha256.Size {
			return errors.New("certificate pin: the base64 SHA-256 that mpsurf-proxy-setup printed (44 characters)")
		}
	}
	return nil
}

func parsePort(s string) (uint16, error) {
	var n uint32
	if len(s) == 0 || len(s) > 5 {
		return 0, errors.New("bad port")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.New("bad port")
		}
		n = n*10 + uint32(c-'0')
	}
	if n > 65535 {
		return 0, errors.New("bad port")
	}
	return uint16(n), nil
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// Addr is where the relay listens.
func (r *Relay) Addr() netip.AddrPort {
	return r.ln.Addr().(*net.TCPAddr).AddrPort()
}

// Credentials are what the browser must give the relay (the extension answers its 407 with them).
func (r *Relay) Credentials() (user, password string) { return r.user, r.pass }

// Upstream is the proxy the relay uses.
func (r *Relay) Upstream() Upstream { return r.cfg.Upstream }

// State reports the proxy's state.
func (r *Relay) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// Stats are the relay's counters.
type Stats struct {
	Open   int64 `json:"tunnels_open"`
	Total  int64 `json:"tunnels"`
	Failed int64 `json:"failures"`
	Direct int64 `json:"tunnels_direct"` // of Total, those that went straight to the site (Config.DialDirect)
}

// Stats returns the counters.
func (r *Relay) Stats() Stats {
	return Stats{Open: r.open.Load(), Total: r.total.Load(), Failed: r.failed.Load(), Direct: r.straight.Load()}
}

// Usage returns the per-origin counters, most cellular bytes first, at most n.
func (r *Relay) Usage(n int) []Usage {
	r.mu.Lock()
	out := make([]Usage, 0, len(r.origins))
	for _, u := range r.origins {
		out = append(out, *u)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].CellBytes != out[j].CellBytes {
			return out[i].CellBytes > out[j].CellBytes
		}
		return out[i].Host < out[j].Host
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Close stops listening and ends every tunnel.
func (r *Relay) Close() error {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.dropSpare()
	err := r.ln.Close()
	r.wg.Wait()
	return err
}

func (r *Relay) track(c net.Conn, on bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		if r.closed {
			return false
		}
		r.conns[c] = struct{}{}
	} else {
		delete(r.conns, c)
	}
	return true
}

func (r *Relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // e.g. EMFILE: do not spin
			continue
		}
		if !r.track(c, true) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.track(c, false)
			r.handle(c)
		}()
	}
}

// setState records the proxy's state and tells OnState when it changed.
func (r *Relay) setState(state, detail, software string) {
	r.mu.Lock()
	changed := r.st.State != state || (state == "down" && r.st.Detail != detail)
	if changed {
		r.st = State{State: state, Detail: detail, SinceMS: time.Now().UnixMilli(), Software: r.st.Software}
	}
	if software != "" {
		r.st.Software = software
	}
	if state == "down" {
		r.downAt = time.Now()
	}
	st := r.st
	r.mu.Unlock()
	if changed {
		r.cfg.Log.Info("proxy state", "state", state, "detail", detail)
		if r.cfg.OnState != nil {
			go r.cfg.OnState(st)
		}
	}
}

// recentlyDown reports whether a tunnel failed within downFor: then new tunnels fail at once.
func (r *Relay) recentlyDown() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.State == "down" && time.Since(r.downAt) < downFor, r.st.Detail
}

// reset closes the browser's connection with a RST, which Chromium counts as a proxy failure and so retries the
// request on the PAC's next entry (DIRECT); an HTTP error status would be shown as the page instead (Chromium
// net/http/proxy_fallback.cc: ERR_TUNNEL_CONNECTION_FAILED never falls back, ERR_CONNECTION_RESET does).
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// headReader reads the browser's request heads, at most headLimit bytes each.
type headReader struct {
	c    net.Conn
	left int
}

func (h *headReader) Read(p []byte) (int, error) {
	if h.left <= 0 {
		return 0, errors.New("request head too large")
	}
	if len(p) > h.left {
		p = p[:h.left]
	}
	n, err := h.c.Read(p)
	h.left -= n
	return n, err
}

func respond(c net.Conn, status int, extra string) {
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\n%sContent-Length: 0\r\n\r\n", status, http.StatusText(status), extra)
}

func (r *Relay) handle(c net.Conn) {
	hr := &headReader{c: c}
	br := bufio.NewReaderSize(hr, 4096)
	var req *http.Request
	// The browser may first try without credentials: answer 407 and read its retry on the same connection.
	for attempt := 0; ; attempt++ {
		hr.left = headLimit
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var err error
		if req, err = http.ReadRequest(br); err != nil {
			c.Close()
			return
		}
		if req.Method != http.MethodConnect {
			respond(c, http.StatusMethodNotAllowed, "Allow: CONNECT\r\nConnection: close\r\n")
			c.Close()
			return
		}
		if subtle.ConstantTimeCompare([]byte(req.Header.Get("Proxy-Authorization")), []byte(r.auth)) == 1 {
			break
		}
		if attempt >= 2 {
			respond(c, http.StatusProxyAuthRequired, "Proxy-Authenticate: Basic realm=\"MPSurf relay\"\r\nConnection: close\r\n")
			c.Close()
			return
		}
		respond(c, http.StatusProxyAuthRequired, "Proxy-Authenticate: Basic realm=\"MPSurf relay\"\r\n")
	}
	c.SetReadDeadline(time.Time{})
	host, ok := Target(req.Host)
	if !ok {
		respond(c, http.StatusForbidden, "Connection: close\r\n")
		c.Close()
		return
	}
	r.total.Add(1)
	if r.direct(c, br, host) {
		return
	}
	if down, why := r.recentlyDown(); down {
		r.failed.Add(1)
		r.cfg.Log.Debug("tunnel refused: proxy down", "host", host, "why", why)
		reset(c)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Budget)
	up, raw, err := r.dial(ctx, host)
	cancel()
	var ne net.Error
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())) {
		err = fmt.Errorf("no answer from the proxy within %v (%w)", r.cfg.Budget, err)
	}
	if err != nil {
		r.failed.Add(1)
		var se *statusError
		if errors.As(err, &se) && se.status != http.StatusProxyAuthRequired {
			// The proxy is up and answered for this origin (e.g. 503: the site is unreachable from it): say so.
			r.setState("up", "the proxy answers", se.software)
			r.refill()
			if r.cfg.Unreachable != nil && se.status >= 500 {
				go r.cfg.Unreachable(host, se.status)
			}
			respond(c, http.StatusBadGateway, "X-MPSurf-Proxy-Status: "+fmt.Sprint(se.status)+"\r\nConnection: close\r\n")
			c.Close()
			return
		}
		r.setState("down", err.Error(), softwareOf(err))
		reset(c)
		return
	}
	r.setState("up", "the proxy answers", "")
	r.refill() // the next tunnel, likely within seconds, skips the handshakes
	if !r.handOver(c, br, up) {
		return
	}
	r.tunnel(c, up, raw, host)
}

// direct runs the tunnel straight to the site when Config.DialDirect takes the host, and says whether it did.
func (r *Relay) direct(c net.Conn, br *bufio.Reader, host string) bool {
	if r.cfg.DialDirect == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Budget)
	site, ok, err := r.cfg.DialDirect(ctx, host)
	cancel()
	if !ok {
		return false
	}
	if err != nil {
		r.cfg.Log.Debug("direct dial failed; through the proxy", "host", host, "err", err)
		return false
	}
	raw, _ := site.(*net.TCPConn)
	if raw == nil {
		site.Close()
		return false
	}
	r.straight.Add(1)
	if !r.handOver(c, br, site) {
		return true
	}
	r.tunnel(c, site, raw, host)
	return true
}

// handOver passes what the browser sent after its CONNECT head to up and answers the CONNECT; false (both
// connections closed) when either side is gone.
func (r *Relay) handOver(c net.Conn, br *bufio.Reader, up net.Conn) bool {
	if buffered := br.Buffered(); buffered > 0 {
		// Bytes the browser sent after its CONNECT head belong to the tunnel.
		pending, _ := br.Peek(buffered)
		if _, err := up.Write(pending); err != nil {
			up.Close()
			reset(c)
			return false
		}
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		up.Close()
		c.Close()
		return false
	}
	return true
}

// Target checks a CONNECT authority and returns its host: only port 443 (the proxy allows no other), a DNS name
// or an IP literal.
func Target(authority string) (string, bool) {
	host, port, err := net.SplitHostPort(authority)
	if err != nil || port != "443" {
		return "", false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if !validHost(host) {
		return "", false
	}
	return host, true
}

// validHost accepts an IP address or a DNS name of letters, digits, '-' and '_' (punycode for IDNs).
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return !strings.Contains(h, "%")
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// errTLS marks a failed TLS handshake with the proxy (a wrong pin or certificate, or not a TLS port).
var errTLS = errors.New("TLS with the proxy")

// statusError is the proxy's refusal of a CONNECT.
type statusError struct {
	status   int
	software string
}

func (e *statusError) Error() string {
	if e.status == http.StatusProxyAuthRequired {
		return "the proxy refused the credentials (407)"
	}
	return fmt.Sprintf("the proxy answered %d", e.status)
}

func softwareOf(err error) string {
	var se *statusError
	if errors.As(err, &se) {
		return se.software
	}
	return ""
}

// dial opens a tunnel to host:443 through the proxy within ctx: MPTCP, TLS (pinned or verified), CONNECT with
// the user's credentials. It returns the tunnel and the raw MPTCP socket under it.
//
// A spare connection (spare.go) stands in for the MPTCP and TLS handshakes when there is one; one the proxy has
// closed meanwhile fails its CONNECT without an answer, and the tunnel dials afresh within what is left of ctx.
// The caller has the next spare made once the proxy answered (refill).
func (r *Relay) dial(ctx context.Context, host string) (net.Conn, *net.TCPConn, error) {
	target := net.JoinHostPort(host, "443")
	if conn, raw := r.takeSpare(); conn != nil {
		r.applyPolicy(raw, host)
		_, err := r.request(ctx, conn, target, true)
		var se *statusError
		if err == nil {
			return conn, raw, nil
		}
		conn.Close()
		if errors.As(err, &se) || ctx.Err() != nil {
			return nil, nil, err // the proxy's own answer, or no time left: as a fresh connection would have it
		}
		r.cfg.Log.Debug("spare connection gone stale; dialling", "err", err)
	}
	conn, raw, err := r.connectThen(ctx, func(raw *net.TCPConn) { r.applyPolicy(raw, host) })
	if err != nil {
		return nil, nil, err
	}
	if _, err := r.request(ctx, conn, target, true); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, raw, nil
}

// connect makes the TLS connection to the proxy over MPTCP.
func (r *Relay) connect(ctx context.Context) (*tls.Conn, *net.TCPConn, error) {
	return r.connectThen(ctx, nil)
}

// connectThen is connect, calling connected (when not nil) as soon as the MPTCP connection is up, before the TLS
// handshake: the helper then has the tunnel's decision two round trips (TLS, CONNECT) before the first byte of the
// site arrives, as early as the in-kernel path manager would add the subflow.
func (r *Relay) connectThen(ctx context.Context, connected func(*net.TCPConn)) (*tls.Conn, *net.TCPConn, error) {
	var d net.Dialer
	d.SetMultipathTCP(true)
	c, err := d.DialContext(ctx, "tcp", r.cfg.Upstream.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to the proxy: %w", err)
	}
	raw := c.(*net.TCPConn)
	if connected != nil {
		connected(raw)
	}
	tc := tls.Client(c, r.tlsConfig())
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("%w: %w", errTLS, err)
	}
	return tc, raw, nil
}

func (r *Relay) tlsConfig() *tls.Config {
	cfg := &tls.Config{ServerName: r.host, MinVersion: tls.VersionTLS12}
	if pin := r.cfg.Upstream.Pin; pin != "" {
		want, _ := base64.StdEncoding.DecodeString(pin)
		// A self-signed certificate is trusted by its public key's hash alone, as HPKP pins it; nothing else about
		// it (names, dates, issuer) is checked.
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = func(certs [][]byte, _ [][]*x509.Certificate) error {
			if len(certs) == 0 {
				return errors.New("the proxy sent no certificate")
			}
			leaf, err := x509.ParseCertificate(certs[0])
			if err != nil {
				return err
			}
			got := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
			if subtle.ConstantTimeCompare(got[:], want) != 1 {
				return fmt.Errorf("the proxy's certificate does not match the pin (its key hashes to %s)", base64.StdEncoding.EncodeToString(got[:]))
			}
			return nil
		}
	}
	return cfg
}

// request sends one CONNECT (with or without credentials) on conn and reads the answer head. A 2xx leaves conn
// as the tunnel; anything else is a statusError.
func (r *Relay) request(ctx context.Context, conn net.Conn, target string, auth bool) (*http.Response, error) {
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
		defer conn.SetDeadline(time.Time{})
	}
	head := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if auth {
		head += "Proxy-Authorization: " + r.up + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		return nil, fmt.Errorf("CONNECT to the proxy: %w", err)
	}
	// One byte at a time: a buffered reader could swallow the first bytes of the tunnel.
	resp, err := http.ReadResponse(bufio.NewReaderSize(byteReader{conn}, 16), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return nil, fmt.Errorf("the proxy's answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		// A refusal has a body (Squid's error page); it is read away on keep-alive connections by the caller.
		return resp, &statusError{status: resp.StatusCode, software: resp.Header.Get("Server")}
	}
	return resp, nil
}

// byteReader hands out one byte per Read, so that the bufio.Reader above it never reads past the response head.
type byteReader struct{ r io.Reader }

func (b byteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return b.r.Read(p)
}

// tunnel copies both ways until both directions end, counting what the upstream connection's subflows carried.
func (r *Relay) tunnel(browser, up net.Conn, raw *net.TCPConn, host string) {
	r.open.Add(1)
	defer r.open.Add(-1)
	meter := newMeter(raw, r.cfg.Cellular)
	stop := make(chan struct{})
	metered := make(chan struct{})
	go func() {
		defer close(metered)
		t := time.NewTicker(countEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				meter.read()
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		io.Copy(up, browser)
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		close(done)
	}()
	io.Copy(browser, up)
	if cw, ok := browser.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		// The browser keeps its side open after the proxy ended: end it.
	}
	close(stop)
	<-metered
	meter.read() // the last counts, before the socket goes
	browser.Close()
	up.Close()
	<-done
	cell, other := meter.totals()
	r.account(host, cell, other)
}

// applyPolicy hands the helper the decision for host on the upstream connection raw, in the background: the
// helper only needs it before the connection has received θ1 bytes, and the tunnel must not wait for it.
func (r *Relay) applyPolicy(raw *net.TCPConn, host string) {
	if r.cfg.Conn == nil {
		return
	}
	local, remote := raw.LocalAddr().(*net.TCPAddr).AddrPort(), raw.RemoteAddr().(*net.TCPAddr).AddrPort()
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	go func() {
		// The lookup too: for a host without a decision it runs the model (Config.Policy), and the tunnel's
		// TLS and CONNECT go on meanwhile.
		p, _ := r.policy(host)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		res := r.cfg.Conn(ctx, local, remote, p)
		r.cfg.Log.Debug("tunnel policy", "host", host, "local", local, "multipath", p.Multipath, "result", res)
	}()
}

func (r *Relay) policy(host string) (Policy, bool) {
	if r.cfg.Policy == nil {
		return Policy{}, false
	}
	return r.cfg.Policy(host)
}

func (r *Relay) account(host string, cell, other uint64) {
	r.mu.Lock()
	u := r.origins[host]
	if u == nil {
		if len(r.origins) >= maxOrigins {
			// Forget the origin with the fewest cellular bytes; the host's store keeps the totals.
			var min string
			for h, x := range r.origins {
				if min == "" || x.CellBytes < r.origins[min].CellBytes {
					min = h
				}
			}
			delete(r.origins, min)
		}
		u = &Usage{Host: host}
		r.origins[host] = u
	}
	u.CellBytes += cell
	u.OtherBytes += other
	u.Tunnels++
	r.mu.Unlock()
	if r.cfg.Count != nil {
		r.cfg.Count(host, cell, other)
	}
}
