//go:build linux

package mptcp

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MaxSubflows is the subflow array size asked of the kernel; the path managers allow at most 8 subflows per
// connection.
const MaxSubflows = 8

// GetFullInfo calls getsockopt(SOL_MPTCP, MPTCP_FULL_INFO) on an MPTCP socket. It needs no privilege: a process
// reads its own connection. It fails (EOPNOTSUPP or ENOPROTOOPT) when the connection fell back to TCP, since the
// kernel then hands every socket option to the one TCP subflow.
func GetFullInfo(fd int) (FullInfo, error) {
	hdr, sf, ti, err := GetFullInfoRaw(fd)
	if err != nil {
		return FullInfo{}, err
	}
	return DecodeFullInfo(hdr, sf, ti)
}

// GetFullInfoRaw returns the kernel's bytes undecoded (tests keep them as fixtures).
func GetFullInfoRaw(fd int) (hdr, sf, ti []byte, err error) {
	hdr = make([]byte, FullInfoLen)
	sf = make([]byte, MaxSubflows*SubflowInfoLen)
	ti = make([]byte, MaxSubflows*TCPInfoLen)
	// The kernel writes through the two array addresses stored inside hdr: pin them so they stay put and alive
	// during the call.
	var pin runtime.Pinner
	pin.Pin(&sf[0])
	pin.Pin(&ti[0])
	defer pin.Unpin()
	ne.PutUint32(hdr[fullInfoOffTCPInfoUser:], TCPInfoLen)
	ne.PutUint32(hdr[fullInfoOffSFInfoUser:], SubflowInfoLen)
	ne.PutUint32(hdr[fullInfoOffArraysUser:], MaxSubflows)
	ne.PutUint64(hdr[fullInfoOffSubflowPtr:], uint64(uintptr(unsafe.Pointer(&sf[0]))))
	ne.PutUint64(hdr[fullInfoOffTCPInfoPtr:], uint64(uintptr(unsafe.Pointer(&ti[0]))))
	n, err := Getsockopt(fd, SolMPTCP, optFullInfo, hdr)
	if err != nil {
		return nil, nil, nil, err
	}
	return hdr[:n], sf, ti, nil
}

// Getsockopt is getsockopt(2) into b; it returns how many bytes the kernel wrote.
func Getsockopt(fd, level, name int, b []byte) (int, error) {
	l := uint32(len(b))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name),
		uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, e
	}
	return int(min(l, uint32(len(b)))), nil
}
