package mph2

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// bindControl binds a socket to the interface ifname before it connects. SO_BINDTODEVICE needs no privilege since
// Linux 5.7 as long as the socket is not bound to a device already (TestIntegrationBindUnprivileged checks it).
func bindControl(ifname string) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifname)
		}); err != nil {
			return err
		}
		if serr != nil {
			return &bindError{ifname, serr}
		}
		return nil
	}
}
