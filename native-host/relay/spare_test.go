package relay

import (
	"bufio"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// numberedDouble is a proxy double that numbers its connections (1, 2, ...) in the order it accepts them, answers
// every CONNECT with 200 and echoes, and reports on which connection each CONNECT came and which connections
// closed without one. wait > 0 closes connection 2 (the first tunnel's spare) when it sends no request within wait,
// as a proxy's timeout would; only that one, so that a fresh connection slowed by a loaded machine (its TLS
// handshake counts against a read deadline) is not taken for a stale spare.
func numberedDouble(t *testing.T, wait time.Duration) (addr, pin string, accepted *atomic.Int64, connects, unused chan int64) {
	t.Helper()
	ln, pin := tlsListener(t)
	accepted = new(atomic.Int64)
	connects, unused = make(chan int64, 16), make(chan int64, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			go func() {
				defer c.Close()
				if wait > 0 && n == 2 {
					c.SetReadDeadline(time.Now().Add(wait))
				}
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					unused <- n
					return
				}
				c.SetReadDeadline(time.Time{})
				connects <- n
				_ = req
				io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String(), pin, accepted, connects, unused
}

func spareRelay(t *testing.T, addr, pin string, idle time.Duration) *Relay {
	t.Helper()
	r, err := Start(Config{Upstream: Upstream{Addr: addr, User: "u", Password: "p", Pin: pin}, SpareIdle: idle})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// hasSpare says whether a spare is ready (its TLS done), not merely accepted by the proxy.
func hasSpare(r *Relay) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spare != nil
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(3 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func next(t *testing.T, ch chan int64) int64 {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(3 * time.Second):
		t.Fatal("nothing came")
		return 0
	}
}

// After a tunnel the relay keeps one connection ready (TLS done): the next tunnel's CONNECT goes on it, made
// before the browser asked, and there is never more than one.
func TestRelaySpareSkipsTheHandshakes(t *testing.T) {
	addr, pin, accepted, connects, _ := numberedDouble(t, 0)
	r := spareRelay(t, addr, pin, time.Minute)
	if code, err, _ := browserConnect(t, r, true); code != http.StatusOK {
		t.Fatalf("first tunnel: %d %v", code, err)
	}
	if n := next(t, connects); n != 1 {
		t.Fatalf("first CONNECT on connection %d", n)
	}
	waitFor(t, "the spare", func() bool { return hasSpare(r) })
	for i := int64(2); i <= 4; i++ {
		if code, err, _ := browserConnect(t, r, true); code != http.StatusOK {
			t.Fatalf("tunnel %d: %d %v", i, code, err)
		}
		if n := next(t, connects); n != i {
			t.Errorf("tunnel %d's CONNECT came on connection %d, want the spare %d", i, n, i)
		}
		waitFor(t, "the next spare", func() bool { return hasSpare(r) })
	}
	time.Sleep(100 * time.Millisecond)
	if n := accepted.Load(); n != 5 {
		t.Errorf("%d connections for 4 tunnels, want 5: one spare at most", n)
	}
	r.Close()
}

// A spare no tunnel takes is closed after SpareIdle, and none is made again until the next tunnel.
func TestRelaySpareClosesWhenIdle(t *testing.T) {
	addr, pin, accepted, connects, unused := numberedDouble(t, 0)
	r := spareRelay(t, addr, pin, 150*time.Millisecond)
	start := time.Now()
	if code, err, _ := browserConnect(t, r, true); code != http.StatusOK {
		t.Fatalf("tunnel: %d %v", code, err)
	}
	next(t, connects)
	if n := next(t, unused); n != 2 {
		t.Fatalf("connection %d closed unused, want the spare (2)", n)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("the spare closed after %v, before its idle time", took)
	}
	time.Sleep(300 * time.Millisecond)
	if n := accepted.Load(); n != 2 {
		t.Errorf("%d connections: a spare was made with no tunnel", n)
	}
}

// A spare the proxy closed meanwhile costs the tunnel nothing but the fresh dial it would have made anyway.
func TestRelayStaleSpare(t *testing.T) {
	addr, pin, _, connects, unused := numberedDouble(t, 100*time.Millisecond)
	r := spareRelay(t, addr, pin, time.Minute)
	if code, err, _ := browserConnect(t, r, true); code != http.StatusOK {
		t.Fatalf("first tunnel: %d %v", code, err)
	}
	next(t, connects)
	if n := next(t, unused); n != 2 {
		t.Fatalf("connection %d dropped by the proxy, want the spare (2)", n)
	}
	if code, err, _ := browserConnect(t, r, true); code != http.StatusOK {
		t.Fatalf("tunnel after the spare went stale: %d %v", code, err)
	}
	if n := next(t, connects); n != 3 {
		t.Errorf("CONNECT on connection %d, want a fresh one (3)", n)
	}
	if r.State().State != "up" || r.Stats().Failed != 0 {
		t.Errorf("state %+v, stats %+v", r.State(), r.Stats())
	}
}

// With spares off, every tunnel dials for itself.
func TestRelayNoSpare(t *testing.T) {
	addr, pin, accepted, connects, _ := numberedDouble(t, 0)
	r := spareRelay(t, addr, pin, -1)
	for i := int64(1); i <= 2; i++ {
		if code, err, _ := browserConnect(t, r, true); code != http.StatusOK {
			t.Fatalf("tunnel %d: %d %v", i, code, err)
		}
		next(t, connects)
	}
	time.Sleep(100 * time.Millisecond)
	if n := accepted.Load(); n != 2 {
		t.Errorf("%d connections for 2 tunnels with spares off", n)
	}
}
