package actuate

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/diag"
	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// fakeKernel is the path manager and the sockets as pure logic: a test sets each socket's counters and reads back
// the commands the backend sent. It answers every connection's owner as uid.
type fakeKernel struct {
	uid   uint32
	socks map[flow]diag.Sock
	// rcvbuf: each connection's receive buffer, by token, as DumpMPTCP reads it; mptcpErr fails DumpMPTCP (a kernel
	// without mptcp_diag). mptcpDumps counts the calls.
	rcvbuf     map[uint32]uint32
	mptcpErr   error
	mptcpDumps int
	cmds       []string
}

func (k *fakeKernel) SetDeadline(time.Time) error { return nil }
func (k *fakeKernel) SubflowCreate(token uint32, local mptcp.Endpoint, remote netip.AddrPort) error {
	k.cmds = append(k.cmds, fmt.Sprintf("create %d from %s", token, local.Addr))
	return nil
}
func (k *fakeKernel) SubflowDestroy(token uint32, local, remote netip.AddrPort) error {
	k.cmds = append(k.cmds, fmt.Sprintf("destroy %d %s", token, local))
	return nil
}
func (k *fakeKernel) SubflowSetBackup(token uint32, local, remote netip.AddrPort, backup bool) error {
	k.cmds = append(k.cmds, fmt.Sprintf("backup %d %s %v", token, local, backup))
	return nil
}
func (k *fakeKernel) Close() error { return nil }
func (k *fakeKernel) Dump(out []diag.Sock) ([]diag.Sock, error) {
	for f, s := range k.socks {
		s.Local, s.Remote = f.local, f.remote
		out = append(out, s)
	}
	return out, nil
}
func (k *fakeKernel) DumpMPTCP(out []diag.MPTCPSock) ([]diag.MPTCPSock, error) {
	k.mptcpDumps++
	if k.mptcpErr != nil {
		return out, k.mptcpErr
	}
	for tok, rb := range k.rcvbuf {
		out = append(out, diag.MPTCPSock{Token: tok, Local: initialOf(tok), Remote: tServers[tok], RcvBuf: rb})
	}
	return out, nil
}
func (k *fakeKernel) Find(local, remote netip.AddrPort) (diag.Sock, bool, error) {
	return diag.Sock{Local: local, Remote: remote, UID: k.uid}, true, nil
}

// taken returns the commands sent since the last call.
func (k *fakeKernel) taken() []string {
	c := k.cmds
	k.cmds = nil
	return c
}

var (
	tWiFi = netip.MustParseAddr("10.0.1.2")
	tCell = netip.MustParseAddr("10.0.2.2")
	// Each connection's token is its index here: its server, and its initial and cellular subflows' local ends.
	tServers = []netip.AddrPort{{}, netip.MustParseAddrPort("192.0.2.1:443"), netip.MustParseAddrPort("192.0.2.2:443"), netip.MustParseAddrPort("192.0.2.1:443")}
)

func initialOf(tok uint32) netip.AddrPort { return netip.AddrPortFrom(tWiFi, 40000+uint16(tok)) }
func cellOf(tok uint32) netip.AddrPort    { return netip.AddrPortFrom(tCell, 50000+uint16(tok)) }

// testUserspace is the userspace backend over a fakeKernel for uid 1000, with the cellular address fixed, holding
// p (for uid 1000 unless it names another), with the connections toks created and established.
func testUserspace(t *testing.T, p OriginPolicy, toks ...uint32) (*userspaceBackend, *fakeKernel) {
	t.Helper()
	k := &fakeKernel{uid: 1000, socks: map[flow]diag.Sock{}}
	u := newUserspace(nil, cellSource{addr: tCell}, nil, k, k, k)
	if p.UID == 0 {
		p.UID = 1000
	}
	if len(p.Addrs) == 0 {
		p.Addrs = []netip.Addr{tServers[1].Addr(), tServers[2].Addr()}
	}
	if err := u.SetOrigin(p); err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		openConn(u, k, tok)
	}
	return u, k
}

// openConn hands the backend connection tok's CREATED and ESTABLISHED.
func openConn(u *userspaceBackend, k *fakeKernel, tok uint32) {
	src, dst := initialOf(tok), tServers[tok]
	ev := mptcp.Event{Token: tok, Saddr: src.Addr(), Sport: src.Port(), Daddr: dst.Addr(), Dport: dst.Port()}
	ev.Type = mptcp.EventCreated
	u.handle(ev)
	ev.Type = mptcp.EventEstablished
	u.handle(ev)
	k.socks[flow{src, dst}] = diag.Sock{}
}

// joined hands the backend the SUB_ESTABLISHED of tok's cellular subflow, which it asked for.
func joined(u *userspaceBackend, k *fakeKernel, tok uint32) {
	src, dst := cellOf(tok), tServers[tok]
	u.handle(mptcp.Event{Type: mptcp.EventSubEstablished, Token: tok, Saddr: src.Addr(), Sport: src.Port(), Daddr: dst.Addr(), Dport: dst.Port()})
	k.socks[flow{src, dst}] = diag.Sock{}
}

// A reading of the counters: what each connection's initial (WiFi) subflow has received, and each cellular
// subflow's bytes received (and, for θ2, acknowledged) and data segments.
type reading struct {
	at   time.Duration
	wifi map[uint32]uint64
	cell map[uint32]diag.Sock
	next time.Duration // what poll answers: how long until the next reading (0: none needed; anyNext: not checked)
	cmds []string      // the commands this poll sent
}

// anyNext leaves poll's answer unchecked: where it depends on the order the connections are visited in.
const anyNext = -1

// apply sets the counters of r and polls at t0 + r.at.
func (r reading) apply(t *testing.T, u *userspaceBackend, k *fakeKernel, t0 time.Time, i int) {
	t.Helper()
	for tok, rx := range r.wifi {
		s := k.socks[flow{initialOf(tok), tServers[tok]}]
		s.BytesReceived = rx
		k.socks[flow{initialOf(tok), tServers[tok]}] = s
	}
	for tok, s := range r.cell {
		k.socks[flow{cellOf(tok), tServers[tok]}] = s
	}
	_, next := u.poll(nil, func() time.Time { return t0.Add(r.at) })
	got := k.taken()
	slices.Sort(got)
	slices.Sort(r.cmds)
	if (r.next != anyNext && next != r.next) || !slices.Equal(got, r.cmds) {
		t.Errorf("reading %d at %v: next %v, commands %q; want %v, %q", i, r.at, next, got, r.next, r.cmds)
	}
}

// θ1 polling: a connection to an address decided multipath gets its cellular subflow once it, or its θ1 group,
// has received θ1 bytes, and is read meanwhile only as often as it could get near θ1 (nextPoll); nothing else is
// read at all.
func TestUserspaceTheta1(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		policy   OriginPolicy
		conns    []uint32
		atOpen   []string // commands sent when the connections were established
		readings []reading
	}{
		{"θ1 = 0: at once", OriginPolicy{Multipath: true}, []uint32{1},
			[]string{"create 1 from 10.0.2.2"}, []reading{{at: 0, next: 0}}},
		{"single path: never read", OriginPolicy{Multipath: false, Theta1: 100_000}, []uint32{1},
			nil, []reading{{at: 0, wifi: map[uint32]uint64{1: 500_000}, next: 0}}},
		{"another user's decision for the address", OriginPolicy{Multipath: true, UID: 2000}, []uint32{1},
			nil, []reading{{at: 0, next: 0}}},
		{"θ2 = 0: never worth opening", OriginPolicy{Multipath: true, Theta2: new(int64)}, []uint32{1},
			nil, []reading{{at: 0, next: 0}}},
		{"below θ1, then past it", OriginPolicy{Multipath: true, Theta1: 200_000}, []uint32{1}, nil, []reading{
			{at: 0, wifi: map[uint32]uint64{1: 10_000}, next: pollEvery}, // the first reading has no rate yet
			// 50 kB in 50 ms: 1 MB/s, 140 kB left, at four times that rate 35 ms away.
			{at: 50 * ms, wifi: map[uint32]uint64{1: 60_000}, next: 35 * ms},
			{at: 85 * ms, wifi: map[uint32]uint64{1: 200_000}, next: 0, cmds: []string{"create 1 from 10.0.2.2"}},
		}},
		{"far from θ1 and idle: read every pollIdle", OriginPolicy{Multipath: true, Theta1: 4_000_000}, []uint32{1}, nil, []reading{
			{at: 0, wifi: map[uint32]uint64{1: 10_000}, next: pollEvery},
			{at: 5 * ms, wifi: map[uint32]uint64{1: 10_000}, next: pollIdle},
			{at: 55 * ms, wifi: map[uint32]uint64{1: 12_000}, next: pollIdle}, // 40 kB/s: hours away
		}},
		{"a group reaches θ1 together", OriginPolicy{Multipath: true, Theta1: 100_000, Group: 7}, []uint32{1, 2}, nil, []reading{
			{at: 0, wifi: map[uint32]uint64{1: 10_000, 2: 10_000}, next: pollEvery},
			{at: 50 * ms, wifi: map[uint32]uint64{1: 60_000, 2: 50_000}, next: 0,
				cmds: []string{"create 1 from 10.0.2.2", "create 2 from 10.0.2.2"}},
		}},
		{"without a group each counts alone", OriginPolicy{Multipath: true, Theta1: 100_000}, []uint32{1, 2}, nil, []reading{
			{at: 0, wifi: map[uint32]uint64{1: 10_000, 2: 10_000}, next: pollEvery},
			{at: 50 * ms, wifi: map[uint32]uint64{1: 60_000, 2: 50_000}, next: 10 * ms}, // 1 MB/s, 40 kB left on 1
			{at: 70 * ms, wifi: map[uint32]uint64{1: 100_000, 2: 50_000}, next: pollIdle,
				cmds: []string{"create 1 from 10.0.2.2"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, k := testUserspace(t, tc.policy, tc.conns...)
			if got := k.taken(); !slices.Equal(got, tc.atOpen) {
				t.Fatalf("at ESTABLISHED: %q, want %q", got, tc.atOpen)
			}
			t0 := time.Unix(1_800_000_000, 0)
			for i, r := range tc.readings {
				r.apply(t, u, k, t0, i)
			}
		})
	}
}

// Closing the cellular subflow: at θ2, or once it has received nothing for stallAfter while WiFi carried
// stallWifiBytes of the same connection, unless the link delivers on another subflow meanwhile or WiFi is a
// backup; a stall on the owner's cellular path takes its other silent subflows with it in the same reading.
func TestUserspaceStall(t *testing.T) {
	ms := time.Millisecond
	cell := func(rx uint64) diag.Sock { return diag.Sock{BytesReceived: rx} }
	cap100k := int64(100_000)
	for _, tc := range []struct {
		name     string
		policy   OriginPolicy
		conns    []uint32
		atJoin   []string // commands sent when the cellular subflows joined
		readings []reading
	}{
		{"silent cellular while WiFi carries the page: closed after a second", OriginPolicy{Multipath: true}, []uint32{1}, nil, []reading{
			{at: 0, wifi: map[uint32]uint64{1: 50_000}, cell: map[uint32]diag.Sock{1: cell(50_000)}, next: stallPoll},
			{at: 500 * ms, wifi: map[uint32]uint64{1: 150_000}, cell: map[uint32]diag.Sock{1: cell(50_000)}, next: stallPoll},
			{at: 1000 * ms, wifi: map[uint32]uint64{1: 260_000}, cell: map[uint32]diag.Sock{1: cell(50_000)}, next: 0,
				cmds: []string{"destroy 1 10.0.2.2:50001"}},
		}},
		{"out-of-order segments are progress", OriginPolicy{Multipath: true}, []uint32{1}, nil, []reading{
			{at: 0, wifi: map[uint32]uint64{1: 50_000}, cell: map[uint32]diag.Sock{1: cell(50_000)}, next: stallPoll},
			{at: 900 * ms, wifi: map[uint32]uint64{1: 250_000}, cell: map[uint32]diag.Sock{1: {BytesReceived: 50_000, DataSegsIn: 4}}, next: stallPoll},
			{at: 1500 * ms, wifi: map[uint32]uint64{1: 400_000}, cell: map[uint32]diag.Sock{1: {BytesReceived: 50_000, DataSegsIn: 4}}, next: stallPoll},
		}},
		{"idle connection: read seldom, never closed", OriginPolicy{Multipath: true}, []uint32{1}, nil, []reading{
			{at: 0, wifi: map[uint32]uint64{1: 50_000}, cell: map[uint32]diag.Sock{1: cell(50_000)}, next: stallPoll},
			{at: 1000 * ms, wifi: map[uint32]uint64{1: 50_000}, cell: map[uint32]diag.Sock{1: cell(50_000)}, next: stallIdle},
			{at: 10_000 * ms, wifi: map[uint32]uint64{1: 50_000}, cell: map[uint32]diag.Sock{1: cell(50_000)}, next: stallIdle},
		}},
		{"the link delivers on another subflow: only idle", OriginPolicy{Multipath: true}, []uint32{1, 2}, nil, []reading{
			{at: 0, wifi: map[uint32]uint64{1: 50_000, 2: 0}, cell: map[uint32]diag.Sock{1: cell(50_000), 2: cell(0)}, next: stallPoll},
			{at: 600 * ms, wifi: map[uint32]uint64{1: 150_000, 2: 0}, cell: map[uint32]diag.Sock{1: cell(50_000), 2: cell(300_000)}, next: stallPoll},
			{at: 1100 * ms, wifi: map[uint32]uint64{1: 260_000, 2: 0}, cell: map[uint32]diag.Sock{1: cell(50_000), 2: cell(600_000)}, next: stallPoll},
		}},
		{"WiFi a backup (PreferCellular): the kernel's to fall back", OriginPolicy{Multipath: true, PreferCellular: true}, []uint32{1},
			[]string{"backup 1 10.0.1.2:40001 true"}, []reading{
				{at: 0, wifi: map[uint32]uint64{1: 50_000}, cell: map[uint32]diag.Sock{1: cell(50_000)}, next: stallIdle},
				{at: 2000 * ms, wifi: map[uint32]uint64{1: 500_000}, cell: map[uint32]diag.Sock{1: cell(50_000)}, next: stallIdle},
			}},
		{"θ2: read every pollEvery, closed at the cap", OriginPolicy{Multipath: true, Theta2: &cap100k}, []uint32{1}, nil, []reading{
			{at: 0, wifi: map[uint32]uint64{1: 10_000}, cell: map[uint32]diag.Sock{1: {BytesReceived: 40_000, BytesAcked: 20_000}}, next: pollEvery},
			{at: 5 * ms, wifi: map[uint32]uint64{1: 10_000}, cell: map[uint32]diag.Sock{1: {BytesReceived: 80_000, BytesAcked: 20_000}}, next: 0,
				cmds: []string{"destroy 1 10.0.2.2:50001"}},
		}},
		{"a stall on the owner's cellular path takes its other silent subflow", OriginPolicy{Multipath: true}, []uint32{1, 2}, nil, []reading{
			{at: 0, wifi: map[uint32]uint64{1: 50_000, 2: 10_000}, cell: map[uint32]diag.Sock{1: cell(50_000), 2: cell(10_000)}, next: stallPoll},
			{at: 1000 * ms, wifi: map[uint32]uint64{1: 260_000, 2: 10_000}, cell: map[uint32]diag.Sock{1: cell(50_000), 2: cell(10_000)}, next: anyNext,
				cmds: []string{"destroy 1 10.0.2.2:50001", "destroy 2 10.0.2.2:50002"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, k := testUserspace(t, tc.policy, tc.conns...)
			k.taken() // the subflows asked for at ESTABLISHED (θ1 = 0)
			for _, tok := range tc.conns {
				joined(u, k, tok)
			}
			if got := k.taken(); !slices.Equal(got, tc.atJoin) {
				t.Fatalf("at SUB_ESTABLISHED: %q, want %q", got, tc.atJoin)
			}
			t0 := time.Unix(1_800_000_000, 0)
			for i, r := range tc.readings {
				r.apply(t, u, k, t0, i)
			}
		})
	}
}
