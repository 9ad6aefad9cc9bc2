//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/e2e/topo"
	"github.com/mpsurf/mpsurf/native-host/netns"
)

// Probes are TCP endpoints created inside the testbed's namespaces from this
// process: a socket belongs to the netns of the thread that creates it, so
// netns.RunNamed is enough and no helper process is needed.

// probeCC is the congestion control of the accuracy probes: a loss-based
// one keeps a saturated drop-tail queue non-empty, so the link, not the
// sender's probing, sets the rate (BBR, some hosts' default, deliberately
// drains the queue). Accepted connections inherit it from the listener.
const probeCC = "cubic"

func listenIn(ns, addr string, mptcp bool, cc string) (net.Listener, error) {
	lc := net.ListenConfig{Control: netns.CongestionControl(cc)}
	lc.SetMultipathTCP(mptcp)
	return topo.Listen(ns, lc, "tcp4", addr)
}

// dialIn connects from local (an address of the client, which selects the
// path through source routing; "" for the default route) and returns the
// connection and the connect time (SYN to SYN-ACK).
func dialIn(ns, local, remote string, mptcp bool, cc string, timeout time.Duration) (net.Conn, time.Duration, error) {
	d := net.Dialer{Timeout: timeout, Control: netns.CongestionControl(cc)}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	d.SetMultipathTCP(mptcp)
	start := time.Now()
	c, err := topo.Dial(ns, d, "tcp4", remote)
	return c, time.Since(start), err
}

// abort closes c with a reset, dropping unsent data, so that a finished
// probe leaves nothing in the emulated links to disturb the next one (a plain
// Close keeps sending the send buffer from FIN-WAIT-1).
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// echoServer answers every byte it reads with one byte, for RTT probes.
func echoServer(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			b := make([]byte, 1)
			for {
				if _, err := io.ReadFull(c, b); err != nil {
					return
				}
				if _, err := c.Write(b); err != nil {
					return
				}
			}
		}()
	}
}

// pingPong sends n one-byte messages and returns each round-trip time.
func pingPong(c net.Conn, n int, timeout time.Duration) ([]time.Duration, error) {
	b := []byte{1}
	var out []time.Duration
	for i := 0; i < n; i++ {
		c.SetDeadline(time.Now().Add(timeout))
		start := time.Now()
		if _, err := c.Write(b); err != nil {
			return out, err
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return out, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// devCounter reads one interface's received bytes from /proc/net/dev of a
// namespace. The file is opened inside the namespace and keeps reporting
// that namespace, so a read costs no process start and can be timed
// precisely (unlike `ip netns exec cat /sys/...`).
type devCounter struct {
	f     *os.File
	iface string
}

func openDevCounter(ns, iface string) (*devCounter, error) {
	var f *os.File
	err := netns.RunNamed(ns, func() error {
		var err error
		f, err = os.Open("/proc/thread-self/net/dev")
		return err
	})
	if err != nil {
		return nil, err
	}
	return &devCounter{f: f, iface: iface}, nil
}

// rxBytes returns the interface's received bytes.
func (d *devCounter) rxBytes() (uint64, error) {
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(d.f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(name) != d.iface {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		return strconv.ParseUint(f[0], 10, 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/net/dev: no interface %s", d.iface)
}

func (d *devCounter) Close() error { return d.f.Close() }

// bulk sends bytes from w as fast as TCP allows until stop is closed.
func bulkSend(c net.Conn, stop <-chan struct{}) error {
	buf := make([]byte, 64<<10)
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := c.Write(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			return err
		}
	}
}
