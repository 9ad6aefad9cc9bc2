//go:build linux

package mptcp

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestIntegrationEndpointsAndLimits(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "ep")
	c, err := Dial(ns.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))

	before, err := c.Endpoints()
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 0 {
		t.Fatalf("fresh namespace has endpoints %+v", before)
	}
	want := Endpoint{ID: 7, Addr: netip.MustParseAddr("10.99.0.1"), Flags: FlagSubflow | FlagBackup}
	if err := c.AddEndpoint(want); err != nil {
		t.Fatal(err)
	}
	got, err := c.Endpoint(7)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	all, err := c.Endpoints()
	if err != nil || len(all) != 1 || all[0] != want {
		t.Fatalf("dump %+v, %v", all, err)
	}
	// SET_FLAGS changes backup; the subflow flag stays.
	if err := c.SetEndpointFlags(Endpoint{ID: 7, Flags: FlagSubflow}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Endpoint(7); got.Flags != FlagSubflow {
		t.Fatalf("flags after SET_FLAGS: %v", got.Flags)
	}
	if err := c.AddEndpoint(want); err == nil {
		t.Fatal("duplicate endpoint accepted")
	}
	if err := c.DeleteEndpoint(7); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Endpoint(7); err == nil {
		t.Fatal("deleted endpoint still readable")
	}
	if err := c.DeleteEndpoint(7); err == nil || !strings.Contains(err.Error(), "DEL_ADDR") {
		t.Fatalf("deleting a missing endpoint: %v", err)
	}

	l, err := c.Limits()
	if err != nil {
		t.Fatal(err)
	}
	wantL := Limits{AddAddrAccepted: l.AddAddrAccepted + 1, Subflows: 5}
	if err := c.SetLimits(wantL); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Limits(); err != nil || got != wantL {
		t.Fatalf("limits read back %+v, %v; want %+v", got, err, wantL)
	}
	if err := c.SetLimits(Limits{Subflows: 1000}); err == nil {
		t.Fatal("subflows limit 1000 accepted")
	}
}

// nextEvent waits for an event of type typ for token (0: any token).
func nextEvent(t *testing.T, s *Events, typ EventType, token uint32) Event {
	t.Helper()
	s.SetDeadline(time.Now().Add(5 * time.Second))
	for {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		if ev.Type == typ && (token == 0 || ev.Token == token) {
			return ev
		}
	}
}

func TestIntegrationUserspaceSubflow(t *testing.T) {
	needRoot(t)
	cli, srv := newNS(t, "c"), newNS(t, "s")
	vethPair(t, cli, srv, 1)
	vethPair(t, cli, srv, 2)
	cli.Sysctl(t, "net.mptcp.path_manager", "userspace")

	port := discardServer(t, srv)

	events, err := Subscribe(cli.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()

	conn := cli.DialMPTCP(t, netip.AddrPortFrom(netip.MustParseAddr("10.77.1.2"), port).String())
	laddr := conn.LocalAddr().(*net.TCPAddr).AddrPort()

	created := nextEvent(t, events, EventCreated, 0)
	if created.Token == 0 || created.Src() != netip.AddrPortFrom(laddr.Addr().Unmap(), laddr.Port()) ||
		created.Dst() != netip.AddrPortFrom(netip.MustParseAddr("10.77.1.2"), port) || created.ServerSide {
		t.Fatalf("CREATED %+v, dialled from %s", created, laddr)
	}
	// The client must send data before the connection is fully established on its side.
	conn.Write([]byte("x"))
	nextEvent(t, events, EventEstablished, created.Token)

	c, remote, sub := joinCellular(t, cli, events, created.Token, port)
	defer c.Close()
	if sub.Saddr != netip.MustParseAddr("10.77.2.1") || sub.Dst() != remote || sub.Sport == 0 {
		t.Fatalf("SUB_ESTABLISHED %+v", sub)
	}
	// Bad input comes back as a kernel error naming the command, not a hang.
	if err := c.SubflowCreate(created.Token+1, Endpoint{Addr: netip.MustParseAddr("10.77.2.1")}, remote); err == nil ||
		!strings.Contains(err.Error(), "SUBFLOW_CREATE") {
		t.Fatalf("SUBFLOW_CREATE with an unknown token: %v", err)
	}
	if err := c.SubflowDestroy(created.Token, sub.Src(), sub.Dst()); err != nil {
		t.Fatal(err)
	}
	closed := nextEvent(t, events, EventSubClosed, created.Token)
	if closed.Src() != sub.Src() {
		t.Fatalf("SUB_CLOSED %+v, want source %s", closed, sub.Src())
	}
	conn.Close()
	nextEvent(t, events, EventClosed, created.Token)
}

func TestIntegrationDialBadNamespace(t *testing.T) {
	needRoot(t)
	if _, err := Dial(-5); err == nil {
		t.Fatal("Dial with a bad namespace fd succeeded")
	}
}

// TestIntegrationSubflowSetBackup: SET_FLAGS with a token marks one subflow of a userspace-PM connection backup
// and back; the server hears it as MP_PRIO (its SUB_PRIORITY event names the subflow and the flag), and the
// client's own subflow carries the local backup flag (sock_diag's MPTCP subflow flags, as ss shows them).
func TestIntegrationSubflowSetBackup(t *testing.T) {
	needRoot(t)
	cli, srv := newNS(t, "bc"), newNS(t, "bs")
	vethPair(t, cli, srv, 1)
	vethPair(t, cli, srv, 2)
	cli.Sysctl(t, "net.mptcp.path_manager", "userspace")

	port := discardServer(t, srv)
	events, err := Subscribe(cli.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	// MP_PRIO is reported where it is received: on the server.
	srvEvents, err := Subscribe(srv.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer srvEvents.Close()

	dst := netip.AddrPortFrom(netip.MustParseAddr("10.77.1.2"), port)
	conn := cli.DialMPTCP(t, dst.String())
	la := conn.LocalAddr().(*net.TCPAddr).AddrPort()
	initial := netip.AddrPortFrom(la.Addr().Unmap(), la.Port())
	created := nextEvent(t, events, EventCreated, 0)
	conn.Write([]byte("x"))
	nextEvent(t, events, EventEstablished, created.Token)

	c, _, sub := joinCellular(t, cli, events, created.Token, port)
	defer c.Close()

	// priority waits for the server's SUB_PRIORITY of the initial subflow (its remote end is the client's
	// initial source).
	priority := func() Event {
		t.Helper()
		srvEvents.SetDeadline(time.Now().Add(5 * time.Second))
		for {
			ev, err := srvEvents.Next()
			if err != nil {
				t.Fatalf("waiting for the server's SUB_PRIORITY: %v", err)
			}
			if ev.Type == EventSubPriority {
				if ev.Dst() != initial || ev.Src() != dst {
					t.Fatalf("SUB_PRIORITY of another subflow: %+v, want %s -> %s", ev, dst, initial)
				}
				return ev
			}
		}
	}
	if cli.SubflowLocalBackup(t, initial, dst) {
		t.Fatal("the initial subflow is backup before SET_FLAGS")
	}
	if err := c.SubflowSetBackup(created.Token, initial, dst, true); err != nil {
		t.Fatal(err)
	}
	if ev := priority(); !ev.Backup {
		t.Fatalf("server's SUB_PRIORITY after setting backup: %+v", ev)
	}
	if !cli.SubflowLocalBackup(t, initial, dst) {
		t.Fatal("the initial subflow lacks the local backup flag after SET_FLAGS")
	}
	if cli.SubflowLocalBackup(t, sub.Src(), sub.Dst()) {
		t.Fatal("the cellular subflow became backup too")
	}
	if err := c.SubflowSetBackup(created.Token, initial, dst, false); err != nil {
		t.Fatal(err)
	}
	if ev := priority(); ev.Backup {
		t.Fatalf("server's SUB_PRIORITY after clearing backup: %+v", ev)
	}
	if cli.SubflowLocalBackup(t, initial, dst) {
		t.Fatal("the initial subflow is still backup after clearing it")
	}
	// A four-tuple no subflow has is the kernel's error, naming the command.
	wrong := netip.AddrPortFrom(initial.Addr(), initial.Port()+1)
	if err := c.SubflowSetBackup(created.Token, wrong, dst, true); err == nil || !strings.Contains(err.Error(), "SET_FLAGS") {
		t.Fatalf("SET_FLAGS for a subflow that does not exist: %v", err)
	}
	if err := c.SubflowSetBackup(created.Token+1, initial, dst, true); err == nil {
		t.Fatal("SET_FLAGS with an unknown token succeeded")
	}
}

// discardServer accepts MPTCP connections in srv and reads whatever they send; it returns the port.
func discardServer(t *testing.T, srv *testNS) uint16 {
	t.Helper()
	ln := srv.ListenMPTCP(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// joinCellular asks cli's userspace path manager for connection token's subflow from the cellular address
// 10.77.2.1 to the server's 10.77.2.2 at port and waits for it: the client, the subflow's remote end and its
// SUB_ESTABLISHED event.
func joinCellular(t *testing.T, cli *testNS, events *Events, token uint32, port uint16) (*Client, netip.AddrPort, Event) {
	t.Helper()
	c, err := Dial(cli.FD)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	remote := netip.AddrPortFrom(netip.MustParseAddr("10.77.2.2"), port)
	if err := c.SubflowCreate(token, Endpoint{Addr: netip.MustParseAddr("10.77.2.1")}, remote); err != nil {
		c.Close()
		t.Fatal(err)
	}
	return c, remote, nextEvent(t, events, EventSubEstablished, token)
}
