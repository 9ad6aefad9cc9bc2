package mph2

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Path is one network path a download may use.
type Path struct {
	// Name labels the path in results ("wlan0").
	Name string `json:"name"`
	// Interface, when set, binds every connection to this interface (SO_BINDTODEVICE).
	Interface string `json:"interface,omitempty"`
	// Addr, when valid, is the local address connections are bound to (source-address policy routing).
	Addr netip.Addr `json:"addr,omitzero"`
	// MPTCP asks for a Multipath TCP socket (the kernel's multipath, for comparison; the server must speak it).
	MPTCP bool `json:"mptcp,omitempty"`
}

type bindError struct {
	ifname string
	err    error
}

func (e *bindError) Error() string {
	return fmt.Sprintf("binding to interface %s: %v", e.ifname, e.err)
}
func (e *bindError) Unwrap() error { return e.err }

// dialer connects to the object's server over one path.
type dialer struct {
	path     Path
	host     string // for SNI and :authority
	port     string
	addrs    []netip.Addr // resolved ahead of the system resolver, when given
	tls      *tls.Config
	forceH1  bool
	timeout  time.Duration
	resolver *net.Resolver
}

func newDialer(u *url.URL, p Path, resolve map[string][]netip.Addr, tlsConf *tls.Config, forceH1 bool, timeout time.Duration) (*dialer, error) {
	if u.Scheme != "https" {
		return nil, fmt.Errorf("%s: only https URLs are downloaded this way", u.Scheme)
	}
	d := &dialer{path: p, host: u.Hostname(), port: u.Port(), tls: tlsConf, forceH1: forceH1, timeout: timeout, resolver: net.DefaultResolver}
	if d.port == "" {
		d.port = "443"
	}
	d.addrs = resolve[d.host]
	return d, nil
}

// dialTLS makes one TLS connection on the path and says which protocol ALPN chose.
func (d *dialer) dialTLS(ctx context.Context) (*tls.Conn, error) {
	nd := net.Dialer{Timeout: d.timeout}
	var bind func(network, address string, c syscall.RawConn) error
	if d.path.Interface != "" {
		bind = bindControl(d.path.Interface)
	}
	nd.Control = targetControl(d.addrs, bind) // target.go: public addresses only, but those the caller mapped
	if d.path.Addr.IsValid() {
		nd.LocalAddr = &net.TCPAddr{IP: d.path.Addr.AsSlice()}
	}
	nd.SetMultipathTCP(d.path.MPTCP)
	addrs := d.addrs
	if len(addrs) == 0 {
		ips, err := d.resolver.LookupNetIP(ctx, "ip", d.host)
		if err != nil {
			return nil, err
		}
		for _, a := range ips {
			addrs = append(addrs, a.Unmap()) // the resolver may answer IPv4 as IPv4-mapped IPv6
		}
	}
	var nc net.Conn
	var err error
	for _, a := range addrs {
		if d.path.Addr.IsValid() && a.Is4() != d.path.Addr.Is4() {
			continue // the path's address cannot reach this family
		}
		if nc, err = nd.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), d.port)); err == nil {
			break
		}
	}
	if nc == nil {
		if err == nil {
			err = fmt.Errorf("no address of %s reachable from %s", d.host, d.path.Addr)
		}
		return nil, fmt.Errorf("path %s: %w", d.path.Name, err)
	}
	conf := d.tls.Clone()
	conf.ServerName = d.host
	conf.NextProtos = []string{"h2", "http/1.1"}
	if d.forceH1 {
		conf.NextProtos = []string{"http/1.1"}
	}
	tc := tls.Client(nc, conf)
	hctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("path %s: TLS: %w", d.path.Name, err)
	}
	return tc, nil
}

// TLSWithRoots is a client TLS configuration trusting the system's roots plus the PEM certificates in extra (a
// private test server's, for example).
func TLSWithRoots(extra []byte) (*tls.Config, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if len(extra) > 0 && !pool.AppendCertsFromPEM(extra) {
		return nil, fmt.Errorf("no PEM certificate in the extra roots")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
