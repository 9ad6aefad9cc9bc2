package paths

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// diagMsg builds an inet_diag_msg for src with a tcp_info of infoLen bytes, plus attrs before it.
func diagMsg(family byte, src []byte, infoLen int, rtt, minRTT, retr, segs uint32) []byte {
	b := make([]byte, diagMsgLen)
	b[0] = family
	copy(b[8:], src)
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
	hdr := make([]byte, 4)
	binary.NativeEndian.PutUint16(hdr, uint16(4+infoLen))
	binary.NativeEndian.PutUint16(hdr[2:], attrInfo)
	return append(append(b, hdr...), info...)
}

func TestParseDiag(t *testing.T) {
	v4 := []byte{10, 0, 1, 2}
	v6 := netip.MustParseAddr("fd00::5").AsSlice()
	cases := []struct {
		name string
		msg  []byte
		want Sock
		ok   bool
		err  bool
	}{
		{"v4 full", diagMsg(2, v4, 232, 50000, 48000, 3, 1000), Sock{Src: netip.MustParseAddr("10.0.1.2"), RTTUS: 50000, MinRTTUS: 48000, TotalRetrans: 3, SegsOut: 1000}, true, false},
		{"v6 full", diagMsg(10, v6, 232, 70000, 69000, 0, 10), Sock{Src: netip.MustParseAddr("fd00::5"), RTTUS: 70000, MinRTTUS: 69000, SegsOut: 10}, true, false},
		{"old kernel without min_rtt", diagMsg(2, v4, 140, 50000, 0, 1, 2), Sock{Src: netip.MustParseAddr("10.0.1.2"), RTTUS: 50000, TotalRetrans: 1, SegsOut: 2}, true, false},
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
			got, ok, err := ParseDiag(c.msg)
			if (err != nil) != c.err || ok != c.ok {
				t.Fatalf("ok %v err %v; want ok %v, error %v", ok, err, c.ok, c.err)
			}
			if ok && got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func FuzzParseDiag(f *testing.F) {
	f.Add(diagMsg(2, []byte{10, 0, 1, 2}, 232, 1, 2, 3, 4))
	f.Add(diagMsg(10, make([]byte, 16), 140, 1, 2, 3, 4))
	f.Add(make([]byte, diagMsgLen+4))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok, err := ParseDiag(b)
		if ok && (err != nil || !s.Src.IsValid()) {
			t.Fatalf("ok with err %v, src %v", err, s.Src)
		}
	})
}
