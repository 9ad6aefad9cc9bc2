package actuate

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/limit"
)

const sess = "0123456789abcdef0123456789abcdef"

func TestParseRequest(t *testing.T) {
	tests := []struct {
		line string
		code string // "" = valid
	}{
		{`{"id":1,"verb":"hello"}`, ""},
		{`{"verb":"status"}`, ""},
		{`{"verb":"lease-renew","session":"` + sess + `","lease_ms":1000}`, ""},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1","2001:db8::1"],"multipath":true}`, ""},
		{`{"verb":"set-mptcp-enabled","session":"` + sess + `","lease_ms":1000,"value":1}`, ""},
		{`{"verb":"set-endpoint-subflow","session":"` + sess + `","lease_ms":1000,"enabled":false}`, ""},
		{`{"verb":"release","session":"` + sess + `"}`, ""},
		{`{"verb":"reboot"}`, CodeUnknownVerb},
		{`{"verb":""}`, CodeUnknownVerb},
		{`not json`, CodeBadRequest},
		{`{"verb":"hello"} {"verb":"hello"}`, CodeBadRequest},
		{`{"verb":"hello","extra":1}`, CodeBadRequest},
		{`{"verb":"lease-renew","session":"abc","lease_ms":1000}`, CodeBadSession},
		{`{"verb":"lease-renew","session":"` + strings.Repeat("z", 32) + `","lease_ms":1000}`, CodeBadSession},
		{`{"verb":"lease-renew","lease_ms":1000}`, CodeBadSession},
		{`{"verb":"lease-renew","session":"` + sess + `","lease_ms":10}`, CodeBadArgument},
		{`{"verb":"lease-renew","session":"` + sess + `","lease_ms":600000}`, CodeBadArgument},
		{`{"verb":"set-mptcp-enabled","session":"` + sess + `","lease_ms":1000,"value":2}`, CodeBadArgument},
		{`{"verb":"set-mptcp-enabled","session":"` + sess + `","lease_ms":1000}`, CodeBadArgument},
		{`{"verb":"set-endpoint-subflow","session":"` + sess + `","lease_ms":1000}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["10.0.0.300"],"multipath":true}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["example.com"],"multipath":true}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["127.0.0.1"],"multipath":true}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["fe80::1%eth0"],"multipath":true}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":[],"multipath":true}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"]}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"theta1":-1}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"theta2":-5}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"theta1":128000,"group":4294967295}`, ""},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"group":-1}`, CodeBadRequest},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"group":4294967296}`, CodeBadRequest},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"group":"a"}`, CodeBadRequest},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true,"group":7}`, ""},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true,"group":-7}`, CodeBadRequest},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true,"theta1":262144,"theta2":1048576}`, ""},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"[2001:db8::2]:40000","remote":"[2001:db8::1]:443","multipath":false}`, ""},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443"}`, CodeBadArgument},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2","remote":"192.0.2.1:8443","multipath":true}`, CodeBadArgument},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:0","remote":"192.0.2.1:8443","multipath":true}`, CodeBadArgument},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"0.0.0.0:40000","remote":"192.0.2.1:8443","multipath":true}`, CodeBadArgument},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"[2001:db8::1]:443","multipath":true}`, CodeBadArgument},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"[fe80::1%eth0]:40000","remote":"[fe80::2]:443","multipath":true}`, CodeBadArgument},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true,"theta1":-1}`, CodeBadArgument},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true,"addrs":["192.0.2.1"]}`, CodeBadArgument},
		{`{"verb":"set-conn-policy","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true}`, CodeBadSession},
		// prefer_cellular: on both verbs, with multipath only, a boolean only.
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"prefer_cellular":true}`, ""},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"theta1":262144,"prefer_cellular":false}`, ""},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":false,"prefer_cellular":true}`, CodeBadArgument},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":false,"prefer_cellular":false}`, ""},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"prefer_cellular":1}`, CodeBadRequest},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"prefer_cellular":"yes"}`, CodeBadRequest},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"prefer_cell":true}`, CodeBadRequest},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true,"prefer_cellular":true}`, ""},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true,"theta1":1,"theta2":2,"group":3,"prefer_cellular":true}`, ""},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":false,"prefer_cellular":true}`, CodeBadArgument},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","prefer_cellular":true}`, CodeBadArgument},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true,"prefer_cellular":null}`, ""},
	}
	for _, tt := range tests {
		_, err := parseRequest([]byte(tt.line))
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("%s: %v", tt.line, err)
		case tt.code != "":
			e, ok := err.(*Error)
			if !ok || e.Code != tt.code {
				t.Errorf("%s: err %v, want code %s", tt.line, err, tt.code)
			}
		}
	}
}

// Point 9 of issue 12: only addresses a web server can have are taken, as an origin's or as a connection's remote
// end. Broadcast, multicast of every scope, link-local (with or without a zone), reserved and unspecified
// addresses used to pass where they had no zone.
func TestWebAddr(t *testing.T) {
	for _, c := range []struct {
		addr string
		web  bool
	}{
		{"192.0.2.7", true}, {"10.1.2.3", true}, {"2001:db8::1", true}, {"::ffff:198.51.100.1", true},
		{"255.255.255.255", false}, {"224.0.0.1", false}, {"239.255.255.250", false}, {"169.254.1.1", false},
		{"fe80::1", false}, {"ff02::1", false}, {"ff01::1", false}, {"ff0e::1", false}, {"0.0.0.0", false},
		{"0.1.2.3", false}, {"240.0.0.1", false}, {"::", false}, {"127.0.0.1", false}, {"::1", false},
		{"::ffff:255.255.255.255", false}, {"::ffff:169.254.0.1", false},
	} {
		a := netip.MustParseAddr(c.addr)
		if got := WebAddr(a); got != c.web {
			t.Errorf("WebAddr(%s) = %v, want %v", c.addr, got, c.web)
		}
		r := `{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["` + c.addr + `"],"multipath":true}`
		if _, err := parseRequest([]byte(r)); (err == nil) != c.web {
			t.Errorf("set-origin-policy %s: %v", c.addr, err)
		}
		if !c.web && !a.Unmap().IsLoopback() {
			remote := netip.AddrPortFrom(a, 443).String()
			r := `{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"` + remote + `","multipath":true}`
			if _, err := parseRequest([]byte(r)); err == nil {
				t.Errorf("set-conn-policy to %s accepted", remote)
			}
		}
	}
}

// prefer_cellular reaches both policies, and is off unless asked for.
func TestPreferCellularCarried(t *testing.T) {
	for _, tt := range []struct {
		line string
		want bool
	}{
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true,"prefer_cellular":true}`, true},
		{`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true}`, false},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true,"prefer_cellular":true}`, true},
		{`{"verb":"set-conn-policy","session":"` + sess + `","lease_ms":1000,"local":"10.0.0.2:40000","remote":"192.0.2.1:8443","multipath":true}`, false},
	} {
		r, err := parseRequest([]byte(tt.line))
		if err != nil {
			t.Fatalf("%s: %v", tt.line, err)
		}
		var got bool
		if r.Verb == VerbOrigin {
			p, _ := r.originPolicy()
			got = p.PreferCellular
		} else {
			p, _ := r.connPolicy()
			got = p.PreferCellular
		}
		if got != tt.want {
			t.Errorf("%s: PreferCellular %v, want %v", tt.line, got, tt.want)
		}
		if a := argsOf(r); (a["prefer_cellular"] == true) != tt.want {
			t.Errorf("%s: audited arguments %v", tt.line, a)
		}
	}
}

func TestOriginPolicyUnmapsAddresses(t *testing.T) {
	r, err := parseRequest([]byte(`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["::ffff:192.0.2.7"],"multipath":false}`))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := r.originPolicy()
	if p.Addrs[0].String() != "192.0.2.7" || p.Multipath {
		t.Fatalf("%+v", p)
	}
}

func TestAllowed(t *testing.T) {
	c := Config{AllowUIDs: []uint32{1000}, AllowGIDs: []uint32{0, 50}}
	now := time.Unix(1e9, 0)
	for _, tt := range []struct {
		p    Peer
		want bool
	}{
		{Peer{Uid: 1000, Gid: 1000}, true},
		{Peer{Uid: 1001, Gid: 50}, true},
		{Peer{Uid: 1001, Gid: 1001}, false},
		{Peer{Uid: 0, Gid: 0}, false}, // root only when its uid is listed
	} {
		if got := c.allowed(tt.p, nil, now); got != tt.want {
			t.Errorf("%+v: %v", tt.p, got)
		}
	}
	c.AllowUIDs = append(c.AllowUIDs, 0)
	if !c.allowed(Peer{}, nil, now) {
		t.Error("listed root refused")
	}
}

// The group's members are served, by primary gid or as the group database lists them; a user added later is
// served once the cached answer is older than groupTTL; root never through the group; a removed group serves no one.
func TestAllowedGroup(t *testing.T) {
	db := map[uint32][]string{1000: {"1000", "120"}, 1001: {"1001"}, 0: {"0", "120"}}
	gid := "120"
	lookups := 0
	g := newGroupMembers("mpsurf")
	g.groupsOf = func(uid uint32) ([]string, error) {
		lookups++
		if ids, ok := db[uid]; ok {
			return slices.Clone(ids), nil
		}
		return nil, errors.New("unknown uid")
	}
	g.gidOf = func(string) (string, error) {
		if gid == "" {
			return "", errors.New("no such group")
		}
		return gid, nil
	}
	c := Config{AllowGroup: "mpsurf"}
	now := time.Unix(1e9, 0)
	for _, tt := range []struct {
		p    Peer
		want bool
	}{
		{Peer{Uid: 1000, Gid: 1000}, true}, // a supplementary member
		{Peer{Uid: 1002, Gid: 120}, true},  // the group is its primary group
		{Peer{Uid: 1001, Gid: 1001}, false},
		{Peer{Uid: 4242, Gid: 4242}, false}, // unknown to the user database
		{Peer{Uid: 0, Gid: 0}, false},       // root, though listed
	} {
		if got := c.allowed(tt.p, g, now); got != tt.want {
			t.Errorf("%+v: %v, want %v", tt.p, got, tt.want)
		}
	}
	// Cached: a second connection within groupTTL costs no lookup; after it, a new member is served.
	n := lookups
	db[1001] = append(db[1001], "120")
	if c.allowed(Peer{Uid: 1001, Gid: 1001}, g, now.Add(groupTTL/2)) || lookups != n {
		t.Errorf("within groupTTL: lookups %d -> %d", n, lookups)
	}
	if !c.allowed(Peer{Uid: 1001, Gid: 1001}, g, now.Add(2*groupTTL)) {
		t.Error("a member added to the group is not served after groupTTL")
	}
	gid = ""
	if c.allowed(Peer{Uid: 1000, Gid: 1000}, g, now.Add(4*groupTTL)) {
		t.Error("served through a group that no longer exists")
	}
	if err := g.check(); err == nil {
		t.Error("check passed for a missing group")
	}
}

func TestParseIDs(t *testing.T) {
	ids, err := ParseIDs("1000, 0")
	if err != nil || len(ids) != 2 || ids[0] != 1000 || ids[1] != 0 {
		t.Fatal(ids, err)
	}
	for _, bad := range []string{"x", "1,,2", "-1", "4294967296"} {
		if _, err := ParseIDs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Rate limits are per uid, however many processes (connections) share it, and the session's own connection has
// its own, so that another process of the uid cannot starve the session's renewals. The uid map stays bounded.
func TestRateLimit(t *testing.T) {
	s := &Server{cfg: Config{Rate: 1, Burst: 3}, uidLimit: limit.NewKeyed[uint32](1, 3, 8)}
	now := time.Now()
	n := 0
	for i := range 40 {
		cl := &client{peer: Peer{Pid: 100 + i, Uid: 5}} // 40 processes of one uid
		if ok, _ := s.charge(cl, Request{Verb: VerbLeaseRenew, Session: sess}, now); ok {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d of 40 requests from 40 processes of one uid allowed at once, with a burst of 3", n)
	}
	ok, wait := s.charge(&client{peer: Peer{Uid: 5}}, Request{}, now)
	if ok || wait < 900*time.Millisecond || wait > time.Second {
		t.Fatalf("over the limit: ok %v, retry in %v (want about 1 s at 1/s)", ok, wait)
	}
	if ok, _ := s.charge(&client{peer: Peer{Uid: 6}}, Request{}, now); !ok {
		t.Fatal("another uid shares the bucket")
	}
	// The session's connection, with its token, is charged to the session, not to the exhausted uid.
	owner := &client{peer: Peer{Uid: 5}}
	s.session, s.owner, s.sessLimit = sess, owner, limit.Full(3, now)
	if ok, _ := s.charge(owner, Request{Verb: VerbLeaseRenew, Session: sess}, now); !ok {
		t.Fatal("the session's own renewal was starved by other processes of its uid")
	}
	// The same token on another connection is charged to the uid.
	if ok, _ := s.charge(&client{peer: Peer{Uid: 5}}, Request{Verb: VerbLeaseRenew, Session: sess}, now); ok {
		t.Fatal("the session's token on another connection got the session's budget")
	}
	for u := range uint32(1000) {
		s.charge(&client{peer: Peer{Uid: 10 + u}}, Request{}, now)
	}
	if n := s.uidLimit.Len(); n > 8 {
		t.Fatalf("%d uids remembered, bound 8", n)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":1000,"addrs":["192.0.2.1"],"multipath":true}`))
	f.Add([]byte(`{"verb":"hello"}`))
	f.Add([]byte(`{"verb":"set-mptcp-enabled","value":0}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := parseRequest(line)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		// Whatever passes must satisfy the invariants the handlers rely on.
		if r.Verb == VerbEnabled && *r.Value != 0 && *r.Value != 1 {
			t.Fatal("enabled value outside 0|1 accepted")
		}
		if r.Verb == VerbOrigin {
			if _, err := r.originPolicy(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestConnPolicyOwnership(t *testing.T) {
	local, remote := netip.MustParseAddrPort("10.0.0.2:40000"), netip.MustParseAddrPort("192.0.2.1:8443")
	for _, tt := range []struct {
		name  string
		uid   uint32
		found bool
		err   error
		code  string // "" = allowed
	}{
		{"own connection", 1000, true, nil, ""},
		{"another user's", 1001, true, nil, CodeRefused},
		{"no such connection", 1000, false, nil, CodeBadArgument},
		{"sock_diag failed", 1000, false, errors.New("netlink: permission denied"), CodeKernel},
	} {
		s := &Server{findSock: func(l, r netip.AddrPort) (uint32, bool, error) {
			if l != local || r != remote {
				t.Fatalf("looked up %s -> %s", l, r)
			}
			return tt.uid, tt.found, tt.err
		}}
		err := s.owns(Peer{Uid: 1000}, local, remote)
		var e *Error
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.code != "" && (!errors.As(err, &e) || e.Code != tt.code):
			t.Errorf("%s: err %v, want code %s", tt.name, err, tt.code)
		}
	}
}

// --cell-if auto takes the first cellular interface that is up, as sysfs marks it.
func TestAutoCell(t *testing.T) {
	got, err := autoCell("../ifaces/testdata/host")
	if err != nil || got != "wwan0" {
		t.Errorf("autoCell: %q, %v; want wwan0 (DEVTYPE=wwan)", got, err)
	}
	if got, err := autoCell("../ifaces/testdata/testbed"); err == nil {
		t.Errorf("the testbed's TUN links carry no cellular mark, yet %q was found", got)
	}
}
