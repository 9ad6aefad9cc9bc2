package origin

import (
	"fmt"
	"syscall"

	"github.com/mpsurf/mpsurf/native-host/mptcp"
	"golang.org/x/sys/unix"
)

// getFullInfo reads MPTCP_FULL_INFO (native-host/mptcp) of an MPTCP socket.
func getFullInfo(fd int) (FullInfo, error) { return mptcp.GetFullInfo(fd) }

// getFullInfoRaw returns the kernel's bytes undecoded (tests keep them as fixtures).
func getFullInfoRaw(fd int) (hdr, sf, ti []byte, err error) { return mptcp.GetFullInfoRaw(fd) }

func getTCPInfo(fd int) (TCPInfo, error) {
	b := make([]byte, tcpInfoLen)
	n, err := getsockopt(fd, unix.IPPROTO_TCP, unix.TCP_INFO, b)
	if err != nil {
		return TCPInfo{}, err
	}
	return DecodeTCPInfo(b[:n]), nil
}

func getsockopt(fd, level, name int, b []byte) (int, error) {
	return mptcp.Getsockopt(fd, level, name, b)
}

func socketProtocol(fd int) (int, error) {
	return unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
}

// congestionControl returns a listener Control that sets TCP_CONGESTION, so that accepted connections (and an
// MPTCP connection's subflows) use algorithm cc. A network namespace other than the initial one may only default
// to the host's allowed algorithms, but a socket owner with CAP_NET_ADMIN may pick any available one.
func congestionControl(cc string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("congestion control %q: %w (available: /proc/sys/net/ipv4/tcp_available_congestion_control)", cc, serr)
		}
		return nil
	}
}
