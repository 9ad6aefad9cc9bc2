package origin

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// readFixture reads a dump written by the integration client (ORIGIN_WRITE_FIXTURES):
// the three buffers of one MPTCP_FULL_INFO call on kernel 6.18, on the client's socket
// after a page download over two subflows.
func readFixture(t *testing.T, name string) (hdr, sf, ti []byte) {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bufs := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		b, err := hex.DecodeString(v)
		if err != nil {
			t.Fatalf("%s %s: %v", name, k, err)
		}
		bufs[k] = b
	}
	return bufs["hdr"], bufs["sf"], bufs["ti"]
}

func TestDecodeFullInfoKernelFixtures(t *testing.T) {
	cases := []struct {
		file string
		port uint16
	}{
		{"fullinfo-h2.hex", 443},
		{"fullinfo-h1.hex", 8443},
	}
	for _, c := range cases {
		hdr, sf, ti := readFixture(t, c.file)
		// What the kernel wrote back into the header: its own struct sizes and the
		// sizes it used (the smaller of ours and its own).
		if got := [5]uint32{ne.Uint32(hdr[0:]), ne.Uint32(hdr[4:]), ne.Uint32(hdr[8:]), ne.Uint32(hdr[12:]), ne.Uint32(hdr[16:])}; got != [5]uint32{280, tcpInfoLen, subflowInfoLen, subflowInfoLen, 2} {
			t.Errorf("%s: header sizes %v", c.file, got)
		}
		fi, err := DecodeFullInfo(hdr, sf, ti)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if fi.Total != 2 || len(fi.Subflows) != 2 || fi.MPTCP.Subflows != 1 || !fi.MPTCP.HasBytes || fi.MPTCP.Flags&mptcpInfoFlagFallback != 0 {
			t.Fatalf("%s: %+v", c.file, fi)
		}
		var received uint64
		for i, s := range fi.Subflows {
			wantLocal := []string{itCliA, itCliB}[i]
			if s.ID != uint32(i+1) || s.Local.Addr().String() != wantLocal || s.Remote != netip.MustParseAddrPort(itSrvA+":"+itoa(c.port)) || s.Local.Port() == 0 {
				t.Errorf("%s subflow %d: id %d %v -> %v", c.file, i, s.ID, s.Local, s.Remote)
			}
			// Each subflow's acknowledged bytes count its SYN.
			if !s.TCP.HasSent || s.TCP.BytesAcked != s.TCP.BytesSent+1 || s.TCP.BytesReceived == 0 {
				t.Errorf("%s subflow %d: tcp %+v", c.file, i, s.TCP)
			}
			received += s.TCP.BytesReceived
		}
		// No loss on veth: the connection received exactly what its subflows received.
		if received != fi.MPTCP.BytesReceived || fi.MPTCP.BytesAcked != fi.MPTCP.BytesSent {
			t.Errorf("%s: subflows received %d, connection %d; sent %d acked %d", c.file, received, fi.MPTCP.BytesReceived, fi.MPTCP.BytesSent, fi.MPTCP.BytesAcked)
		}
	}
}

func itoa(p uint16) string {
	return netip.AddrPortFrom(netip.IPv4Unspecified(), p).String()[len("0.0.0.0:"):]
}

// fixture builds MPTCP_FULL_INFO buffers with the kernel's offsets written out as numbers,
// independently of the decoder's constants.
type fixture struct {
	hdr, sf, ti []byte
}

func newFixture(miLen, sfStride, tiStride, total, arrays int) *fixture {
	f := &fixture{hdr: make([]byte, 40+miLen), sf: make([]byte, arrays*sfStride), ti: make([]byte, arrays*tiStride)}
	le := binary.NativeEndian
	le.PutUint32(f.hdr[0:], 280)
	le.PutUint32(f.hdr[4:], uint32(tiStride))
	le.PutUint32(f.hdr[8:], 264)
	le.PutUint32(f.hdr[12:], uint32(sfStride))
	le.PutUint32(f.hdr[16:], uint32(total))
	le.PutUint32(f.hdr[20:], uint32(arrays))
	mi := f.hdr[40:]
	put64 := func(b []byte, off int, v uint64) {
		if off+8 <= len(b) {
			le.PutUint64(b[off:], v)
		}
	}
	put32 := func(b []byte, off int, v uint32) {
		if off+4 <= len(b) {
			le.PutUint32(b[off:], v)
		}
	}
	if len(mi) > 0 {
		mi[0] = byte(total)
	}
	put32(mi, 8, 0)           // flags
	put32(mi, 12, 0xdeadbeef) // token
	put64(mi, 16, 1000)       // write_seq
	put64(mi, 24, 900)        // snd_una
	put64(mi, 48, 7)          // bytes_retrans
	put64(mi, 56, 5000)       // bytes_sent
	put64(mi, 64, 6000)       // bytes_received
	put64(mi, 72, 4000)       // bytes_acked
	return f
}

func (f *fixture) subflow(i, stride, tiStride int, id uint32, local, remote netip.AddrPort, acked, sent uint64) {
	s := f.sf[i*stride : (i+1)*stride]
	binary.NativeEndian.PutUint32(s, id)
	sockaddr := func(b []byte, a netip.AddrPort) {
		if len(b) < 28 {
			return
		}
		if a.Addr().Is4() {
			binary.NativeEndian.PutUint16(b, 2)
			binary.BigEndian.PutUint16(b[2:], a.Port())
			copy(b[4:], a.Addr().AsSlice())
		} else {
			binary.NativeEndian.PutUint16(b, 10)
			binary.BigEndian.PutUint16(b[2:], a.Port())
			copy(b[8:], a.Addr().AsSlice())
		}
	}
	if stride >= 264 {
		sockaddr(s[8:], local)
		sockaddr(s[136:], remote)
	}
	t := f.ti[i*tiStride : (i+1)*tiStride]
	t[0] = 1 // TCP_ESTABLISHED
	if tiStride >= 136 {
		binary.NativeEndian.PutUint64(t[120:], acked)
		binary.NativeEndian.PutUint64(t[128:], 99)
	}
	if tiStride >= 216 {
		binary.NativeEndian.PutUint64(t[200:], sent)
		binary.NativeEndian.PutUint64(t[208:], 3)
	}
}

func TestDecodeFullInfoLayouts(t *testing.T) {
	v4l, v4r := netip.MustParseAddrPort("10.200.1.2:40000"), netip.MustParseAddrPort("10.200.3.2:443")
	v6l, v6r := netip.MustParseAddrPort("[2001:db8::2]:40001"), netip.MustParseAddrPort("[2001:db8::1]:443")
	mapped := netip.AddrPortFrom(netip.MustParseAddr("::ffff:10.200.2.2"), 40002)

	t.Run("two subflows, IPv4 and IPv6", func(t *testing.T) {
		f := newFixture(96, 264, 232, 2, 8)
		f.subflow(0, 264, 232, 1, v4l, v4r, 101, 100)
		f.subflow(1, 264, 232, 2, v6l, v6r, 201, 200)
		fi, err := DecodeFullInfo(f.hdr, f.sf, f.ti)
		if err != nil {
			t.Fatal(err)
		}
		want := []SubflowInfo{
			{ID: 1, Local: v4l, Remote: v4r, TCP: TCPInfo{State: 1, BytesAcked: 101, BytesReceived: 99, HasSent: true, BytesSent: 100, BytesRetrans: 3}},
			{ID: 2, Local: v6l, Remote: v6r, TCP: TCPInfo{State: 1, BytesAcked: 201, BytesReceived: 99, HasSent: true, BytesSent: 200, BytesRetrans: 3}},
		}
		if len(fi.Subflows) != 2 || fi.Subflows[0] != want[0] || fi.Subflows[1] != want[1] {
			t.Errorf("subflows %+v\nwant %+v", fi.Subflows, want)
		}
		m := fi.MPTCP
		if m.Subflows != 2 || m.Token != 0xdeadbeef || m.WriteSeq != 1000 || m.SndUna != 900 || !m.HasBytes ||
			m.BytesRetrans != 7 || m.BytesSent != 5000 || m.BytesReceived != 6000 || m.BytesAcked != 4000 {
			t.Errorf("mptcp_info %+v", m)
		}
	})
	t.Run("v4-mapped address is unmapped", func(t *testing.T) {
		f := newFixture(96, 264, 232, 1, 1)
		f.subflow(0, 264, 232, 3, mapped, v6r, 1, 0)
		fi, err := DecodeFullInfo(f.hdr, f.sf, f.ti)
		if err != nil || fi.Subflows[0].Local.String() != "10.200.2.2:40002" {
			t.Errorf("%v %v", fi.Subflows, err)
		}
	})
	t.Run("kernel 6.5 mptcp_info (80 bytes) and short tcp_info", func(t *testing.T) {
		f := newFixture(80, 264, 192, 1, 1)
		f.subflow(0, 264, 192, 1, v4l, v4r, 55, 54)
		fi, err := DecodeFullInfo(f.hdr, f.sf, f.ti)
		if err != nil || !fi.MPTCP.HasBytes || fi.MPTCP.BytesAcked != 4000 || fi.Subflows[0].TCP.HasSent || fi.Subflows[0].TCP.BytesAcked != 55 {
			t.Errorf("%+v %v", fi, err)
		}
	})
	t.Run("mptcp_info without byte counters", func(t *testing.T) {
		f := newFixture(48, 264, 232, 0, 8)
		fi, err := DecodeFullInfo(f.hdr, f.sf, f.ti)
		if err != nil || fi.MPTCP.HasBytes || fi.MPTCP.SndUna != 900 || len(fi.Subflows) != 0 {
			t.Errorf("%+v %v", fi, err)
		}
	})
	t.Run("more subflows than asked for", func(t *testing.T) {
		f := newFixture(96, 264, 232, 5, 2)
		f.subflow(0, 264, 232, 1, v4l, v4r, 1, 0)
		f.subflow(1, 264, 232, 2, v4l, v4r, 1, 0)
		fi, err := DecodeFullInfo(f.hdr, f.sf, f.ti)
		if err != nil || fi.Total != 5 || len(fi.Subflows) != 2 {
			t.Errorf("total %d, %d decoded, %v", fi.Total, len(fi.Subflows), err)
		}
	})
	t.Run("subflow info without addresses", func(t *testing.T) {
		f := newFixture(96, 4, 232, 1, 1)
		f.subflow(0, 4, 232, 9, v4l, v4r, 1, 0)
		fi, err := DecodeFullInfo(f.hdr, f.sf, f.ti)
		if err != nil || fi.Subflows[0].ID != 9 || fi.Subflows[0].Local.IsValid() {
			t.Errorf("%+v %v", fi.Subflows, err)
		}
	})
	bad := []struct {
		name        string
		hdr, sf, ti []byte
	}{
		{"short header", make([]byte, 39), nil, nil},
		{"arrays larger than buffers", newFixture(96, 264, 232, 3, 3).hdr, make([]byte, 264), make([]byte, 232)},
		{"zero subflow stride", newFixture(96, 0, 232, 1, 1).hdr, make([]byte, 264), make([]byte, 232)},
	}
	for _, b := range bad {
		if _, err := DecodeFullInfo(b.hdr, b.sf, b.ti); err == nil {
			t.Errorf("%s: no error", b.name)
		}
	}
}

func TestDecodeTCPInfoLengths(t *testing.T) {
	full := make([]byte, 232)
	full[0] = 1
	binary.NativeEndian.PutUint32(full[68:], 50000)
	binary.NativeEndian.PutUint32(full[80:], 10)
	binary.NativeEndian.PutUint32(full[100:], 2)
	binary.NativeEndian.PutUint64(full[120:], 11)
	binary.NativeEndian.PutUint64(full[128:], 12)
	binary.NativeEndian.PutUint64(full[200:], 13)
	binary.NativeEndian.PutUint64(full[208:], 14)
	cases := []struct {
		n    int
		want TCPInfo
	}{
		{0, TCPInfo{}},
		{1, TCPInfo{State: 1}},
		{104, TCPInfo{State: 1, RTTus: 50000, SndCwnd: 10, TotalRetrans: 2}},
		{136, TCPInfo{State: 1, RTTus: 50000, SndCwnd: 10, TotalRetrans: 2, BytesAcked: 11, BytesReceived: 12}},
		{215, TCPInfo{State: 1, RTTus: 50000, SndCwnd: 10, TotalRetrans: 2, BytesAcked: 11, BytesReceived: 12}},
		{216, TCPInfo{State: 1, RTTus: 50000, SndCwnd: 10, TotalRetrans: 2, BytesAcked: 11, BytesReceived: 12, HasSent: true, BytesSent: 13, BytesRetrans: 14}},
	}
	for _, c := range cases {
		if got := DecodeTCPInfo(full[:c.n]); got != c.want {
			t.Errorf("%d bytes: %+v, want %+v", c.n, got, c.want)
		}
	}
}

func FuzzDecodeFullInfo(f *testing.F) {
	fx := newFixture(96, 264, 232, 2, 2)
	fx.subflow(0, 264, 232, 1, netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.0.2:2"), 5, 4)
	f.Add(fx.hdr, fx.sf, fx.ti)
	f.Add(make([]byte, 40), []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, hdr, sf, ti []byte) {
		fi, err := DecodeFullInfo(hdr, sf, ti)
		if err != nil {
			return
		}
		if uint32(len(fi.Subflows)) > fi.Total {
			t.Fatalf("%d subflows decoded, kernel counted %d", len(fi.Subflows), fi.Total)
		}
	})
}
