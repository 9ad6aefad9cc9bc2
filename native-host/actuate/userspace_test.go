package actuate

import (
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/diag"
)

// A waiting connection is read as often as it could get near θ1 at four times its last rate, between pollEvery
// and pollIdle; an idle one every pollIdle; one past θ1 at once.
func TestNextPoll(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rx, theta1 uint64
		rate       float64
		want       time.Duration
	}{
		{"idle, far from θ1", 60_000, 256_000, 0, pollIdle},
		{"slow, far from θ1", 0, 256_000, 100_000, pollIdle},          // 640 ms away at 4x
		{"7 Mbit/s, 200 kB left", 56_000, 256_000, 875_000, pollIdle}, // 57 ms away at 4x: capped
		{"fast, near θ1", 250_000, 256_000, 1_250_000, pollEvery},     // 1.2 ms away
		{"at θ1", 256_000, 256_000, 0, pollEvery},
		{"10 Mbit/s, 100 kB left", 156_000, 256_000, 1_250_000, 20 * time.Millisecond},
	} {
		want := tc.want
		if got := nextPoll(tc.rx, tc.theta1, tc.rate); got != want {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
	}
}

// A cellular subflow is stalled once it has received nothing for stallAfter while the WiFi subflow received
// stallWifiBytes; progress on it restarts the clock, and an idle connection (neither receives) never stalls.
func TestStallWatch(t *testing.T) {
	type reading struct {
		at            time.Duration
		cell, wifi    uint64
		stalled, busy bool
	}
	for _, tc := range []struct {
		name  string
		reads []reading
	}{
		{"both receive", []reading{{0, 0, 0, false, true}, {500 * time.Millisecond, 100_000, 100_000, false, true},
			{1500 * time.Millisecond, 300_000, 300_000, false, true}}},
		{"cellular silent while WiFi carries the page", []reading{{0, 50_000, 50_000, false, true},
			{500 * time.Millisecond, 50_000, 150_000, false, true}, {999 * time.Millisecond, 50_000, 250_000, false, true},
			{time.Second, 50_000, 260_000, true, true}}},
		{"cellular progress restarts the clock", []reading{{0, 50_000, 50_000, false, true},
			{900 * time.Millisecond, 51_000, 250_000, false, true}, {1500 * time.Millisecond, 51_000, 400_000, false, true},
			{1900 * time.Millisecond, 51_000, 500_000, true, true}}},
		{"idle connection", []reading{{0, 50_000, 50_000, false, true}, {time.Second, 50_000, 50_000, false, false},
			{10 * time.Second, 50_000, 50_000, false, false}}},
		{"WiFi carried too little to call it a stall", []reading{{0, 50_000, 50_000, false, true},
			{2 * time.Second, 50_000, 50_000 + stallWifiBytes - 1, false, true}}},
		{"counters restarted (a new socket)", []reading{{0, 50_000, 500_000, false, true},
			{2 * time.Second, 50_000, 1_000, false, true}, {2500 * time.Millisecond, 50_000, 100_000, false, true}}},
	} {
		var w stallWatch
		t0 := time.Unix(1_800_000_000, 0)
		for i, r := range tc.reads {
			stalled, busy := w.observe(t0.Add(r.at), r.cell, r.wifi)
			if stalled != r.stalled || busy != r.busy {
				t.Errorf("%s, reading %d: stalled %v busy %v, want %v %v", tc.name, i, stalled, busy, r.stalled, r.busy)
			}
		}
	}
	// silent: since the cellular subflow's last progress (what a path-wide stall closes other subflows by).
	var w stallWatch
	t0 := time.Unix(1_800_000_000, 0)
	if d := w.silent(t0); d != 0 {
		t.Errorf("silent before any reading: %v", d)
	}
	w.observe(t0, 10, 10)
	w.observe(t0.Add(time.Second), 20, 10)
	w.observe(t0.Add(3*time.Second), 20, 10)
	if d := w.silent(t0.Add(3 * time.Second)); d != 2*time.Second {
		t.Errorf("silent: %v, want 2s", d)
	}
}

// A subflow whose in-order bytes wait on a hole still delivers: the segments arriving behind the hole move its
// progress, and nothing else does.
func TestDelivered(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after diag.Sock
		moved         bool
	}{
		{"in-order data", diag.Sock{BytesReceived: 1000, DataSegsIn: 1}, diag.Sock{BytesReceived: 2448, DataSegsIn: 2}, true},
		{"out-of-order data behind a hole", diag.Sock{BytesReceived: 1000, DataSegsIn: 10}, diag.Sock{BytesReceived: 1000, DataSegsIn: 14}, true},
		{"the hole filled, nothing new", diag.Sock{BytesReceived: 1000, DataSegsIn: 14}, diag.Sock{BytesReceived: 7000, DataSegsIn: 15}, true},
		{"nothing arrived", diag.Sock{BytesReceived: 1000, DataSegsIn: 14}, diag.Sock{BytesReceived: 1000, DataSegsIn: 14}, false},
		{"old kernel: bytes alone", diag.Sock{BytesReceived: 1000}, diag.Sock{BytesReceived: 1000}, false},
	} {
		if moved := delivered(&tc.after) != delivered(&tc.before); moved != tc.moved {
			t.Errorf("%s: moved %v, want %v", tc.name, moved, tc.moved)
		}
	}
}

// The cellular link is silent only while none of the open cellular subflows receives: one idle subflow beside a
// busy one is not a stall.
func TestLinkWatch(t *testing.T) {
	a := flow{netip.MustParseAddrPort("10.0.2.1:40000"), netip.MustParseAddrPort("10.0.9.9:443")}
	b := flow{netip.MustParseAddrPort("10.0.2.1:40001"), netip.MustParseAddrPort("10.0.9.9:443")}
	t0 := time.Unix(1_800_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var l linkWatch
	if d := l.silent(t0); d < time.Hour {
		t.Fatalf("no subflow ever received, silent %v: want forever", d)
	}
	for _, step := range []struct {
		ms     int
		rx     map[flow]uint64
		silent time.Duration // at this step, after the reading
	}{
		{0, map[flow]uint64{a: 0}, time.Duration(math.MaxInt64)},             // joined, no data yet
		{100, map[flow]uint64{a: 5000}, 0},                                   // a receives
		{900, map[flow]uint64{a: 5000, b: 0}, 800 * time.Millisecond},        // b joins empty; a idle
		{1500, map[flow]uint64{a: 5000, b: 20_000}, 0},                       // b busy, a idle: the link delivers
		{2600, map[flow]uint64{a: 5000, b: 20_000}, 1100 * time.Millisecond}, // both silent
		{2700, map[flow]uint64{b: 20_000}, 1200 * time.Millisecond},          // a closed: no progress
		{2800, map[flow]uint64{b: 20_000, a: 100}, 0},                        // a new subflow with data
	} {
		l.observe(at(step.ms), step.rx)
		if d := l.silent(at(step.ms)); d != step.silent {
			t.Errorf("at %d ms: silent %v, want %v", step.ms, d, step.silent)
		}
	}
}

// A per-connection policy that no MPTCP connection took within connPolUnbound is dropped at the next connection
// or policy; one a connection took stays until that connection closes.
func TestConnPolicyExpires(t *testing.T) {
	u := &userspaceBackend{connPol: map[flow]connEntry{}}
	f := func(port uint16) flow {
		return flow{netip.AddrPortFrom(netip.MustParseAddr("10.0.0.2"), port), netip.MustParseAddrPort("192.0.2.1:443")}
	}
	t0 := time.Unix(1000, 0)
	u.connPol[f(1)] = connEntry{p: addrPolicy{multipath: true}, at: t0}
	u.connPol[f(2)] = connEntry{p: addrPolicy{multipath: true}, at: t0}
	u.bindConnPol(f(2), t0.Add(time.Second)) // f(2)'s connection shows up in time
	u.bindConnPol(flow{}, t0.Add(connPolUnbound+time.Second))
	if _, ok := u.connPol[f(1)]; ok {
		t.Error("a policy whose connection never showed up is still kept")
	}
	if e, ok := u.connPol[f(2)]; !ok || !e.bound {
		t.Errorf("the policy of a connection that showed up was dropped: %+v %v", e, ok)
	}
	// Set long ago, its two ends come round again: not taken.
	u.connPol[f(3)] = connEntry{p: addrPolicy{multipath: true}, at: t0}
	u.bindConnPol(f(3), t0.Add(time.Minute))
	if _, ok := u.connPol[f(3)]; ok {
		t.Error("a new connection took a policy set for another one a minute before")
	}
}
