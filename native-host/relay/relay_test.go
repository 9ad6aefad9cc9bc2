package relay

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTarget(t *testing.T) {
	for _, tt := range []struct {
		in, host string
		ok       bool
	}{
		{"example.com:443", "example.com", true},
		{"Example.COM.:443", "example.com", true},
		{"xn--bcher-kva.example:443", "xn--bcher-kva.example", true},
		{"10.200.3.2:443", "10.200.3.2", true},
		{"[2001:db8::1]:443", "2001:db8::1", true},
		{"example.com:8443", "", false},
		{"example.com", "", false},
		{"bücher.example:443", "", false}, // the browser sends punycode; raw UTF-8 is refused
		{"exa mple.com:443", "", false},
		{"example.com\r\nX: y:443", "", false},
		{"[fe80::1%eth0]:443", "", false},
		{"-bad.example:443", "", false},
		{":443", "", false},
		{strings.Repeat("a", 64) + ".example:443", "", false},
	} {
		host, ok := Target(tt.in)
		if ok != tt.ok || host != tt.host {
			t.Errorf("Target(%q) = %q, %v; want %q, %v", tt.in, host, ok, tt.host, tt.ok)
		}
	}
}

func TestUpstreamCheck(t *testing.T) {
	pin := base64.StdEncoding.EncodeToString(make([]byte, 32))
	good := Upstream{Addr: "proxy.example:8443", User: "mpsurf", Password: "pw", Pin: pin}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for name, u := range map[string]Upstream{
		"no port":        {Addr: "proxy.example", User: "u", Password: "p"},
		"port 0":         {Addr: "proxy.example:0", User: "u", Password: "p"},
		"port too big":   {Addr: "proxy.example:70000", User: "u", Password: "p"},
		"bad host":       {Addr: "pro xy:8443", User: "u", Password: "p"},
		"no user":        {Addr: "proxy.example:8443", Password: "p"},
		"colon in user":  {Addr: "proxy.example:8443", User: "a:b", Password: "p"},
		"no password":    {Addr: "proxy.example:8443", User: "u"},
		"newline in pw":  {Addr: "proxy.example:8443", User: "u", Password: "p\r\nX: y"},
		"short pin":      {Addr: "proxy.example:8443", User: "u", Password: "p", Pin: "abc"},
		"pin not base64": {Addr: "proxy.example:8443", User: "u", Password: "p", Pin: strings.Repeat("!", 44)},
	} {
		if err := u.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// selfSigned makes a TLS certificate and its pin.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, base64.StdEncoding.EncodeToString(sum[:])
}

// tlsListener listens on loopback with a self-signed certificate, closed when the test ends; pin is the
// certificate's pin.
func tlsListener(t *testing.T) (net.Listener, string) {
	t.Helper()
	cert, pin := selfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, pin
}

// upstreamDouble is a test double of the proxy's failure modes (the real proxy is Squid, in
// TestIntegrationRelaySquid): it accepts TLS and then does what `behave` says with each CONNECT.
func upstreamDouble(t *testing.T, behave func(c net.Conn, req *http.Request)) (string, string) {
	t.Helper()
	ln, pin := tlsListener(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				behave(c, req)
			}()
		}
	}()
	return ln.Addr().String(), pin
}

func startRelay(t *testing.T, addr, pin string) *Relay {
	t.Helper()
	r, err := Start(Config{Upstream: Upstream{Addr: addr, User: "u", Password: "p", Pin: pin}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// browserConnect sends CONNECT as Chromium does, with the relay's credentials, and returns the relay's answer
// status (0 when the connection was reset or closed without one) and how long it took.
func browserConnect(t *testing.T, r *Relay, auth bool) (int, error, time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	head := "CONNECT site.example:443 HTTP/1.1\r\nHost: site.example:443\r\n"
	if auth {
		u, p := r.Credentials()
		head += "Proxy-Authorization: " + basic(u, p) + "\r\n"
	}
	io.WriteString(c, head+"\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return 0, err, time.Since(start)
	}
	return resp.StatusCode, nil, time.Since(start)
}

func TestRelayAsksTheBrowserForItsCredentials(t *testing.T) {
	addr, pin := upstreamDouble(t, func(c net.Conn, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		io.Copy(c, c)
	})
	r := startRelay(t, addr, pin)
	if code, err, _ := browserConnect(t, r, false); code != http.StatusProxyAuthRequired {
		t.Fatalf("without credentials: %d %v, want 407", code, err)
	}
	if code, err, _ := browserConnect(t, r, true); code != http.StatusOK {
		t.Fatalf("with the relay's credentials: %d %v, want 200", code, err)
	}
	if r.State().State != "up" {
		t.Fatalf("state %+v", r.State())
	}
}

// A proxy that accepts and then stalls, or refuses the credentials, or presents another key: the browser's
// connection is reset within the budget (Chromium then tries DIRECT), and the state turns down at once.
func TestRelayFailsFast(t *testing.T) {
	stall := func(c net.Conn, req *http.Request) { time.Sleep(3 * time.Second) }
	refuse := func(c net.Conn, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nServer: squid/5.7\r\nContent-Length: 0\r\n\r\n")
	}
	for _, tt := range []struct {
		name   string
		behave func(net.Conn, *http.Request)
		badPin bool
		want   string
	}{
		{"stalls after accepting", stall, false, "no answer from the proxy within 1s"},
		{"refuses the credentials", refuse, false, "407"},
		{"another certificate", stall, true, "does not match the pin"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr, pin := upstreamDouble(t, tt.behave)
			if tt.badPin {
				_, pin = selfSigned(t)
			}
			r := startRelay(t, addr, pin)
			code, err, took := browserConnect(t, r, true)
			if code != 0 || !isReset(err) {
				t.Fatalf("got %d %v, want a reset connection", code, err)
			}
			if took > DefaultBudget+300*time.Millisecond {
				t.Fatalf("reset after %v, budget %v", took, DefaultBudget)
			}
			st := r.State()
			if st.State != "down" || !strings.Contains(st.Detail, tt.want) {
				t.Fatalf("state %+v, want down with %q", st, tt.want)
			}
			// The next tunnel fails at once, without waiting out the budget again.
			if _, _, took := browserConnect(t, r, true); took > 100*time.Millisecond {
				t.Fatalf("second tunnel took %v while the proxy is known down", took)
			}
			if s := r.Stats(); s.Failed != 2 || s.Total != 2 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestRelayDeadProxy(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more
	_, pin := selfSigned(t)
	r := startRelay(t, addr, pin)
	code, err, took := browserConnect(t, r, true)
	if code != 0 || !isReset(err) || took > DefaultBudget {
		t.Fatalf("got %d %v after %v", code, err, took)
	}
	if r.State().State != "down" {
		t.Fatalf("state %+v", r.State())
	}
}

func TestRelayPassesTheProxysRefusalOfASite(t *testing.T) {
	addr, pin := upstreamDouble(t, func(c net.Conn, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nServer: squid/5.7\r\nContent-Length: 0\r\n\r\n")
	})
	told := make(chan string, 1)
	r, err := Start(Config{Upstream: Upstream{Addr: addr, User: "u", Password: "p", Pin: pin},
		Unreachable: func(host string, status int) { told <- fmt.Sprint(host, " ", status) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if code, err, _ := browserConnect(t, r, true); code != http.StatusBadGateway {
		t.Fatalf("got %d %v, want 502", code, err)
	}
	select {
	case got := <-told:
		if got != "site.example 503" {
			t.Errorf("told %q", got)
		}
	case <-time.After(3 * time.Second):
		t.Error("nobody was told the site is unreachable through the proxy")
	}
	if st := r.State(); st.State != "up" || st.Software != "squid/5.7" {
		t.Fatalf("state %+v: the proxy answered, so it is up", st)
	}
}

func TestRelayRefusesOtherRequests(t *testing.T) {
	addr, pin := upstreamDouble(t, func(c net.Conn, req *http.Request) {})
	r := startRelay(t, addr, pin)
	u, p := r.Credentials()
	for _, head := range []string{
		"GET http://site.example/ HTTP/1.1\r\nHost: site.example\r\nProxy-Authorization: " + basic(u, p) + "\r\n\r\n",
		"CONNECT site.example:25 HTTP/1.1\r\nHost: site.example:25\r\nProxy-Authorization: " + basic(u, p) + "\r\n\r\n",
		"CONNECT site.example:443 HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 20000) + "\r\n\r\n",
	} {
		c, _ := net.Dial("tcp", r.Addr().String())
		io.WriteString(c, head)
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err == nil && resp.StatusCode < 400 {
			t.Errorf("%.40q: %d", head, resp.StatusCode)
		}
	}
	if s := r.Stats(); s.Total != 0 {
		t.Fatalf("refused requests counted as tunnels: %+v", s)
	}
}

func isReset(err error) bool {
	return err != nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF))
}

func TestProbeNeedsSettings(t *testing.T) {
	res := Probe(context.Background(), Config{Upstream: Upstream{Addr: "nope"}}, "", time.Second)
	if res.OK || res.Stage != "connect" || !strings.Contains(res.Detail, "host:port") {
		t.Fatalf("%+v", res)
	}
}

// Deciding for a host without a decision runs the model and reads the store (carry: hub.policy): the tunnel's
// TLS and CONNECT go on meanwhile, and the helper gets the decision when it is there.
func TestRelayDoesNotWaitForTheDecision(t *testing.T) {
	addr, pin := upstreamDouble(t, func(c net.Conn, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		io.Copy(c, c)
	})
	const slow = 600 * time.Millisecond
	type applied struct {
		p  Policy
		at time.Time
	}
	got := make(chan applied, 1)
	r, err := Start(Config{
		Upstream: Upstream{Addr: addr, User: "u", Password: "p", Pin: pin},
		Policy: func(host string) (Policy, bool) {
			time.Sleep(slow)
			return Policy{Multipath: host == "site.example", Theta1: 1_116_680}, true
		},
		Conn: func(_ context.Context, _, _ netip.AddrPort, p Policy) string {
			got <- applied{p, time.Now()}
			return "ok"
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	start := time.Now()
	code, err, took := browserConnect(t, r, true)
	if code != http.StatusOK || took >= slow {
		t.Fatalf("tunnel %d %v after %v: it waited for the decision (%v)", code, err, took, slow)
	}
	select {
	case a := <-got:
		if !a.p.Multipath || a.p.Theta1 != 1_116_680 || a.at.Sub(start) < slow {
			t.Errorf("helper got %+v after %v", a.p, a.at.Sub(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the helper never got the tunnel's decision")
	}
}

// A host whose decision says multipath would not pay goes straight to the site; a host without such a decision,
// or whose direct dial fails, goes through the proxy.
func TestRelayDialsSingleHostsDirect(t *testing.T) {
	site, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	go func() {
		for {
			c, err := site.Accept()
			if err != nil {
				return
			}
			go func() { io.WriteString(c, "site"); c.Close() }()
		}
	}()
	addr, pin := upstreamDouble(t, func(c net.Conn, req *http.Request) {
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\nproxy")
	})
	for _, tc := range []struct {
		name       string
		ok         bool
		dialErr    bool
		want       string
		wantDirect int64
	}{
		{"decided single path: the site itself", true, false, "site", 1},
		{"no such decision: the proxy", false, false, "proxy", 0},
		{"the direct dial fails: the proxy", true, true, "proxy", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Start(Config{
				Upstream: Upstream{Addr: addr, User: "u", Password: "p", Pin: pin},
				DialDirect: func(ctx context.Context, host string) (net.Conn, bool, error) {
					if !tc.ok {
						return nil, false, nil
					}
					if tc.dialErr || host != "site.example" {
						return nil, true, errors.New("unreachable")
					}
					var d net.Dialer
					c, err := d.DialContext(ctx, "tcp", site.Addr().String())
					return c, true, err
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			c, err := net.Dial("tcp", r.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			u, p := r.Credentials()
			io.WriteString(c, "CONNECT site.example:443 HTTP/1.1\r\nHost: site.example:443\r\nProxy-Authorization: "+basic(u, p)+"\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("CONNECT: %v %v", resp, err)
			}
			body, _ := io.ReadAll(br)
			if string(body) != tc.want {
				t.Errorf("tunnel carried %q, want %q", body, tc.want)
			}
			if got := r.Stats().Direct; got != tc.wantDirect {
				t.Errorf("direct tunnels %d, want %d", got, tc.wantDirect)
			}
		})
	}
}
