//go:build linux

package netns

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dir is where iproute2 keeps named network namespaces.
const Dir = "/run/netns"

// RunNamed runs fn inside the network namespace iproute2 named name (Dir/name).
func RunNamed(name string, fn func() error) error {
	fd, err := unix.Open(filepath.Join(Dir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("netns %s: %w", name, err)
	}
	defer unix.Close(fd)
	if err := Run(fd, fn); err != nil {
		return fmt.Errorf("netns %s: %w", name, err)
	}
	return nil
}

// Run runs fn on an OS thread that has joined the network namespace open at fd, and returns fn's error. Sockets
// and TUN devices fn creates stay in that namespace after it returns; fn must not start goroutines that expect to
// inherit the namespace (they run on other threads).
func Run(fd int, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("setns: %w", err)
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// The thread stays locked: the runtime then ends it with this goroutine instead of reusing it in the
			// wrong namespace.
			done <- errors.Join(ferr, fmt.Errorf("setns back: %w", err))
			return
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}

// CongestionControl returns a net.Dialer or net.ListenConfig Control hook that sets the socket's TCP congestion
// control to cc (accepted connections, and an MPTCP connection's subflows, inherit it); "" leaves the namespace's
// default. A namespace other than the initial one may only default to the host's allowed algorithms
// (net.ipv4.tcp_allowed_congestion_control), but a socket owner with CAP_NET_ADMIN may pick any available one.
func CongestionControl(cc string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		if cc == "" {
			return nil
		}
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
