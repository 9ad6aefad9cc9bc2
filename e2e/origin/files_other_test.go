//go:build !linux

package origin

import (
	"errors"
	"net"
)

func listenerProtocol(*net.TCPListener) (int, error) { return 0, errors.New("not on this system") }
