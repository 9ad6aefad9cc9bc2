//go:build linux

package linkem

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestLinkNoPerPacketAllocation: at 50 Mbit/s a link moves ~4,200 full
// packets a second each way on a 2-core machine, so the packet path must
// not allocate (garbage collection would add latency spikes).
func TestLinkNoPerPacketAllocation(t *testing.T) {
	client, linkClient := seqpacketPair(t)
	router, linkRouter := seqpacketPair(t)
	tl, err := CreateTimeline(filepath.Join(t.TempDir(), "x.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	p := Params{RateBps: 1e9, QueueBytes: 1 << 20}
	l, err := Start(Config{Name: "x", ClientFd: linkClient, RouterFd: linkRouter, Down: p, Up: p, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pkt := make([]byte, 1500)
	buf := make([]byte, 2048)
	pass := func(n int) {
		for i := 0; i < n; i++ {
			if err := writePacket(client, pkt); err != nil {
				t.Fatal(err)
			}
			if _, err := readTimeout(router, buf, time.Second); err != nil {
				t.Fatal(err)
			}
			if err := writePacket(router, pkt[:52]); err != nil {
				t.Fatal(err)
			}
			if _, err := readTimeout(client, buf, time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	pass(200) // warm up: the drop-tail ring and the poller reach their size
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 2000
	pass(n)
	runtime.ReadMemStats(&after)
	// Allow a little for the runtime itself (timers, the flush ticker).
	allocs := after.Mallocs - before.Mallocs
	t.Logf("%d allocations for %d packets", allocs, 2*n)
	if allocs > n/20 {
		t.Errorf("%d allocations for %d packets", allocs, 2*n)
	}
}
