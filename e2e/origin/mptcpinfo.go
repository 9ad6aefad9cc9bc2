package origin

import (
	"encoding/binary"

	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// The MPTCP_FULL_INFO decoder lives in native-host/mptcp, which the host's relay shares; these names keep the
// origin's accounting and its kernel fixtures reading as before.
type (
	FullInfo    = mptcp.FullInfo
	MPTCPInfo   = mptcp.MPTCPInfo
	TCPInfo     = mptcp.TCPInfo
	SubflowInfo = mptcp.SubflowInfo
)

var (
	DecodeFullInfo = mptcp.DecodeFullInfo
	DecodeTCPInfo  = mptcp.DecodeTCPInfo
	ne             = binary.NativeEndian
)

const (
	ipprotoMPTCP          = mptcp.IPProtoMPTCP
	solMPTCP              = mptcp.SolMPTCP
	subflowInfoLen        = mptcp.SubflowInfoLen
	tcpInfoLen            = mptcp.TCPInfoLen
	mptcpInfoFlagFallback = mptcp.InfoFlagFallback
)
