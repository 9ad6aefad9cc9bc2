//go:build linux

package relay

import (
	"github.com/mpsurf/mpsurf/native-host/mptcp"
	"golang.org/x/sys/unix"
)

// tcpInfo reads a plain TCP socket's tcp_info (a connection that fell back from MPTCP).
func tcpInfo(fd int) (mptcp.TCPInfo, error) {
	b := make([]byte, mptcp.TCPInfoLen)
	n, err := mptcp.Getsockopt(fd, unix.IPPROTO_TCP, unix.TCP_INFO, b)
	if err != nil {
		return mptcp.TCPInfo{}, err
	}
	return mptcp.DecodeTCPInfo(b[:n]), nil
}
