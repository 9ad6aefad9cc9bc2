//go:build !linux

package origin

import "errors"

var errNotLinux = errors.New("per-subflow accounting needs Linux")

func getFullInfo(int) (FullInfo, error) { return FullInfo{}, errNotLinux }
func getTCPInfo(int) (TCPInfo, error)   { return TCPInfo{}, errNotLinux }
func socketProtocol(int) (int, error)   { return 0, errNotLinux }
