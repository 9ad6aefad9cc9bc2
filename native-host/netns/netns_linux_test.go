//go:build linux

package netns_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/netns"
	"github.com/mpsurf/mpsurf/native-host/nstest"
	"golang.org/x/sys/unix"
)

func ownNetns(t *testing.T) string {
	t.Helper()
	l, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Run moves the function into the namespace and the thread back out; a listener made inside lives there.
func TestIntegrationRun(t *testing.T) {
	nstest.NeedRoot(t)
	ns := nstest.New(t, "nsrun", "a")
	outside := ownNetns(t)
	var inside string
	var ln net.Listener
	err := netns.RunNamed(ns.Name, func() error {
		inside = ownNetns(t)
		var err error
		ln, err = net.Listen("tcp4", "127.0.0.1:0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if inside == outside || ownNetns(t) != outside {
		t.Errorf("inside %s, outside %s, after %s", inside, outside, ownNetns(t))
	}
	// Loopback of the namespace, not of this one: dialling from here finds nothing there.
	if c, err := net.Dial("tcp4", ln.Addr().String()); err == nil {
		c.Close()
		t.Errorf("reached %s from outside the namespace", ln.Addr())
	}
	if err := ns.In(func() error {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		t.Errorf("from inside: %v", err)
	}
	if err := netns.RunNamed("mpsurf-no-such-netns", func() error { return nil }); err == nil {
		t.Error("a missing namespace ran")
	}
}

// CongestionControl sets the algorithm asked for, leaves the default for "", and names where to look when the
// algorithm does not exist.
func TestIntegrationCongestionControl(t *testing.T) {
	nstest.NeedRoot(t)
	for _, tc := range []struct{ cc, want, err string }{
		{"cubic", "cubic", ""},
		{"reno", "reno", ""},
		{"", "", ""},
		{"no-such-cc", "", "tcp_available_congestion_control"},
	} {
		lc := net.ListenConfig{Control: netns.CongestionControl(tc.cc)}
		ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error naming %s", tc.cc, err, tc.err)
			}
			if ln != nil {
				ln.Close()
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.cc, err)
		}
		raw, _ := ln.(*net.TCPListener).SyscallConn()
		var got string
		raw.Control(func(fd uintptr) { got, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION) })
		ln.Close()
		if tc.want != "" && got != tc.want {
			t.Errorf("%q: socket has %q", tc.cc, got)
		}
	}
}
