package diag

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// mptcpMsg builds an inet_diag_msg of an MPTCP socket 10.0.1.2:40000 -> 10.0.3.2:443 with an mptcp_info of infoLen
// bytes and an sk_meminfo of memLen bytes (either left out when 0).
func mptcpMsg(family byte, infoLen, memLen int, token uint32, rcvNxt uint64, rmem, rcvbuf uint32) []byte {
	b := make([]byte, diagMsgLen)
	b[0] = family
	binary.BigEndian.PutUint16(b[4:], 40000)
	binary.BigEndian.PutUint16(b[6:], 443)
	if family == 10 {
		copy(b[8:], netip.MustParseAddr("::ffff:10.0.1.2").AsSlice())
		copy(b[24:], netip.MustParseAddr("::ffff:10.0.3.2").AsSlice())
	} else {
		copy(b[8:], []byte{10, 0, 1, 2})
		copy(b[24:], []byte{10, 0, 3, 2})
	}
	attr := func(typ uint16, payload []byte) {
		h := make([]byte, 4)
		binary.NativeEndian.PutUint16(h, uint16(4+len(payload)))
		binary.NativeEndian.PutUint16(h[2:], typ)
		b = append(append(b, h...), payload...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	if memLen > 0 {
		mem := make([]byte, memLen)
		if memLen >= 8 {
			binary.NativeEndian.PutUint32(mem[memRmemAlloc*4:], rmem)
			binary.NativeEndian.PutUint32(mem[memRcvbuf*4:], rcvbuf)
		}
		attr(attrSkMemInfo, mem)
	}
	if infoLen > 0 {
		info := make([]byte, infoLen)
		if infoLen >= mptcpiRcvNxt+8 {
			binary.NativeEndian.PutUint32(info[mptcpiToken:], token)
			binary.NativeEndian.PutUint64(info[mptcpiRcvNxt:], rcvNxt)
		}
		attr(attrInfo, info)
	}
	return b
}

func TestParseMPTCP(t *testing.T) {
	want := MPTCPSock{Local: netip.MustParseAddrPort("10.0.1.2:40000"), Remote: netip.MustParseAddrPort("10.0.3.2:443"),
		Token: 0x71898354, RcvNxt: 0xe3b2dd9c74f3732f, RmemAlloc: 132608, RcvBuf: 131072}
	for _, c := range []struct {
		name   string
		msg    []byte
		ok     bool
		err    bool
		isFull bool
	}{
		{"v4", mptcpMsg(2, 96, 36, want.Token, want.RcvNxt, want.RmemAlloc, want.RcvBuf), true, false, true},
		{"v4-mapped ends of an AF_INET6 socket", mptcpMsg(10, 96, 36, want.Token, want.RcvNxt, want.RmemAlloc, want.RcvBuf), true, false, true},
		{"no sk_meminfo", mptcpMsg(2, 96, 0, 1, 1, 1, 1), false, false, false},
		{"no mptcp_info", mptcpMsg(2, 0, 36, 1, 1, 1, 1), false, false, false},
		{"mptcp_info too short", mptcpMsg(2, 24, 36, 1, 1, 1, 1), false, true, false},
		{"sk_meminfo too short", mptcpMsg(2, 96, 4, 1, 1, 1, 1), false, true, false},
		{"short message", make([]byte, 20), false, true, false},
		{"unknown family", mptcpMsg(7, 96, 36, 1, 1, 1, 1), false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := ParseMPTCP(c.msg)
			if ok != c.ok || (err != nil) != c.err {
				t.Fatalf("ok %v err %v; want ok %v, error %v", ok, err, c.ok, c.err)
			}
			if ok && got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if ok && got.Full() != c.isFull {
				t.Errorf("Full() = %v", got.Full())
			}
		})
	}
	room := want
	room.RmemAlloc = 4096
	if room.Full() || (MPTCPSock{}).Full() {
		t.Error("Full() with room left, or with no buffer read")
	}
}

// The request names MPTCP in its protocol attribute, asks for mptcp_info and sk_meminfo, and is otherwise the
// TCP request.
func TestRequestMPTCP(t *testing.T) {
	r := requestMPTCP(2, StateEstablished)
	if len(r) != reqLen+8 || r[0] != 2 || r[1] != 0 || r[2] != 1<<(attrInfo-1)|1<<(attrSkMemInfo-1) {
		t.Fatalf("request header % x", r[:4])
	}
	if binary.NativeEndian.Uint32(r[4:]) != StateEstablished {
		t.Error("states")
	}
	a := r[reqLen:]
	if binary.NativeEndian.Uint16(a) != 8 || binary.NativeEndian.Uint16(a[2:]) != reqAttrProtocol || binary.NativeEndian.Uint32(a[4:]) != protoMPTCP {
		t.Errorf("protocol attribute % x", a)
	}
}

func FuzzParseMPTCP(f *testing.F) {
	f.Add(mptcpMsg(2, 96, 36, 7, 9, 100, 200))
	f.Add(mptcpMsg(10, 40, 8, 7, 9, 100, 200))
	f.Add(make([]byte, diagMsgLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok, err := ParseMPTCP(b)
		if err != nil && ok {
			t.Fatal("ok with an error")
		}
		if ok && (!m.Local.IsValid() || !m.Remote.IsValid()) {
			t.Fatalf("ok without both ends: %+v", m)
		}
	})
}
