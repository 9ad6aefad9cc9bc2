package diag

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// MPTCP connections as sockets of their own: the connection-level socket above the subflows, which holds the
// data already taken off them, in order or not (linux/inet_diag.h, linux/sock_diag.h, linux/mptcp.h).
const (
	protoMPTCP      = 262 // IPPROTO_MPTCP: above 255, so it goes in INET_DIAG_REQ_PROTOCOL
	reqAttrProtocol = 3   // INET_DIAG_REQ_PROTOCOL, a u32 request attribute
	attrSkMemInfo   = 7   // INET_DIAG_SKMEMINFO: u32 sk_meminfo[SK_MEMINFO_VARS]
	memRmemAlloc    = 0   // SK_MEMINFO_RMEM_ALLOC, index into sk_meminfo
	memRcvbuf       = 1   // SK_MEMINFO_RCVBUF
	mptcpiToken     = 12  // struct mptcp_info: __u32 mptcpi_token
	mptcpiRcvNxt    = 32  // __u64 mptcpi_rcv_nxt: the next data sequence number expected in order
)

// MPTCPSock is what one inet_diag reply says about an MPTCP connection's own socket.
type MPTCPSock struct {
	Local  netip.AddrPort // the initial subflow's ends, which the connection keeps
	Remote netip.AddrPort
	Token  uint32 // the local token, as the path manager's events name the connection
	RcvNxt uint64 // data sequence number expected next in order: it stands still while the connection waits
	// RmemAlloc is the memory the connection's received data takes, in order or not, and RcvBuf its limit
	// (SO_RCVBUF, grown by the kernel's autotuning): data still on a subflow moves up only while RmemAlloc is at
	// most RcvBuf.
	RmemAlloc uint32
	RcvBuf    uint32
}

// ParseMPTCP decodes one inet_diag_msg of an MPTCP socket with its attributes. ok is false for a socket without
// mptcp_info or sk_meminfo (one not yet established, or a kernel without MPTCP diag).
func ParseMPTCP(b []byte) (m MPTCPSock, ok bool, err error) {
	if len(b) < diagMsgLen {
		return m, false, fmt.Errorf("inet_diag_msg: %d bytes, want >= %d", len(b), diagMsgLen)
	}
	switch b[0] {
	case 2:
		m.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[8:12])), binary.BigEndian.Uint16(b[4:]))
		m.Remote = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[24:28])), binary.BigEndian.Uint16(b[6:]))
	case 10:
		m.Local = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), binary.BigEndian.Uint16(b[4:]))
		m.Remote = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[24:40])).Unmap(), binary.BigEndian.Uint16(b[6:]))
	default:
		return m, false, fmt.Errorf("inet_diag_msg: family %d", b[0])
	}
	attrs := b[diagMsgLen:]
	info, err := findAttr(attrs, attrInfo)
	if err != nil {
		return m, false, err
	}
	mem, err := findAttr(attrs, attrSkMemInfo)
	if err != nil {
		return m, false, err
	}
	if info == nil || mem == nil {
		return m, false, nil
	}
	if len(info) < mptcpiRcvNxt+8 {
		return m, false, fmt.Errorf("mptcp_info: %d bytes, want >= %d", len(info), mptcpiRcvNxt+8)
	}
	if len(mem) < (memRcvbuf+1)*4 {
		return m, false, fmt.Errorf("sk_meminfo: %d bytes, want >= %d", len(mem), (memRcvbuf+1)*4)
	}
	le := binary.NativeEndian
	m.Token = le.Uint32(info[mptcpiToken:])
	m.RcvNxt = le.Uint64(info[mptcpiRcvNxt:])
	m.RmemAlloc = le.Uint32(mem[memRmemAlloc*4:])
	m.RcvBuf = le.Uint32(mem[memRcvbuf*4:])
	return m, true, nil
}

// Full says whether the connection has no room left for data still on its subflows.
func (m MPTCPSock) Full() bool { return m.RcvBuf > 0 && m.RmemAlloc >= m.RcvBuf }

// requestMPTCP is an inet_diag_req_v2 for the MPTCP sockets of family in the given states, with mptcp_info and
// sk_meminfo, followed by the INET_DIAG_REQ_PROTOCOL attribute that names the protocol.
func requestMPTCP(family uint8, states uint32) []byte {
	req := request(family, states)
	req[1] = 0 // sdiag_protocol: the attribute below takes its place
	req[2] = 1<<(attrInfo-1) | 1<<(attrSkMemInfo-1)
	attr := make([]byte, 8)
	binary.NativeEndian.PutUint16(attr, 8)
	binary.NativeEndian.PutUint16(attr[2:], reqAttrProtocol)
	binary.NativeEndian.PutUint32(attr[4:], protoMPTCP)
	return append(req, attr...)
}
