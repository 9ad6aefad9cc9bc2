//go:build !linux

package relay

import "github.com/mpsurf/mpsurf/native-host/mptcp"

func tcpInfo(int) (mptcp.TCPInfo, error) { return mptcp.TCPInfo{}, mptcp.ErrUnsupported }
