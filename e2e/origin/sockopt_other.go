//go:build !linux

package origin

import (
	"errors"
	"fmt"
	"syscall"
)

var errNotLinux = errors.New("per-subflow accounting needs Linux")

func getFullInfo(int) (FullInfo, error) { return FullInfo{}, errNotLinux }
func getTCPInfo(int) (TCPInfo, error)   { return TCPInfo{}, errNotLinux }
func socketProtocol(int) (int, error)   { return 0, errNotLinux }

func congestionControl(cc string) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		return fmt.Errorf("congestion control %q: not supported on this system", cc)
	}
}
