package paths

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The offsets ParseDiag reads are those of the kernel's struct tcp_info as x/sys/unix mirrors it.
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
		{"snd_mss", unsafe.Offsetof(ti.Snd_mss), tcpiSndMSS},
		{"snd_cwnd", unsafe.Offsetof(ti.Snd_cwnd), tcpiSndCwnd},
		{"rcv_wnd", unsafe.Offsetof(ti.Rcv_wnd), tcpiRcvWnd},
		{"bytes_acked", unsafe.Offsetof(ti.Bytes_acked), tcpiBytesAck},
		{"bytes_received", unsafe.Offsetof(ti.Bytes_received), tcpiBytesRcv},
	} {
		if int(c.got) != c.want {
			t.Errorf("tcp_info.%s at %d, parser reads %d", c.name, c.got, c.want)
		}
	}
}
