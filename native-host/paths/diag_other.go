//go:build !linux

package paths

import "errors"

// Diag is Linux's sock_diag; elsewhere OpenDiag fails.
type Diag struct{}

// OpenDiag reports that socket diagnostics are Linux-only.
func OpenDiag() (*Diag, error) { return nil, errors.New("sock_diag: Linux only") }

// Dump returns out unchanged.
func (d *Diag) Dump(out []Sock) ([]Sock, error) { return out, errors.New("sock_diag: Linux only") }

// Close does nothing.
func (d *Diag) Close() error { return nil }
