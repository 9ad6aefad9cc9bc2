package mph2

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// plainListener is a plain-HTTP server on loopback, standing for a service on the user's own machine or LAN (a
// router's page, a development server): it counts the requests that reach it and the cookies they carry.
type plainListener struct {
	*httptest.Server
	hits    atomic.Int64
	cookies atomic.Int64
}

func newPlainListener(t *testing.T) *plainListener {
	p := &plainListener{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		if r.Header.Get("Cookie") != "" {
			p.cookies.Add(1)
		}
		w.Write([]byte("internal"))
	}))
	t.Cleanup(p.Close)
	return p
}

// A server the download reaches answers its first request with a redirect: to plain http on loopback, to another
// origin, to the same host in clear. None is followed; the local service sees no request, and the site's
// cookies never leave over plain http. Over HTTP/2 and HTTP/1.1 alike (net/http follows redirects by default).
func TestFetchRefusesRedirects(t *testing.T) {
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			body := object(300<<10, 21)
			ts := newTestServer(t, body, proto == "http/1.1")
			local := newPlainListener(t)
			lu, _ := url.Parse(local.URL)
			for _, target := range []string{
				local.URL + "/admin",                        // plain http, loopback
				"http://example.com:" + lu.Port() + "/x",    // plain http, the same host name: its cookies would go in clear
				"https://127.0.0.1:" + lu.Port() + "/admin", // https, loopback by address
			} {
				ts.hook = func(w http.ResponseWriter, r *http.Request) bool {
					http.Redirect(w, r, target, http.StatusFound)
					return true
				}
				o := ts.options(t, 1)
				o.HTTP1 = proto == "http/1.1"
				o.Header = http.Header{"Cookie": {"session=s3cret"}}
				// The name example.com maps to loopback for the test's own server only (Resolve): a redirect
				// to it in clear must not reach the plain service on another port either.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := Fetch(ctx, o)
				cancel()
				if err == nil {
					t.Errorf("redirect to %s: the download succeeded", target)
				}
				noneLeft(t, o.Out, o.Out+PartSuffix, o.Out+SidecarSuffix)
			}
			if n := local.hits.Load(); n != 0 {
				t.Errorf("the local service got %d requests (%d with the site's cookies)", n, local.cookies.Load())
			}
		})
	}
}

// A download URL that names a loopback address, or a name that resolves to one (what DNS rebinding makes of a
// public name), is refused before anything connects: the browser's Private Network Access would have blocked the
// request. The check is on the address being connected, so no resolver answer gets around it.
func TestFetchRefusesPrivateTargets(t *testing.T) {
	body := object(64<<10, 22)
	ts := newTestServer(t, body, false)
	var accepted atomic.Int64
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			accepted.Add(1)
		}
	}
	u, _ := url.Parse(ts.URL)
	for _, raw := range []string{
		"https://127.0.0.1:" + u.Port() + "/f", // an address literal
		"https://localhost:" + u.Port() + "/f", // a name the system resolves to loopback
	} {
		o := ts.options(t, 1)
		// One path bound to no address: nothing but the address check stands between it and loopback.
		o.URL, o.Resolve, o.Paths = raw, nil, []Path{{Name: "a"}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := Fetch(ctx, o)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "not a public address") {
			t.Errorf("%s: err %v, want a refusal", raw, err)
		}
		noneLeft(t, o.Out, o.Out+PartSuffix, o.Out+SidecarSuffix)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the loopback server accepted %d connections", n)
	}
	// The opt-in: a name the caller itself maps to an address (Options.Resolve: the testbed's MPSURF_HOSTS, the
	// CLI's --resolve) may reach that address.
	fetchOK(t, ts.options(t, 1), body)
}
func TestPublicAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"93.184.215.14", true}, {"2606:2800:21f:cb07:6820:80da:af6b:8b2c", true},
		{"127.0.0.1", false}, {"127.1.2.3", false}, {"::1", false}, {"0.0.0.0", false}, {"::", false},
		{"10.1.2.3", false}, {"172.16.0.1", false}, {"172.31.255.255", false}, {"192.168.1.1", false},
		{"169.254.169.254", false}, {"fe80::1", false}, {"fc00::1", false}, {"fd12:3456::1", false},
		{"100.64.0.1", false}, {"0.1.2.3", false}, {"224.0.0.1", false}, {"ff02::1", false}, {"255.255.255.255", false},
		{"::ffff:127.0.0.1", false}, {"::ffff:10.0.0.1", false}, {"::ffff:93.184.215.14", true},
		{"64:ff9b::a00:1", false}, {"64:ff9b::5db8:d70e", true}, {"2002:a00:1::1", false},
		{"198.18.0.1", false}, {"240.0.0.1", false}, {"172.32.0.1", true},
	} {
		if got := publicAddr(netip.MustParseAddr(tc.addr)); got != tc.public {
			t.Errorf("publicAddr(%s) = %v, want %v", tc.addr, got, tc.public)
		}
	}
}
