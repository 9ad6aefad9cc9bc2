package paths

import (
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// sockDiag dumps established TCP sockets through NETLINK_SOCK_DIAG.
type sockDiag struct{ c *netlink.Conn }

func openDiag() (*sockDiag, error) {
	c, err := netlink.Dial(unix.NETLINK_SOCK_DIAG, nil)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	return &sockDiag{c}, nil
}

// dump returns the TCP sockets of both families, appended to out.
func (d *sockDiag) dump(out []Sock) ([]Sock, error) {
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

func (d *sockDiag) close() error { return d.c.Close() }
