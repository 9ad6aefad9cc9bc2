//go:build !linux

package netns

import (
	"fmt"
	"syscall"
)

// CongestionControl fails on systems without Linux's TCP_CONGESTION, unless cc is "".
func CongestionControl(cc string) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		if cc == "" {
			return nil
		}
		return fmt.Errorf("congestion control %q: not supported on this system", cc)
	}
}
