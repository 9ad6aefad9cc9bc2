package carry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// TestActuatorPeers: reported peer addresses follow the page origin's decision (θ included), accumulate, are
// skipped for an origin without a decision, and follow the origin when its decision changes.
func TestActuatorPeers(t *testing.T) {
	c := dryRunHelper(t, 0, 0)
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

	would := helperStatus(t, c)
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

// carryOut gives origin's addresses a decision in the helper as carry does: set, then taken back from other pages.
func carryOut(t *testing.T, ctx context.Context, c *helper, origin string, multipath *bool, addrs ...string) {
	t.Helper()
	req := actuate.Request{Verb: actuate.VerbOrigin, LeaseMS: actuatorLease.Milliseconds(), Addrs: addrs, Multipath: multipath}
	if got := c.setOrigin(ctx, req, origin); got != "ok" {
		t.Fatalf("decide %s: %q", origin, got)
	}
	c.mu.Lock()
	c.takeBackLocked(origin, req)
	c.mu.Unlock()
}

// Point 3 of issue 12: a web page chooses what it loads, so the addresses its requests reach must not move
// another site's connections. Before, every reported address took the page's decision: a site the user set to
// "never", another site's own decision, a CDN address two sites share, an address no connection reached, a
// multicast or link-local one. Now each of those is refused with the reason, and only the rest follow the page.
func TestPeersCannotOverride(t *testing.T) {
	c := dryRunHelper(t, 0, 0)
	db := testStore(t)
	reachable := map[netip.Addr]bool{}
	for _, a := range []string{"198.51.100.10", "198.51.100.20", "198.51.100.40", "198.51.100.50", "224.0.0.1", "169.254.1.1"} {
		reachable[netip.MustParseAddr(a)] = true
	}
	s := testCarrier(t, Config{Store: db, Reached: func(addrs []netip.Addr) (map[netip.Addr]bool, error) { return reachable, nil }})
	s.helper = c
	// The user set bank.test to "never".
	savePrefs(t, db, fmt.Sprintf(goodPrefs, `[{"host":"bank.test","rule":"never"}]`))
	call1, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	mp, sp := true, false
	decide := func(origin string, multipath *bool, addrs ...string) {
		t.Helper()
		carryOut(t, call1, c, origin, multipath, addrs...)
	}
	decide("https://evil.test", &mp, "203.0.113.1")
	decide("https://shop.test", &sp, "198.51.100.20") // its own decision: single path
	peers := func(origin string, pairs ...string) protocol.PeersReply {
		t.Helper()
		var items []string
		for _, p := range pairs {
			host, ip, _ := strings.Cut(p, "=")
			items = append(items, fmt.Sprintf(`{"host":%q,"ip":%q}`, host, ip))
		}
		return reportPeers(t, s, fmt.Sprintf(`{"origin":%q,"tab":1,"peers":[%s]}`, origin, strings.Join(items, ",")))
	}
	got := peers("https://evil.test",
		"bank.test=198.51.100.10",     // the user's "never" site
		"shop.test=198.51.100.20",     // a site with its own decision
		"cdn.evil.test=198.51.100.20", // another name for the same address
		"tracker.test=198.51.100.30",  // no connection reaches it
		"cdn2.test=198.51.100.40",     // an unclaimed third party the page's connections reach
		"mc.test=224.0.0.1",           // multicast
		"lan.test=169.254.1.1",        // link-local
	)
	why := map[string]string{}
	for _, r := range got.Refused {
		why[r.IP] = r.Why
	}
	t.Logf("evil.test's peers: %d taken, refused %v", got.Addrs, why)
	for ip, want := range map[string]string{
		"198.51.100.10": "site rule of its own (never)", "198.51.100.20": "decision of its own",
		"198.51.100.30": "no connection", "224.0.0.1": "not a web server's address", "169.254.1.1": "not a web server's address",
	} {
		if !strings.Contains(why[ip], want) {
			t.Errorf("%s: refused %q, want %q", ip, why[ip], want)
		}
	}
	if got.Addrs != 1 || got.Actuation != "ok" {
		t.Errorf("want only 198.51.100.40 taken: %+v", got)
	}
	// Another name for a decided site's address: the address stays under the site's decision.
	if got := peers("https://evil.test", "cdn.evil.test=198.51.100.20"); got.Addrs != 0 || len(got.Refused) != 1 ||
		!strings.Contains(got.Refused[0].Why, "under https://shop.test's decision") {
		t.Errorf("an alias of shop.test's address: %+v", got)
	}
	// A second page, deciding otherwise, reports the address the first already holds: the first keeps it.
	decide("https://other.test", &sp, "203.0.113.2")
	got = peers("https://other.test", "cdn2.test=198.51.100.40")
	if got.Addrs != 0 || len(got.Refused) != 1 || !strings.Contains(got.Refused[0].Why, "under https://evil.test's decision") {
		t.Errorf("a shared address flipped by a second page: %+v", got)
	}
	// A page takes an address before the site that owns it is decided; the site's own decision takes it back,
	// and the page's next decision does not send it again.
	if got := peers("https://evil.test", "alias.evil.test=198.51.100.50"); got.Addrs != 1 {
		t.Fatalf("%+v", got)
	}
	decide("https://news.test", &sp, "198.51.100.50")
	theta := actuate.Request{Verb: actuate.VerbOrigin, LeaseMS: actuatorLease.Milliseconds(), Addrs: []string{"203.0.113.1"}, Multipath: &mp, Theta1: 8192}
	c.setOrigin(call1, theta, "https://evil.test")
	c.refreshPeers(call1, "https://evil.test", theta)
	if a := c.replay[peersKey("https://evil.test")].Addrs; slices.Contains(a, "198.51.100.50") || !slices.Contains(a, "198.51.100.40") {
		t.Errorf("evil.test's peers after news.test's own decision: %v", a)
	}
	b := helperStatus(t, c)
	for _, never := range []string{"198.51.100.10", "198.51.100.30", "224.0.0.1", "169.254.1.1"} {
		if strings.Contains(b, never) {
			t.Errorf("the helper was given %s: %s", never, b)
		}
	}
	if strings.Contains(b, "198.51.100.50] to multipath=true theta1=8192") || strings.Count(b, "198.51.100.20") != 1 {
		t.Errorf("a site's own address was moved by a page: %s", b)
	}
}

// A host started with a new browser session puts the peers the origin's pages reported before under its decision
// as soon as it is carried out (restorePeers), screened again except for the reach check; a site the user has set
// to "never" since, and an address another site's own decision holds, stay out.
func TestPeersRemembered(t *testing.T) {
	db := testStore(t)
	s := testCarrier(t, Config{Store: db, Reached: func(addrs []netip.Addr) (map[netip.Addr]bool, error) { return reachedBefore(addrs) }})
	s.helper = dryRunHelper(t, 0, 0)
	ctx, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	mp, sp := true, false
	decideOn := func(c *helper, origin string, multipath *bool, addrs ...string) {
		t.Helper()
		carryOut(t, ctx, c, origin, multipath, addrs...)
	}
	decideOn(s.helper, "https://news.test", &mp, "203.0.113.1")
	reportPeers(t, s, `{"origin":"https://news.test","tab":1,"peers":[{"host":"cdn.test","ip":"198.51.100.1"},{"host":"img.test","ip":"198.51.100.2"},{"host":"bank.test","ip":"198.51.100.3"}]}`)
	kept, err := db.Peers(context.Background(), "https://news.test", time.Now().Add(-time.Minute))
	if err != nil || len(kept) != 3 {
		t.Fatalf("remembered %v (%v), want the three peers taken", kept, err)
	}

	// The next session: a new helper connection, nothing replayed yet. Since then the user set bank.test to
	// "never", and img.test's address became shop.test's, decided single path.
	s.helper = dryRunHelper(t, 0, 0)
	savePrefs(t, db, fmt.Sprintf(goodPrefs, `[{"host":"bank.test","rule":"never"}]`))
	decideOn(s.helper, "https://shop.test", &sp, "198.51.100.2")
	s.restorePeers("https://news.test", decide.Decision{Actuation: "advisory only"})
	if s.helper.hasPeers("https://news.test") {
		t.Fatal("peers restored for a decision the helper did not carry out")
	}
	decideOn(s.helper, "https://news.test", &mp, "203.0.113.1")
	s.restorePeers("https://news.test", decide.Decision{Actuation: "ok"})
	if got := s.helper.replay[peersKey("https://news.test")].Addrs; strings.Join(got, ",") != "198.51.100.1" {
		t.Errorf("restored peers %v, want only cdn.test's 198.51.100.1", got)
	}
	// An origin never seen has nothing to restore; one whose pages reported peers in this session keeps those.
	s.restorePeers("https://new.test", decide.Decision{Actuation: "ok"})
	if s.helper.hasPeers("https://new.test") {
		t.Error("peers restored for an origin that never reported any")
	}
}

// ReachedByMe sees this process's own TCP connections, by remote address, from the kernel (sock_diag).
func TestIntegrationReachedByMe(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	conn, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got, err := ReachedByMe([]netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")})
	if err != nil {
		t.Fatal(err)
	}
	if !got[netip.MustParseAddr("127.0.0.1")] || got[netip.MustParseAddr("127.0.0.2")] {
		t.Fatalf("reached: %v", got)
	}
}

// A page's peers follow its origin's helper policy; a change of WiFi-as-backup alone is a change they must get.
func TestSamePolicy(t *testing.T) {
	mp, sp := true, false
	base := actuate.Request{Multipath: &mp, Theta1: 200_000}
	for _, tc := range []struct {
		name string
		b    func(r *actuate.Request)
		want bool
	}{
		{"same", func(*actuate.Request) {}, true},
		{"θ1", func(r *actuate.Request) { r.Theta1 = 0 }, false},
		{"θ2", func(r *actuate.Request) { c := int64(1 << 20); r.Theta2 = &c }, false},
		{"multipath", func(r *actuate.Request) { r.Multipath = &sp }, false},
		{"WiFi as backup", func(r *actuate.Request) { r.PreferCellular = true }, false},
		{"θ1 group", func(r *actuate.Request) { r.Group = 7 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			tc.b(&b)
			if got := samePolicy(base, b); got != tc.want {
				t.Errorf("samePolicy = %v, want %v", got, tc.want)
			}
		})
	}
}

// testStore is a decision log of the test's own.
func testStore(t *testing.T) *store.Store {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "m.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

const goodPrefs = `{"mode":"balanced","deadline_ms":3000,"battery_floor_percent":20,"charging_unlimited":true,
	"quota_bytes":null,"billing_day":1,"header_scope":"opt_in","overrides":%s}`

// savePrefs stores the user's preferences as a prefs request's body gives them.
func savePrefs(t *testing.T, db *store.Store, body string) {
	t.Helper()
	p, perr := protocol.ParsePrefs(json.RawMessage(body))
	if perr != nil {
		t.Fatalf("prefs: %v", perr)
	}
	if err := db.SavePrefs(context.Background(), p); err != nil {
		t.Fatalf("prefs: %v", err)
	}
}

// reportPeers hands the carrier a page's peers as a peers request's body gives them.
func reportPeers(t *testing.T, s *Carrier, body string) protocol.PeersReply {
	t.Helper()
	origin, peers, perr := protocol.ParsePeers(json.RawMessage(body))
	if perr != nil {
		t.Fatalf("peers: %v", perr)
	}
	return s.Peers(origin, peers)
}
