//go:build linux

package actuate

import (
	"io"
	"net"
	"testing"
	"time"
)

// A per-connection policy is its caller's, for that caller's connection only. Two users are allowed to hold the
// helper's session (AllowUIDs), one at a time. uid 0 names its own connection, which never becomes an MPTCP
// connection (it is plain TCP: a proxy leg that fell back), and gets a policy for it; the connection goes. Then
// another user's MPTCP connection comes from the same address and port to the same server. It must not take uid
// 0's policy (a cellular subflow the other user never asked for, counted on uid 0's decision), and the policy of
// a connection that never showed up must not stay behind for good.
func TestIntegrationConnPolicyStaysWithItsOwner(t *testing.T) {
	cli, h, server, other := twoUsers(t, "cp")
	c := h.conn()
	hello := c.hello()

	// uid 0's connection, plain TCP, from a fixed port.
	const local = "10.77.1.1:41234"
	var plain net.Conn
	if err := cli.In(func() (err error) {
		d := net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("10.77.1.1"), Port: 41234}}
		plain, err = d.Dial("tcp4", server)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	plain.Write([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	io.ReadFull(plain, make([]byte, 1))
	if r := c.do(map[string]any{"verb": VerbConn, "session": hello.Session, "lease_ms": 10000,
		"local": local, "remote": server, "multipath": true}); !r.OK {
		t.Fatalf("uid 0's own connection refused: %+v", r)
	}
	// Gone with a reset, so that its port is free at once (no TIME_WAIT on this side).
	plain.(*net.TCPConn).SetLinger(0)
	plain.Close()

	// The other user's MPTCP connection, from the same address and port, to the same server.
	theirs := dialAs(t, cli, other, h.unit.bin, server, "MPSURF_ACTUATE_DIALER_LOCAL="+local)
	if theirs != local {
		t.Fatalf("the other user's connection came from %s, not %s", theirs, local)
	}
	time.Sleep(time.Second) // ESTABLISHED, then a join would take one round trip on the veth: well within
	if n := establishedFrom(cli, "10.77.2.1"); n != 0 {
		t.Fatalf("uid %d's connection got %d cellular subflows from uid 0's policy for a connection that had gone", other, n)
	}
	st := c.do(map[string]any{"verb": VerbStatus})
	t.Logf("helper status after: %v", st.Result)
}
