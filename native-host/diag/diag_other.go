//go:build !linux

package diag

import (
	"errors"
	"net/netip"
)

// Conn is Linux's sock_diag; elsewhere Open fails.
type Conn struct{}

var errLinux = errors.New("sock_diag: Linux only")

// Open reports that socket diagnostics are Linux-only.
func Open() (*Conn, error) { return nil, errLinux }

// Dump returns out unchanged.
func (d *Conn) Dump(out []Sock) ([]Sock, error) { return out, errLinux }

// DumpStates returns out unchanged.
func (d *Conn) DumpStates(out []Sock, _ uint32) ([]Sock, error) { return out, errLinux }

// Find finds nothing.
func (d *Conn) Find(netip.AddrPort, netip.AddrPort) (Sock, bool, error) {
	return Sock{}, false, errLinux
}

// Close does nothing.
func (d *Conn) Close() error { return nil }

// DumpMPTCP needs Linux.
func (d *Conn) DumpMPTCP(out []MPTCPSock) ([]MPTCPSock, error) { return out, errLinux }
