package origin

import (
	"net"

	"golang.org/x/sys/unix"
)

func listenerProtocol(l *net.TCPListener) (int, error) {
	rc, err := l.SyscallConn()
	if err != nil {
		return 0, err
	}
	var proto int
	var serr error
	if err := rc.Control(func(fd uintptr) { proto, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PROTOCOL) }); err != nil {
		return 0, err
	}
	return proto, serr
}
