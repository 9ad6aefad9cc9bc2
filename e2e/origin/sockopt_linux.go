package origin

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxSubflows is the subflow array size asked of the kernel; the in-kernel path
// manager allows at most 8 subflows per connection.
const maxSubflows = 8

// getFullInfo calls getsockopt(SOL_MPTCP, MPTCP_FULL_INFO) on an MPTCP socket. It fails
// (EOPNOTSUPP or ENOPROTOOPT) when the connection fell back to TCP, since the kernel then
// hands every socket option to the one TCP subflow.
func getFullInfo(fd int) (FullInfo, error) {
	hdr, sf, ti, err := getFullInfoRaw(fd)
	if err != nil {
		return FullInfo{}, err
	}
	return DecodeFullInfo(hdr, sf, ti)
}

// getFullInfoRaw returns the kernel's bytes undecoded (tests keep them as fixtures).
func getFullInfoRaw(fd int) (hdr, sf, ti []byte, err error) {
	hdr = make([]byte, fullInfoLen)
	sf = make([]byte, maxSubflows*subflowInfoLen)
	ti = make([]byte, maxSubflows*tcpInfoLen)
	// The kernel writes through the two array addresses stored inside hdr: pin them so
	// they stay put and alive during the call.
	var pin runtime.Pinner
	pin.Pin(&sf[0])
	pin.Pin(&ti[0])
	defer pin.Unpin()
	ne.PutUint32(hdr[fullInfoOffTCPInfoUser:], tcpInfoLen)
	ne.PutUint32(hdr[fullInfoOffSFInfoUser:], subflowInfoLen)
	ne.PutUint32(hdr[fullInfoOffArraysUser:], maxSubflows)
	ne.PutUint64(hdr[fullInfoOffSubflowPtr:], uint64(uintptr(unsafe.Pointer(&sf[0]))))
	ne.PutUint64(hdr[fullInfoOffTCPInfoPtr:], uint64(uintptr(unsafe.Pointer(&ti[0]))))
	n, err := getsockopt(fd, solMPTCP, mptcpFullInfo, hdr)
	if err != nil {
		return nil, nil, nil, err
	}
	return hdr[:n], sf, ti, nil
}

func getTCPInfo(fd int) (TCPInfo, error) {
	b := make([]byte, tcpInfoLen)
	n, err := getsockopt(fd, unix.IPPROTO_TCP, unix.TCP_INFO, b)
	if err != nil {
		return TCPInfo{}, err
	}
	return DecodeTCPInfo(b[:n]), nil
}

func getsockopt(fd, level, name int, b []byte) (int, error) {
	l := uint32(len(b))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name),
		uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, e
	}
	return int(min(l, uint32(len(b)))), nil
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
