package actuate

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// The receive-buffer gate: past θ1, a connection that has received data gets its cellular subflow only once its
// receive buffer has grown past a new connection's; it is read every gatePoll meanwhile while it receives, every
// pollIdle while idle. A connection that has
// received nothing joins at once. Without MPTCP socket diagnostics, or without the initial size, there is no gate.
func TestUserspaceRcvbufGate(t *testing.T) {
	ms := time.Millisecond
	const rb0 = 131072
	for _, tc := range []struct {
		name     string
		policy   OriginPolicy
		rb0      uint32
		dumpErr  error
		atOpen   []string
		rcvbuf   []uint32 // the connection's receive buffer at each reading
		readings []reading
	}{
		{"past θ1, the buffer not grown: held until it grows", OriginPolicy{Multipath: true, Theta1: 100_000}, rb0, nil, nil,
			[]uint32{rb0, rb0, rb0, 300_000}, []reading{
				{at: 0, wifi: map[uint32]uint64{1: 150_000}, next: gatePoll},       // past θ1: held, buffer not read yet
				{at: 20 * ms, wifi: map[uint32]uint64{1: 151_000}, next: gatePoll}, // read: still 131072
				{at: 40 * ms, wifi: map[uint32]uint64{1: 151_000}, next: pollIdle}, // idle: read seldom
				{at: 60 * ms, wifi: map[uint32]uint64{1: 400_000}, next: 0, cmds: []string{"create 1 from 10.0.2.2"}},
			}},
		{"θ1 = 0: at ESTABLISHED, nothing received yet, at once", OriginPolicy{Multipath: true}, rb0, nil,
			[]string{"create 1 from 10.0.2.2"}, []uint32{rb0}, []reading{{at: 0, next: 0}}},
		{"no MPTCP socket diagnostics: no gate", OriginPolicy{Multipath: true, Theta1: 100_000}, rb0, errors.New("no mptcp_diag"), nil,
			[]uint32{rb0, rb0}, []reading{
				{at: 0, wifi: map[uint32]uint64{1: 150_000}, next: gatePoll},
				{at: 20 * ms, wifi: map[uint32]uint64{1: 150_000}, next: 0, cmds: []string{"create 1 from 10.0.2.2"}},
			}},
		{"initial size unknown: no gate", OriginPolicy{Multipath: true, Theta1: 100_000}, 0, nil, nil,
			[]uint32{rb0}, []reading{
				{at: 0, wifi: map[uint32]uint64{1: 150_000}, next: 0, cmds: []string{"create 1 from 10.0.2.2"}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, k := testUserspace(t, tc.policy)
			u.rcvbuf0 = tc.rb0
			k.mptcpErr = tc.dumpErr
			k.rcvbuf = map[uint32]uint32{}
			openConn(u, k, 1)
			if got := k.taken(); !slices.Equal(got, tc.atOpen) {
				t.Fatalf("at ESTABLISHED: %q, want %q", got, tc.atOpen)
			}
			t0 := time.Unix(1_800_000_000, 0)
			for i, r := range tc.readings {
				k.rcvbuf[1] = tc.rcvbuf[i]
				r.apply(t, u, k, t0, i)
			}
			rec := u.conns[1].rec
			// Held back at least once wherever the initial size is known: the first hold comes before the dump.
			gated := tc.rb0 != 0 && tc.atOpen == nil
			if (rec.GatedNS != 0) != gated || (u.stats.RcvbufWaits == 1) != gated {
				t.Errorf("gated_ns %d, rcvbuf_waits %d; want the wait recorded: %v", rec.GatedNS, u.stats.RcvbufWaits, gated)
			}
			if gated && tc.dumpErr == nil && rec.RcvbufAtRequest != tc.rcvbuf[len(tc.rcvbuf)-1] {
				t.Errorf("rcvbuf_at_request %d, want %d", rec.RcvbufAtRequest, tc.rcvbuf[len(tc.rcvbuf)-1])
			}
			if tc.dumpErr != nil && (u.rcvbuf0 != 0 || k.mptcpDumps != 1) {
				t.Errorf("after a failed dump: gate start %d, %d dumps; want off (0) after one", u.rcvbuf0, k.mptcpDumps)
			}
			if tc.rb0 == 0 && k.mptcpDumps != 0 {
				t.Errorf("%d MPTCP dumps without a gate", k.mptcpDumps)
			}
		})
	}
}

func TestParseRmemDefault(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"4096\t131072\t33554432\n", 131072, true},
		{"4096 87380 6291456", 87380, true},
		{"4096\t0\t6291456\n", 0, false},
		{"4096\t131072\n", 0, false},
		{"a b c", 0, false},
		{"4096 99999999999 1", 0, false},
		{"", 0, false},
	} {
		got, ok := parseRmemDefault(c.in)
		if got != c.want && ok || ok != c.ok {
			t.Errorf("parseRmemDefault(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParseRmemDefault(f *testing.F) {
	f.Add("4096\t131072\t33554432\n")
	f.Add("1 2")
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := parseRmemDefault(s); ok && v == 0 {
			t.Fatalf("%q: ok with 0", s)
		}
	})
}
