package paths

import (
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Diag dumps established TCP sockets through NETLINK_SOCK_DIAG. It needs no privilege. Not safe for
// concurrent use.
type Diag struct{ c *netlink.Conn }

// OpenDiag opens a sock_diag socket in the caller's network namespace.
func OpenDiag() (*Diag, error) {
	c, err := netlink.Dial(unix.NETLINK_SOCK_DIAG, nil)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	return &Diag{c}, nil
}

// Dump returns the established TCP sockets of both families (MPTCP subflows included: each is a TCP socket),
// appended to out.
func (d *Diag) Dump(out []Sock) ([]Sock, error) {
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		msgs, err := d.c.Execute(netlink.Message{
			Header: netlink.Header{Type: unix.SOCK_DIAG_BY_FAMILY, Flags: netlink.Request | netlink.Dump},
			Data:   diagRequest(fam),
		})
		if err != nil {
			return out, fmt.Errorf("sock_diag: %w", err)
		}
		for _, m := range msgs {
			if s, ok, err := ParseDiag(m.Data); err == nil && ok {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// Close releases the socket.
func (d *Diag) Close() error { return d.c.Close() }
