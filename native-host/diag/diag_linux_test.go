package diag

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The offsets Parse reads are those of the kernel's struct tcp_info as x/sys/unix mirrors it.
func TestTCPInfoOffsets(t *testing.T) {
	var ti unix.TCPInfo
	for _, c := range []struct {
		name string
		got  uintptr
		want int
	}{
		{"rtt", unsafe.Offsetof(ti.Rtt), tcpiRTT},
		{"total_retrans", unsafe.Offsetof(ti.Total_retrans), tcpiTotRetr},
		{"segs_out", unsafe.Offsetof(ti.Segs_out), tcpiSegsOut},
		{"min_rtt", unsafe.Offsetof(ti.Min_rtt), tcpiMinRTT},
		{"data_segs_in", unsafe.Offsetof(ti.Data_segs_in), tcpiDataIn},
		{"snd_mss", unsafe.Offsetof(ti.Snd_mss), tcpiSndMSS},
		{"snd_cwnd", unsafe.Offsetof(ti.Snd_cwnd), tcpiSndCwnd},
		{"rcv_wnd", unsafe.Offsetof(ti.Rcv_wnd), tcpiRcvWnd},
		{"rcv_ooopack", unsafe.Offsetof(ti.Rcv_ooopack), tcpiRcvOOO},
		{"bytes_acked", unsafe.Offsetof(ti.Bytes_acked), tcpiBytesAck},
		{"bytes_received", unsafe.Offsetof(ti.Bytes_received), tcpiBytesRcv},
	} {
		if int(c.got) != c.want {
			t.Errorf("tcp_info.%s at %d, parser reads %d", c.name, c.got, c.want)
		}
	}
}

// Find names one socket by its two ends and reports its owner; DumpStates sees it too. Real kernel, loopback.
func TestIntegrationFind(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	local := netip.MustParseAddrPort(c.LocalAddr().String())
	remote := netip.MustParseAddrPort(c.RemoteAddr().String())
	d, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s, ok, err := d.Find(local, remote)
	if err != nil || !ok || s.State != TCPEstablished || s.UID != uint32(os.Getuid()) || s.Local != local || s.Remote != remote {
		t.Fatalf("Find(%v, %v) = %+v %v %v", local, remote, s, ok, err)
	}
	// An IPv4 connection of an AF_INET6 socket (v4-mapped ends) is found by its IPv4 ends too.
	ln6, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		t.Skipf("no IPv6: %v", err)
	}
	defer ln6.Close()
	go func() {
		if c, err := ln6.Accept(); err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	c6, err := (&net.Dialer{}).Dial("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(ln6.Addr().(*net.TCPAddr).Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c6.Close()
	// The server side of it is an AF_INET6 socket with mapped ends.
	srvLocal := netip.MustParseAddrPort(c6.RemoteAddr().String())
	srvRemote := netip.MustParseAddrPort(c6.LocalAddr().String())
	if s, ok, err := d.Find(srvLocal, srvRemote); err != nil || !ok || s.UID != uint32(os.Getuid()) {
		t.Fatalf("Find of a v4-mapped AF_INET6 socket (%v, %v) = %+v %v %v", srvLocal, srvRemote, s, ok, err)
	}
	gone := netip.AddrPortFrom(local.Addr(), 1)
	if _, ok, err := d.Find(gone, remote); ok || err != nil {
		t.Fatalf("Find of a socket that does not exist: ok %v err %v", ok, err)
	}
	socks, err := d.DumpStates(nil, StatesOpen)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range socks {
		if s.Local == local && s.Remote == remote {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("DumpStates listed %d sockets %v -> %v", n, local, remote)
	}
}

// DumpMPTCP sees a real MPTCP connection's own socket: its ends, its token, and the data it holds unread. Real
// kernel, loopback; skipped where MPTCP is off.
func TestIntegrationDumpMPTCP(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/net/mptcp/enabled"); err != nil || string(b) != "1\n" {
		t.Skip("MPTCP is not enabled here")
	}
	var lc net.ListenConfig
	lc.SetMultipathTCP(true)
	ln, err := lc.Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const sent = 64 << 10
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			c.Write(make([]byte, sent))
			io.Copy(io.Discard, c)
		}
	}()
	var dl net.Dialer
	dl.SetMultipathTCP(true)
	c, err := dl.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if mp, err := c.(*net.TCPConn).MultipathTCP(); err != nil || !mp {
		t.Skipf("the connection fell back to TCP (%v)", err)
	}
	local := netip.MustParseAddrPort(c.LocalAddr().String())
	d, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var found MPTCPSock
	for i := 0; i < 200 && found.RmemAlloc == 0; i++ { // until the server's bytes have arrived, unread
		socks, err := d.DumpMPTCP(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range socks {
			if s.Local == local {
				found = s
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if found.Token == 0 || found.Remote.String() != ln.Addr().String() || found.RmemAlloc < sent || found.RcvBuf == 0 || found.RcvNxt == 0 {
		t.Fatalf("DumpMPTCP: %+v, want the connection from %v holding %d bytes unread", found, local, sent)
	}
}
