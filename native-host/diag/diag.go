package diag

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// inet_diag layout (linux/inet_diag.h, linux/tcp.h).
const (
	diagMsgLen   = 72 // struct inet_diag_msg
	diagOffUID   = 64 // idiag_uid, after family..retrans (4), the socket id (48), expires, rqueue, wqueue (12)
	attrInfo     = 2  // INET_DIAG_INFO: struct tcp_info
	tcpiSndMSS   = 16 // offsets in struct tcp_info
	tcpiRTT      = 68
	tcpiSndCwnd  = 80
	tcpiTotRetr  = 100
	tcpiBytesAck = 120 // u64 tcpi_bytes_acked
	tcpiBytesRcv = 128 // u64 tcpi_bytes_received
	tcpiSegsOut  = 136
	tcpiMinRTT   = 148
	tcpiMinRTTTo = tcpiMinRTT + 4
	tcpiDataIn   = 152 // u32 tcpi_data_segs_in, since Linux 4.6
	tcpiRcvOOO   = 224 // u32 tcpi_rcv_ooopack, since Linux 5.4
	tcpiRcvWnd   = 232 // since Linux 6.2
)

// Sock is what one inet_diag reply says about a TCP socket.
type Sock struct {
	Src    netip.Addr     // Local.Addr(), what the path sampler groups by
	Local  netip.AddrPort // the socket's own address and port
	Remote netip.AddrPort
	// UID owns the socket (idiag_uid); the kernel gives an MPTCP connection's subflows the uid of the process
	// that made the connection, so the helper can tell whose connection a subflow belongs to.
	UID          uint32
	State        uint8  // TCP state (TCP_ESTABLISHED = 1)
	RTTUS        uint32 // smoothed RTT, µs
	MinRTTUS     uint32 // windowed minimum RTT, µs; 0 when the kernel's tcp_info is too short to have it
	TotalRetrans uint32
	SegsOut      uint32
	// Payload bytes acknowledged by the peer and received in order (RFC 4898 tcpEStatsAppHCThruOctetsAcked and
	// ...Received): what the helper counts against θ1 and θ2 on an MPTCP subflow.
	BytesAcked    uint64
	BytesReceived uint64
	// DataSegsIn counts segments with payload received, in order or not, retransmitted or not (0 on kernels
	// before 4.6): it moves whenever the path delivers data, while BytesReceived waits for a hole to be filled.
	DataSegsIn uint32
	// RcvOOOPack counts data segments that arrived out of order (0 on kernels before 5.4): on a download, a hole
	// in the stream, a segment lost on the way in, which the socket's own retransmission count never shows.
	RcvOOOPack uint32
	// One window in each direction: what may still be in flight when a subflow is closed. SndCwnd is in
	// segments of SndMSS bytes; RcvWnd (bytes) is 0 on kernels before 6.2.
	SndMSS  uint32
	SndCwnd uint32
	RcvWnd  uint32
}

// Parse decodes one inet_diag_msg with its attributes. ok is false for a socket without tcp_info.
func Parse(b []byte) (s Sock, ok bool, err error) {
	if len(b) < diagMsgLen {
		return s, false, fmt.Errorf("inet_diag_msg: %d bytes, want >= %d", len(b), diagMsgLen)
	}
	// idiag_family, then inet_diag_sockid at 4: sport, dport (2 each), src [16], dst [16] in network order.
	var src, dst netip.Addr
	switch b[0] {
	case 2: // AF_INET
		src, dst = netip.AddrFrom4([4]byte(b[8:12])), netip.AddrFrom4([4]byte(b[24:28]))
	case 10: // AF_INET6
		src, dst = netip.AddrFrom16([16]byte(b[8:24])).Unmap(), netip.AddrFrom16([16]byte(b[24:40])).Unmap()
	default:
		return s, false, fmt.Errorf("inet_diag_msg: family %d", b[0])
	}
	s.Src = src
	s.Local = netip.AddrPortFrom(src, binary.BigEndian.Uint16(b[4:]))
	s.Remote = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[6:]))
	s.UID = binary.NativeEndian.Uint32(b[diagOffUID:])
	s.State = b[1]
	info, err := findAttr(b[diagMsgLen:], attrInfo)
	if err != nil || info == nil {
		return s, false, err
	}
	if len(info) < tcpiSegsOut+4 {
		return s, false, fmt.Errorf("tcp_info: %d bytes, want >= %d", len(info), tcpiSegsOut+4)
	}
	le := binary.NativeEndian
	s.RTTUS = le.Uint32(info[tcpiRTT:])
	s.TotalRetrans = le.Uint32(info[tcpiTotRetr:])
	s.SegsOut = le.Uint32(info[tcpiSegsOut:])
	s.BytesAcked = le.Uint64(info[tcpiBytesAck:])
	s.BytesReceived = le.Uint64(info[tcpiBytesRcv:])
	s.SndMSS = le.Uint32(info[tcpiSndMSS:])
	s.SndCwnd = le.Uint32(info[tcpiSndCwnd:])
	if len(info) >= tcpiRcvWnd+4 {
		s.RcvWnd = le.Uint32(info[tcpiRcvWnd:])
	}
	if len(info) >= tcpiRcvOOO+4 {
		s.RcvOOOPack = le.Uint32(info[tcpiRcvOOO:])
	}
	if len(info) >= tcpiMinRTTTo {
		s.MinRTTUS = le.Uint32(info[tcpiMinRTT:])
	}
	if len(info) >= tcpiDataIn+4 {
		s.DataSegsIn = le.Uint32(info[tcpiDataIn:])
	}
	return s, true, nil
}

// findAttr walks netlink attributes (struct rtattr: u16 length, u16 type, payload padded to 4 bytes).
func findAttr(b []byte, typ uint16) ([]byte, error) {
	for len(b) >= 4 {
		n := int(binary.NativeEndian.Uint16(b))
		t := binary.NativeEndian.Uint16(b[2:]) & 0x3fff // drop NLA_F_NESTED and NLA_F_NET_BYTEORDER
		if n < 4 || n > len(b) {
			return nil, fmt.Errorf("netlink attribute: length %d with %d bytes left", n, len(b))
		}
		if t == typ {
			return b[4:n], nil
		}
		n = (n + 3) &^ 3
		if n > len(b) {
			return nil, nil
		}
		b = b[n:]
	}
	return nil, nil
}

// TCPEstablished is Sock.State of an established socket (include/net/tcp_states.h).
const TCPEstablished = 1

// TCP states as bits of a dump's state mask.
const (
	StateEstablished = 1 << 1
	// StatesOpen is every state of a socket that still has its owner (TIME_WAIT sockets report uid 0): established
	// and the closing states that follow it.
	StatesOpen = StateEstablished | 1<<4 | 1<<5 | 1<<8 | 1<<9 | 1<<11 // FIN_WAIT1, FIN_WAIT2, CLOSE_WAIT, LAST_ACK, CLOSING
)

// reqLen is the size of struct inet_diag_req_v2: family, protocol, ext, pad, states (4), then inet_diag_sockid
// (sport, dport, src [16], dst [16], if, cookie [2]).
const reqLen = 56

// request is an inet_diag_req_v2 for TCP sockets of family in the given states, with tcp_info.
func request(family uint8, states uint32) []byte {
	req := make([]byte, reqLen)
	req[0] = family
	req[1] = 6                   // IPPROTO_TCP
	req[2] = 1 << (attrInfo - 1) // idiag_ext
	binary.NativeEndian.PutUint32(req[4:], states)
	return req
}

// exact is an inet_diag_req_v2 naming one socket by its two ends: the kernel looks it up instead of walking
// every socket. Both ends must be of one family; v6 asks for IPv4 ends as an AF_INET6 socket's mapped ones.
func exact(local, remote netip.AddrPort, v6 bool) []byte {
	fam := uint8(2) // AF_INET
	if v6 || !local.Addr().Is4() {
		fam = 10 // AF_INET6
	}
	req := request(fam, 0xffffffff)
	binary.BigEndian.PutUint16(req[8:], local.Port())
	binary.BigEndian.PutUint16(req[10:], remote.Port())
	if fam == 2 {
		l, r := local.Addr().As4(), remote.Addr().As4()
		copy(req[12:], l[:])
		copy(req[28:], r[:])
	} else {
		l, r := local.Addr().As16(), remote.Addr().As16()
		copy(req[12:], l[:])
		copy(req[28:], r[:])
	}
	// idiag_if 0 (any), idiag_cookie INET_DIAG_NOCOOKIE: match by address only.
	binary.NativeEndian.PutUint32(req[48:], 0xffffffff)
	binary.NativeEndian.PutUint32(req[52:], 0xffffffff)
	return req
}
