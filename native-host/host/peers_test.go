package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

func TestParsePeers(t *testing.T) {
	many := make([]string, maxPeers+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"host":"h%d.test","ip":"10.0.0.%d"}`, i, i+1)
	}
	cases := []struct {
		name, body string
		code       protocol.Code // 0: accepted
		want       string
	}{
		{"one", `{"origin":"https://Example.com:443","tab":3,"peers":[{"host":"cdn.example.net","ip":"192.0.2.7"}]}`, 0, "https://example.com cdn.example.net=192.0.2.7"},
		{"v6 in brackets, IDN host", `{"origin":"https://a.test","tab":-1,"peers":[{"host":"bücher.test","ip":"[2001:db8::1]"}]}`, 0, "https://a.test xn--bcher-kva.test=2001:db8::1"},
		{"IP-literal hosts", `{"origin":"https://a.test","tab":1,"peers":[{"host":"[2001:DB8::2]","ip":"2001:db8::2"},{"host":"192.0.2.1","ip":"192.0.2.1"}]}`, 0, "https://a.test 2001:db8::2=2001:db8::2 192.0.2.1=192.0.2.1"},
		{"v4-mapped", `{"origin":"https://a.test","tab":1,"peers":[{"host":"a.test","ip":"::ffff:10.1.2.3"}]}`, 0, "https://a.test a.test=10.1.2.3"},
		{"no body", ``, protocol.CodeBadRequest, ""},
		{"no peers", `{"origin":"https://a.test","tab":1}`, protocol.CodeBadRequest, ""},
		{"empty peers", `{"origin":"https://a.test","tab":1,"peers":[]}`, protocol.CodeBadRequest, ""},
		{"too many", `{"origin":"https://a.test","tab":1,"peers":[` + strings.Join(many, ",") + `]}`, protocol.CodeBadRequest, ""},
		{"peer not an object", `{"origin":"https://a.test","tab":1,"peers":["x"]}`, protocol.CodeBadRequest, ""},
		{"bad ip", `{"origin":"https://a.test","tab":1,"peers":[{"host":"a.test","ip":"10.0.0.999"}]}`, protocol.CodeBadRequest, ""},
		{"ip with zone", `{"origin":"https://a.test","tab":1,"peers":[{"host":"a.test","ip":"fe80::1%eth0"}]}`, 0, "https://a.test a.test=fe80::1%eth0"},
		{"bad host", `{"origin":"https://a.test","tab":1,"peers":[{"host":"a b","ip":"10.0.0.1"}]}`, protocol.CodeBadRequest, ""},
		{"tab too small", `{"origin":"https://a.test","tab":-2,"peers":[{"host":"a.test","ip":"10.0.0.1"}]}`, protocol.CodeBadRequest, ""},
		{"bad origin", `{"origin":"ftp://a.test","tab":1,"peers":[{"host":"a.test","ip":"10.0.0.1"}]}`, protocol.CodeBadOrigin, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body json.RawMessage
			if c.body != "" {
				body = json.RawMessage(c.body)
			}
			origin, peers, perr := parsePeers(body)
			if c.code != 0 {
				if perr == nil || perr.Code != c.code {
					t.Fatalf("got %v, want code %d", perr, c.code)
				}
				return
			}
			if perr != nil {
				t.Fatal(perr)
			}
			got := origin
			for _, p := range peers {
				got += " " + p.Host + "=" + p.Addr.String()
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func FuzzParsePeers(f *testing.F) {
	f.Add([]byte(`{"origin":"https://a.test","tab":1,"peers":[{"host":"cdn.test","ip":"10.0.0.1"}]}`))
	f.Add([]byte(`{"origin":"https://a.test","tab":1,"peers":[{"host":"[::1]","ip":"[::1]"}]}`))
	f.Add([]byte(`{"peers":[{}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		origin, peers, perr := parsePeers(b)
		if perr != nil {
			return
		}
		if len(peers) < 1 || len(peers) > maxPeers || origin == "" {
			t.Fatalf("accepted %d peers for %q", len(peers), origin)
		}
		for _, p := range peers {
			if !p.Addr.IsValid() || p.Addr.Is4In6() || p.Host == "" {
				t.Fatalf("accepted peer %+v", p)
			}
		}
	})
}

// TestActuatorPeers: reported peer addresses follow the page origin's decision (θ included), accumulate, are
// skipped for an origin without a decision, and follow the origin when its decision changes.
func TestActuatorPeers(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "a.sock")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := actuate.Start(actuate.Config{Socket: sock, StateDir: filepath.Join(dir, "state"), Backend: actuate.BackendDryRun,
		AllowUIDs: []uint32{uint32(os.Getuid())}, Log: quiet, SysctlDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	c := &actuatorClient{path: sock, log: quiet, ready: make(chan struct{}), replay: map[string]actuate.Request{}}
	go c.run()
	call, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()

	if got := c.setPeers(call, "https://nodecision.test", []string{"192.0.2.1"}); !strings.HasPrefix(got, "skipped: no decision") {
		t.Errorf("peers of an undecided origin: %q", got)
	}
	mp := true
	page := actuate.Request{Verb: actuate.VerbOrigin, LeaseMS: actuatorLease.Milliseconds(), Addrs: []string{"192.0.2.10"}, Multipath: &mp, Theta1: 4096}
	if got := c.setOrigin(call, page, "https://page.test"); got != "ok" {
		t.Fatalf("setOrigin: %q", got)
	}
	if got := c.setPeers(call, "https://page.test", []string{"198.51.100.1"}); got != "ok" {
		t.Fatalf("setPeers: %q", got)
	}
	if got := c.setPeers(call, "https://page.test", []string{"198.51.100.2", "198.51.100.1"}); got != "ok" {
		t.Fatalf("setPeers: %q", got)
	}
	if got := c.replay[peersKey("https://page.test")].Addrs; strings.Join(got, ",") != "198.51.100.2,198.51.100.1" {
		t.Errorf("accumulated peers %v", got)
	}
	sp := false
	page.Multipath, page.Theta1 = &sp, 0
	if got := c.setOrigin(call, page, "https://page.test"); got != "ok" {
		t.Fatalf("setOrigin: %q", got)
	}
	c.refreshPeers(call, "https://page.test", page)

	c.mu.Lock()
	resp, err := c.callLocked(actuate.Request{Verb: actuate.VerbStatus}, time.Second)
	c.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(resp.Result)
	would := string(b)
	for _, w := range []string{
		"map [198.51.100.1] to multipath=true theta1=4096",
		"map [198.51.100.2 198.51.100.1] to multipath=true theta1=4096",
		"map [198.51.100.2 198.51.100.1] to multipath=false",
	} {
		if !strings.Contains(would, w) {
			t.Errorf("helper was not asked to %q: %s", w, would)
		}
	}
}
