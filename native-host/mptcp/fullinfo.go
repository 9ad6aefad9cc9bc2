package mptcp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// MPTCP_FULL_INFO (getsockopt on an MPTCP socket, kernel 6.5+): each subflow's addresses and tcp_info. Kernel
// constants and layouts from include/uapi/linux/mptcp.h and linux/tcp.h (6.5+).
// The structs are decoded with explicit offsets: Go struct layout is not C's, and the
// kernel copies min(user, kernel) bytes of each, so every field is checked against the
// length actually written.
const (
	IPProtoMPTCP = 262
	SolMPTCP     = 284
	optFullInfo  = 4 // MPTCP_FULL_INFO, kernel 6.5

	// struct mptcp_full_info: six __u32 sizes/counts, two __aligned_u64 user pointers,
	// then struct mptcp_info. The kernel fails a shorter optlen (MIN_FULL_INFO_OPTLEN_SIZE).
	fullInfoOffTCPInfoUser = 4
	fullInfoOffSFInfoUser  = 12
	fullInfoOffNumSubflows = 16
	fullInfoOffArraysUser  = 20
	fullInfoOffSubflowPtr  = 24
	fullInfoOffTCPInfoPtr  = 32
	fullInfoHeaderLen      = 40
	mptcpInfoLen           = 96 // struct mptcp_info as of 6.10; older kernels copy less
	FullInfoLen            = fullInfoHeaderLen + mptcpInfoLen
	SubflowInfoLen         = 264 // struct mptcp_subflow_info: __u32 id, pad, two 128-byte sockaddr_storage
	subflowInfoOffLocal    = 8
	subflowInfoOffRemote   = 8 + 128
	TCPInfoLen             = 232 // through tcpi_snd_wnd; bytes_sent/bytes_retrans end at 216
	InfoFlagFallback       = 1
	afINET, afINET6        = 2, 10
)

// struct mptcp_info offsets.
const (
	miSubflows      = 0  // __u8
	miFlags         = 8  // __u32
	miToken         = 12 // __u32
	miWriteSeq      = 16 // __u64
	miSndUna        = 24
	miRcvNxt        = 32
	miRetransmits   = 44 // __u32
	miBytesRetrans  = 48 // __u64 (6.5)
	miBytesSent     = 56
	miBytesReceived = 64
	miBytesAcked    = 72
	miSubflowsTotal = 80 // __u8 (6.10)
)

// struct tcp_info offsets.
const (
	tiState         = 0   // __u8
	tiRTT           = 68  // __u32, microseconds
	tiSndCwnd       = 80  // __u32
	tiTotalRetrans  = 100 // __u32
	tiBytesAcked    = 120 // __u64 (4.1)
	tiBytesReceived = 128 // __u64
	tiBytesSent     = 200 // __u64 (4.19), includes retransmissions
	tiBytesRetrans  = 208 // __u64 (4.19)
)

// MPTCPInfo is the connection-level part of struct mptcp_info.
type MPTCPInfo struct {
	Subflows      uint8
	Flags         uint32
	Token         uint32
	WriteSeq      uint64
	SndUna        uint64
	RcvNxt        uint64
	Retransmits   uint32
	HasBytes      bool // the byte counters below were present (kernel 6.5+)
	BytesRetrans  uint64
	BytesSent     uint64
	BytesReceived uint64
	BytesAcked    uint64 // data-level bytes acknowledged by the peer
}

// TCPInfo is the part of struct tcp_info the accounting uses.
type TCPInfo struct {
	State         uint8
	RTTus         uint32
	SndCwnd       uint32
	TotalRetrans  uint32
	BytesAcked    uint64
	BytesReceived uint64
	HasSent       bool // BytesSent and BytesRetrans were present
	BytesSent     uint64
	BytesRetrans  uint64
}

// SubflowInfo is one subflow from MPTCP_FULL_INFO.
type SubflowInfo struct {
	ID     uint32
	Local  netip.AddrPort
	Remote netip.AddrPort
	TCP    TCPInfo
}

// FullInfo is a decoded MPTCP_FULL_INFO answer.
type FullInfo struct {
	MPTCP    MPTCPInfo
	Total    uint32 // subflows the kernel counted; Subflows holds at most the array size asked for
	Subflows []SubflowInfo
}

var ne = binary.NativeEndian

// DecodeFullInfo decodes the three buffers of an MPTCP_FULL_INFO call: hdr is the
// struct mptcp_full_info as the kernel wrote it back (optlen bytes), sf and ti the
// arrays its subflow_info and tcp_info pointers pointed at.
func DecodeFullInfo(hdr, sf, ti []byte) (FullInfo, error) {
	var fi FullInfo
	if len(hdr) < fullInfoHeaderLen {
		return fi, fmt.Errorf("mptcp_full_info: %d bytes, need %d", len(hdr), fullInfoHeaderLen)
	}
	tiStride := int(ne.Uint32(hdr[fullInfoOffTCPInfoUser:]))
	sfStride := int(ne.Uint32(hdr[fullInfoOffSFInfoUser:]))
	fi.Total = ne.Uint32(hdr[fullInfoOffNumSubflows:])
	n := int(min(fi.Total, ne.Uint32(hdr[fullInfoOffArraysUser:])))
	// Compare by division: strides come from the buffer and n*stride could overflow.
	if n > 0 && (sfStride < 4 || n > len(sf)/sfStride || (tiStride > 0 && n > len(ti)/tiStride)) {
		return fi, fmt.Errorf("mptcp_full_info: %d subflows of %d+%d bytes do not fit buffers of %d+%d",
			n, sfStride, tiStride, len(sf), len(ti))
	}
	fi.MPTCP = decodeMPTCPInfo(hdr[fullInfoHeaderLen:])
	for i := range n {
		s := sf[i*sfStride : (i+1)*sfStride]
		sub := SubflowInfo{ID: ne.Uint32(s)}
		if len(s) >= SubflowInfoLen {
			sub.Local = decodeSockaddr(s[subflowInfoOffLocal:subflowInfoOffRemote])
			sub.Remote = decodeSockaddr(s[subflowInfoOffRemote:SubflowInfoLen])
		}
		sub.TCP = DecodeTCPInfo(ti[i*tiStride : (i+1)*tiStride])
		fi.Subflows = append(fi.Subflows, sub)
	}
	return fi, nil
}

func decodeMPTCPInfo(b []byte) MPTCPInfo {
	var m MPTCPInfo
	if len(b) > miSubflows {
		m.Subflows = b[miSubflows]
	}
	u32 := func(off int) uint32 {
		if len(b) >= off+4 {
			return ne.Uint32(b[off:])
		}
		return 0
	}
	u64 := func(off int) uint64 {
		if len(b) >= off+8 {
			return ne.Uint64(b[off:])
		}
		return 0
	}
	m.Flags, m.Token = u32(miFlags), u32(miToken)
	m.WriteSeq, m.SndUna, m.RcvNxt = u64(miWriteSeq), u64(miSndUna), u64(miRcvNxt)
	m.Retransmits = u32(miRetransmits)
	m.HasBytes = len(b) >= miBytesAcked+8
	m.BytesRetrans, m.BytesSent = u64(miBytesRetrans), u64(miBytesSent)
	m.BytesReceived, m.BytesAcked = u64(miBytesReceived), u64(miBytesAcked)
	return m
}

// DecodeTCPInfo decodes as much of struct tcp_info as b holds.
func DecodeTCPInfo(b []byte) TCPInfo {
	var t TCPInfo
	if len(b) > tiState {
		t.State = b[tiState]
	}
	if len(b) >= tiSndCwnd+4 {
		t.RTTus = ne.Uint32(b[tiRTT:])
		t.SndCwnd = ne.Uint32(b[tiSndCwnd:])
	}
	if len(b) >= tiTotalRetrans+4 {
		t.TotalRetrans = ne.Uint32(b[tiTotalRetrans:])
	}
	if len(b) >= tiBytesReceived+8 {
		t.BytesAcked = ne.Uint64(b[tiBytesAcked:])
		t.BytesReceived = ne.Uint64(b[tiBytesReceived:])
	}
	if len(b) >= tiBytesRetrans+8 {
		t.HasSent = true
		t.BytesSent = ne.Uint64(b[tiBytesSent:])
		t.BytesRetrans = ne.Uint64(b[tiBytesRetrans:])
	}
	return t
}

// decodeSockaddr reads a struct sockaddr_in or sockaddr_in6 (family in host order,
// port in network order); anything else gives the zero AddrPort.
func decodeSockaddr(b []byte) netip.AddrPort {
	if len(b) < 2 {
		return netip.AddrPort{}
	}
	switch ne.Uint16(b) {
	case afINET:
		if len(b) >= 8 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:]))
		}
	case afINET6:
		if len(b) >= 24 {
			a := netip.AddrFrom16([16]byte(b[8:24]))
			return netip.AddrPortFrom(a.Unmap(), binary.BigEndian.Uint16(b[2:]))
		}
	}
	return netip.AddrPort{}
}
