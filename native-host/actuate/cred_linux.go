//go:build linux

package actuate

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred reads the connecting process's credentials from the kernel (SO_PEERCRED): they cannot be forged by
// the peer, unlike anything it writes on the socket.
func peerCred(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if cerr != nil {
		return Peer{}, cerr
	}
	return Peer{Pid: int(cred.Pid), Uid: cred.Uid, Gid: cred.Gid}, nil
}
