package relay

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// TestResult is what the options page's "Test" shows: whether the proxy answered over TLS and MPTCP, whether a
// second (cellular) subflow joined, and whether it took the credentials.
type TestResult struct {
	OK          bool   `json:"ok"`
	Stage       string `json:"stage"` // the last step reached: connect, tls, mptcp, subflow, auth, done
	Detail      string `json:"detail"`
	Software    string `json:"software,omitempty"` // the proxy's Server header
	MPTCP       bool   `json:"mptcp"`
	Subflows    int    `json:"subflows"`     // the most subflows seen at once
	CellSubflow bool   `json:"cell_subflow"` // one of them left from the cellular address
	Helper      string `json:"helper"`       // what the helper said when asked for the subflow
	Status      int    `json:"status"`       // the proxy's answer to the authenticated CONNECT
	ElapsedMS   int64  `json:"elapsed_ms"`
}

// Test checks the relay's proxy (see Probe).
func (r *Relay) Test(ctx context.Context, target string, wait time.Duration) TestResult {
	return Probe(ctx, r.cfg, target, wait)
}

// Probe connects to cfg.Upstream as a tunnel would (MPTCP, TLS), asks the helper for the cellular subflow on that
// connection and waits up to wait for it, then sends CONNECT target (host:443; "" means the proxy's own name)
// without and with the credentials: the first answer names the proxy's software, the second tells whether the
// credentials are right (anything but 407; 503 is fine when the target does not answer).
func Probe(ctx context.Context, cfg Config, target string, wait time.Duration) TestResult {
	start := time.Now()
	res := TestResult{Stage: "connect"}
	done := func(detail string) TestResult {
		res.Detail, res.ElapsedMS = detail, time.Since(start).Milliseconds()
		return res
	}
	if err := cfg.Upstream.Check(); err != nil {
		return done(err.Error())
	}
	r := &Relay{cfg: cfg, up: basic(cfg.Upstream.User, cfg.Upstream.Password)}
	r.host, _, _ = net.SplitHostPort(cfg.Upstream.Addr)
	if target == "" {
		target = net.JoinHostPort(r.host, "443")
	}
	conn, raw, err := r.connect(ctx)
	if err != nil {
		if errors.Is(err, errTLS) {
			res.Stage = "tls"
		}
		return done(err.Error())
	}
	defer conn.Close()
	res.Stage = "mptcp"
	m := newMeter(raw, cfg.Cellular)
	m.read()
	res.MPTCP, res.Subflows, _ = m.subflowsSeen()
	if !res.MPTCP {
		return done("the proxy answered over TLS but not over MPTCP (the connection fell back to TCP): start Squid with mptcpize's LD_PRELOAD (the drop-in mpsurf-proxy-setup writes)")
	}
	res.Stage = "subflow"
	res.Helper = "not_configured"
	if cfg.Conn != nil {
		local := raw.LocalAddr().(*net.TCPAddr).AddrPort()
		remote := raw.RemoteAddr().(*net.TCPAddr).AddrPort()
		hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		res.Helper = cfg.Conn(hctx, local, remote, Policy{Multipath: true})
		cancel()
	}
	deadline := time.Now().Add(wait)
	for {
		m.read()
		_, res.Subflows, res.CellSubflow = m.subflowsSeen()
		if res.CellSubflow || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.Stage = "auth"
	// Without credentials first: the 407 names the software. The answer's body is read so that the connection can
	// carry the second request.
	if resp, err := r.request(ctx, conn, target, false); resp != nil {
		res.Software = resp.Header.Get("Server")
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.Close {
			conn.Close()
			if conn, _, err = r.connect(ctx); err != nil {
				return done(err.Error())
			}
			defer conn.Close()
		}
	} else if err != nil {
		return done(err.Error())
	}
	resp, err := r.request(ctx, conn, target, true)
	if resp != nil {
		res.Status = resp.StatusCode
		if s := resp.Header.Get("Server"); s != "" {
			res.Software = s
		}
	}
	var se *statusError
	switch {
	case err == nil || (errors.As(err, &se) && se.status != http.StatusProxyAuthRequired):
	case errors.As(err, &se):
		return done("the proxy refused the user name or password (407)")
	default:
		return done(err.Error())
	}
	res.Stage, res.OK = "done", true
	switch {
	case res.CellSubflow:
		return done("the proxy answered over TLS and MPTCP, a cellular subflow joined, and it took the credentials")
	case res.Helper != "ok":
		return done("the proxy answered over TLS and MPTCP and took the credentials; no cellular subflow: the helper did not add one (" + res.Helper + ")")
	default:
		return done("the proxy answered over TLS and MPTCP and took the credentials, but no cellular subflow joined within " + wait.String() + ": is the cellular link up, and can it reach the proxy?")
	}
}
