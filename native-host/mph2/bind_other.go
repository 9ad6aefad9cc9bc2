//go:build !linux

package mph2

import (
	"errors"
	"syscall"
)

// bindControl: binding a socket to an interface is implemented for Linux only; elsewhere a path is bound to its
// address alone.
func bindControl(ifname string) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		return &bindError{ifname, errors.New("not supported on this system")}
	}
}
