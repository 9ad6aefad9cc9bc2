package diag

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Conn dumps TCP sockets through NETLINK_SOCK_DIAG. It needs no privilege. Not safe for concurrent use.
type Conn struct{ c *netlink.Conn }

// Open opens a sock_diag socket in the caller's network namespace.
func Open() (*Conn, error) {
	c, err := netlink.Dial(unix.NETLINK_SOCK_DIAG, nil)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	return &Conn{c}, nil
}

// Dump returns the established TCP sockets of both families (MPTCP subflows included: each is a TCP socket),
// appended to out.
func (d *Conn) Dump(out []Sock) ([]Sock, error) { return d.DumpStates(out, StateEstablished) }

// DumpStates is Dump for the sockets in any of the states of the mask (StateEstablished, StatesOpen).
func (d *Conn) DumpStates(out []Sock, states uint32) ([]Sock, error) {
	return dump(d, out, func(fam uint8) []byte { return request(fam, states) }, Parse)
}

// dump asks for the sockets of both families that req names and appends those parse accepts to out.
func dump[T any](d *Conn, out []T, req func(family uint8) []byte, parse func([]byte) (T, bool, error)) ([]T, error) {
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		msgs, err := d.c.Execute(netlink.Message{
			Header: netlink.Header{Type: unix.SOCK_DIAG_BY_FAMILY, Flags: netlink.Request | netlink.Dump},
			Data:   req(fam),
		})
		if err != nil {
			return out, fmt.Errorf("sock_diag: %w", err)
		}
		for _, m := range msgs {
			if s, ok, err := parse(m.Data); err == nil && ok {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// Find looks up the one TCP socket local -> remote in any state; ok is false when there is none.
func (d *Conn) Find(local, remote netip.AddrPort) (Sock, bool, error) {
	if local.Addr().Is4() != remote.Addr().Is4() {
		return Sock{}, false, nil
	}
	// An IPv4 connection may be an AF_INET6 socket's, with v4-mapped ends: asked second.
	for _, v6 := range []bool{false, true} {
		if v6 && !local.Addr().Is4() {
			break
		}
		msgs, err := d.c.Execute(netlink.Message{
			Header: netlink.Header{Type: unix.SOCK_DIAG_BY_FAMILY, Flags: netlink.Request},
			Data:   exact(local, remote, v6),
		})
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return Sock{}, false, fmt.Errorf("sock_diag: %w", err)
		}
		for _, m := range msgs {
			s, _, err := Parse(m.Data)
			if err == nil && s.Local == local && s.Remote == remote {
				return s, true, nil
			}
		}
	}
	return Sock{}, false, nil
}

// Close releases the socket.
func (d *Conn) Close() error { return d.c.Close() }

// DumpMPTCP returns the established MPTCP connections' own sockets of both families, appended to out. A kernel
// without MPTCP socket diagnostics (mptcp_diag) answers with an error.
func (d *Conn) DumpMPTCP(out []MPTCPSock) ([]MPTCPSock, error) {
	return dump(d, out, func(fam uint8) []byte { return requestMPTCP(fam, StateEstablished) }, ParseMPTCP)
}
