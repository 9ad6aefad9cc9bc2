package origin

import (
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
