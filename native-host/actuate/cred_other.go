//go:build !linux

package actuate

import (
	"errors"
	"net"
)

// peerCred is Linux-only (SO_PEERCRED); elsewhere every peer is refused.
func peerCred(*net.UnixConn) (Peer, error) {
	return Peer{}, errors.New("peer credentials need Linux SO_PEERCRED")
}
