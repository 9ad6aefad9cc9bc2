package carry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/actuate/actuatetest"
	"github.com/mpsurf/mpsurf/native-host/decide"
)

// TestActuatorClient runs the client against the real helper with its dry-run backend: a decision reaches
// it, the helper's death reads as unavailable without holding the decide up, and a restarted helper gets
// the session and the remembered policies back.
func TestActuatorClient(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "a.sock")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func() (context.CancelFunc, chan error) {
		srv, err := actuate.Start(actuate.Config{Socket: sock, StateDir: filepath.Join(dir, "state"), Backend: actuate.BackendDryRun,
			AllowUIDs: []uint32{uint32(os.Getuid())}, Log: quiet, SysctlDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		return cancel, done
	}
	stop, done := start()
	hosts, _ := ParseHosts("origin.test=10.200.3.2")
	c := newHelper(sock, hosts, quiet)
	c.start()

	mp := true
	req := actuate.Request{Verb: actuate.VerbOrigin, LeaseMS: actuatorLease.Milliseconds(), Addrs: []string{"10.200.3.2"}, Multipath: &mp}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if got := c.setOrigin(ctx, req, "https://origin.test"); got != "ok" {
		t.Fatalf("setOrigin = %q, want ok", got)
	}
	addrs, err := c.resolve(ctx, "https://origin.test:8443")
	if err != nil || len(addrs) != 1 || addrs[0].String() != "10.200.3.2" {
		t.Fatalf("resolve = %v, %v", addrs, err)
	}
	if _, err := c.resolve(ctx, "https://127.0.0.1"); err == nil {
		t.Error("a loopback origin resolved to an address the helper would refuse")
	}
	bad := req
	bad.Addrs = []string{"not-an-ip"}
	if got := c.setOrigin(ctx, bad, "https://bad.test"); !strings.HasPrefix(got, "refused: "+actuate.CodeBadArgument) {
		t.Errorf("bad address: %q, want a bad_argument refusal", got)
	}
	delete(c.replay, "https://bad.test")
	c.order = slices.DeleteFunc(c.order, func(k string) bool { return k == "https://bad.test" })

	stop()
	<-done
	t0 := time.Now()
	short, cancel2 := context.WithTimeout(context.Background(), actuateBudget)
	defer cancel2()
	got := c.setOrigin(short, req, "https://origin.test")
	if !strings.HasPrefix(got, "unavailable: ") {
		t.Errorf("helper gone: %q, want unavailable", got)
	}
	if el := time.Since(t0); el > actuateBudget+100*time.Millisecond {
		t.Errorf("a decide waited %v for a dead helper", el)
	}

	stop, done = start()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(backoffMax + 2*time.Second)
	for {
		c.mu.Lock()
		up := c.conn != nil
		c.mu.Unlock()
		if up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the client did not reconnect to the restarted helper")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx3, cancel3 := context.WithTimeout(context.Background(), time.Second)
	defer cancel3()
	if got := c.setOrigin(ctx3, req, "https://origin.test"); got != "ok" {
		t.Errorf("after reconnect: %q, want ok", got)
	}
}

// Point 5 of issue 12: a burst of peer reports spends the helper's rate limit, and the decision that follows is
// refused as rate_limited. It used to be lost (never sent again); now it is queued and applied once the limit
// allows, before the peers still waiting.
func TestActuatorRetriesRateLimited(t *testing.T) {
	c := dryRunHelper(t, 5, 5)
	call, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	mp := true
	page := actuate.Request{Verb: actuate.VerbOrigin, LeaseMS: actuatorLease.Milliseconds(), Addrs: []string{"192.0.2.10"}, Multipath: &mp, Theta1: 4096}
	if got := c.setOrigin(call, page, "https://page.test"); got != "ok" {
		t.Fatalf("setOrigin: %q", got)
	}
	// A page's burst of peer reports: more than the helper takes at once.
	var results []string
	for i := range 16 {
		results = append(results, c.setPeers(call, "https://page.test", []string{fmt.Sprintf("198.51.100.%d", i+1)}))
	}
	decision := page
	decision.Addrs = []string{"203.0.113.5"}
	got := c.setOrigin(call, decision, "https://next.test")
	t.Logf("peers: %v; the decision after them: %q", results, got)
	if !strings.HasPrefix(got, queued) {
		t.Fatalf("the decision after the burst: %q, want it queued (the burst should have spent the limit)", got)
	}
	var would string
	if !waitFor(3*time.Second, func() bool {
		c.mu.Lock()
		resp, err := c.callLocked(actuate.Request{Verb: actuate.VerbStatus}, time.Second)
		c.mu.Unlock()
		b, _ := json.Marshal(resp.Result)
		would = string(b)
		return err == nil && strings.Contains(would, "map [203.0.113.5]")
	}) {
		t.Fatalf("the rate-limited decision was never applied: %s", would)
	}
	// The peers that waited follow, all sixteen addresses under the page's decision at the end.
	if !waitFor(10*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.pending) == 0
	}) {
		t.Fatalf("still pending: %v", c.pending)
	}
	if !strings.Contains(would, "198.51.100.16") {
		// The last status was read before the peers went: read it again.
		c.mu.Lock()
		resp, _ := c.callLocked(actuate.Request{Verb: actuate.VerbStatus}, time.Second)
		c.mu.Unlock()
		b, _ := json.Marshal(resp.Result)
		would = string(b)
	}
	if i, j := strings.Index(would, "map [203.0.113.5]"), strings.Index(would, "map [198.51.100.16 "); i < 0 || j < 0 || j < i {
		t.Errorf("want the decision applied, then the queued peers (198.51.100.16 first among them): %s", would)
	}
}

// dryRunHelper runs the real helper in this process with its dry-run backend (rate and burst 0: its defaults)
// for the test, and returns a started client of it.
func dryRunHelper(t *testing.T, rate, burst float64) *helper {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := newHelper(actuatetest.DryRun(t, rate, burst, quiet), nil, quiet)
	c.start()
	return c
}

// waitFor polls cond every 20 ms until it holds (true) or limit passes (false).
func waitFor(limit time.Duration, cond func() bool) bool {
	for start := time.Now(); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > limit {
			return false
		}
	}
	return true
}

// A multipath decision names its origin's θ1 group, and the page's peers follow it into the same group: the
// helper then counts the third parties' bytes with the origin's towards θ1 (actuate.OriginPolicy.Group).
func TestCarryGroupsPeersWithTheirOrigin(t *testing.T) {
	c := dryRunHelper(t, 100, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	theta1 := int64(128000)
	for _, tc := range []struct {
		origin string
		theta1 *int64
		want   string
	}{
		{"https://192.0.2.10", &theta1, fmt.Sprintf("map [192.0.2.10] to multipath=true theta1=128000 theta2=none group=%d\"", thetaGroup("https://192.0.2.10"))},
		{"https://192.0.2.11", nil, "map [192.0.2.11] to multipath=false theta1=0 theta2=none\""},
	} {
		d := decide.Decision{Origin: tc.origin, Theta1: tc.theta1}
		c.carry(ctx, &d)
		if d.Actuation != "ok" {
			t.Fatalf("%s: actuation %q", tc.origin, d.Actuation)
		}
		if got := c.setPeers(ctx, tc.origin, []string{"198.51.100.7"}); got != "ok" {
			t.Fatalf("%s: peers %q", tc.origin, got)
		}
		log := helperStatus(t, c) // each entry a JSON string: the closing quote ends a line
		if !strings.Contains(log, tc.want) {
			t.Errorf("%s: the helper's log lacks %q:\n%s", tc.origin, tc.want, log)
		}
		peer := strings.Replace(tc.want, "["+strings.TrimPrefix(tc.origin, "https://")+"]", "[198.51.100.7]", 1)
		if !strings.Contains(log, peer) {
			t.Errorf("%s: the peer did not follow into the group, want %q:\n%s", tc.origin, peer, log)
		}
	}
	if thetaGroup("https://a.test") == thetaGroup("https://b.test") || thetaGroup("") == 0 {
		t.Error("thetaGroup: distinct origins share a group, or a group is 0")
	}
}

// helperStatus is the dry-run helper's status as JSON: what it would have done, one string per request.
func helperStatus(t *testing.T, c *helper) string {
	t.Helper()
	c.mu.Lock()
	resp, err := c.callLocked(actuate.Request{Verb: actuate.VerbStatus}, time.Second)
	c.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(resp.Result)
	return string(b)
}

// testCarrier is a Carrier as cmd/mpsurf-host builds one, for a test: cfg as given, with a proxy settings file of
// its own (none written) and a quiet log, started. A helper, if the test wants one, is the test's to set.
func testCarrier(t testing.TB, cfg Config) *Carrier {
	t.Helper()
	if cfg.ProxyFile == "" {
		cfg.ProxyFile = filepath.Join(t.TempDir(), "proxy.json")
	}
	c := New(cfg)
	c.Start()
	t.Cleanup(c.Close)
	return c
}
