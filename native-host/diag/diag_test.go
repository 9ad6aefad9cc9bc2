package diag

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// diagMsg builds an inet_diag_msg for src:40000 -> the same address's :443 (dst[0] bumped) with a tcp_info
// of infoLen bytes, plus an attribute before it.
func diagMsg(family byte, src []byte, infoLen int, rtt, minRTT, retr, segs uint32) []byte {
	b := make([]byte, diagMsgLen)
	b[0] = family
	binary.BigEndian.PutUint16(b[4:], 40000)
	binary.BigEndian.PutUint16(b[6:], 443)
	copy(b[8:], src)
	copy(b[24:], src)
	b[24]++
	binary.NativeEndian.PutUint32(b[64:], 1000) // idiag_uid
	// An unrelated attribute first (INET_DIAG_CONG = 4, "cubic\0", padded).
	cong := []byte{10, 0, 4, 0, 'c', 'u', 'b', 'i', 'c', 0, 0, 0}
	b = append(b, cong...)
	info := make([]byte, infoLen)
	put := func(off int, v uint32) {
		if off+4 <= len(info) {
			binary.NativeEndian.PutUint32(info[off:], v)
		}
	}
	put(tcpiRTT, rtt)
	put(tcpiTotRetr, retr)
	put(tcpiSegsOut, segs)
	put(tcpiMinRTT, minRTT)
	put(tcpiSndMSS, 1448)
	put(tcpiSndCwnd, 10)
	put(tcpiRcvWnd, 65535)
	put(tcpiRcvOOO, retr*2)
	put(tcpiDataIn, segs/2)
	if tcpiBytesRcv+8 <= len(info) {
		binary.NativeEndian.PutUint64(info[tcpiBytesAck:], uint64(segs)*1000)
		binary.NativeEndian.PutUint64(info[tcpiBytesRcv:], uint64(rtt)*1<<20)
	}
	hdr := make([]byte, 4)
	binary.NativeEndian.PutUint16(hdr, uint16(4+infoLen))
	binary.NativeEndian.PutUint16(hdr[2:], attrInfo)
	return append(append(b, hdr...), info...)
}

func TestParse(t *testing.T) {
	v4 := []byte{10, 0, 1, 2}
	v6 := netip.MustParseAddr("fd00::5").AsSlice()
	ap := netip.MustParseAddrPort
	cases := []struct {
		name string
		msg  []byte
		want Sock
		ok   bool
		err  bool
	}{
		{"v4 full", diagMsg(2, v4, 248, 50000, 48000, 3, 1000), Sock{Src: netip.MustParseAddr("10.0.1.2"), Local: ap("10.0.1.2:40000"), Remote: ap("11.0.1.2:443"), UID: 1000, RTTUS: 50000, MinRTTUS: 48000, TotalRetrans: 3, SegsOut: 1000, BytesAcked: 1_000_000, BytesReceived: 50000 << 20, DataSegsIn: 500, RcvOOOPack: 6, SndMSS: 1448, SndCwnd: 10, RcvWnd: 65535}, true, false},
		{"v6 full", diagMsg(10, v6, 248, 70000, 69000, 0, 10), Sock{Src: netip.MustParseAddr("fd00::5"), Local: ap("[fd00::5]:40000"), Remote: ap("[fe00::5]:443"), UID: 1000, RTTUS: 70000, MinRTTUS: 69000, SegsOut: 10, BytesAcked: 10_000, BytesReceived: 70000 << 20, DataSegsIn: 5, SndMSS: 1448, SndCwnd: 10, RcvWnd: 65535}, true, false},
		{"old kernel without min_rtt", diagMsg(2, v4, 140, 50000, 0, 1, 2), Sock{Src: netip.MustParseAddr("10.0.1.2"), Local: ap("10.0.1.2:40000"), Remote: ap("11.0.1.2:443"), UID: 1000, RTTUS: 50000, TotalRetrans: 1, SegsOut: 2, BytesAcked: 2000, BytesReceived: 50000 << 20, SndMSS: 1448, SndCwnd: 10}, true, false},
		{"tcp_info too short", diagMsg(2, v4, 100, 1, 1, 1, 1), Sock{}, false, true},
		{"no tcp_info", make([]byte, diagMsgLen), Sock{}, false, true},
		{"short message", make([]byte, 10), Sock{}, false, true},
		{"bad attribute length", append(append(make([]byte, diagMsgLen), 200, 0, 2, 0), make([]byte, 8)...), Sock{}, false, true},
	}
	cases[4].msg[0] = 2
	cases[4].err = false
	cases[6].msg[0] = 2
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := Parse(c.msg)
			if (err != nil) != c.err || ok != c.ok {
				t.Fatalf("ok %v err %v; want ok %v, error %v", ok, err, c.ok, c.err)
			}
			if ok && got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(diagMsg(2, []byte{10, 0, 1, 2}, 232, 1, 2, 3, 4))
	f.Add(diagMsg(10, make([]byte, 16), 140, 1, 2, 3, 4))
	f.Add(make([]byte, diagMsgLen+4))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok, err := Parse(b)
		if ok && (err != nil || !s.Src.IsValid() || s.Local.Addr() != s.Src || !s.Remote.IsValid()) {
			t.Fatalf("ok with err %v, src %v local %v remote %v", err, s.Src, s.Local, s.Remote)
		}
	})
}
