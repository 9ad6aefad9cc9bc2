package mptcp

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The decoder's tcp_info offsets must agree with x/sys/unix's TCPInfo, which is generated
// from the kernel headers.
func TestTCPInfoOffsetsMatchHeaders(t *testing.T) {
	var ti unix.TCPInfo
	cases := []struct {
		name      string
		mine, sys uintptr
	}{
		{"rtt", tiRTT, unsafe.Offsetof(ti.Rtt)},
		{"snd_cwnd", tiSndCwnd, unsafe.Offsetof(ti.Snd_cwnd)},
		{"total_retrans", tiTotalRetrans, unsafe.Offsetof(ti.Total_retrans)},
		{"bytes_acked", tiBytesAcked, unsafe.Offsetof(ti.Bytes_acked)},
		{"bytes_received", tiBytesReceived, unsafe.Offsetof(ti.Bytes_received)},
		{"bytes_sent", tiBytesSent, unsafe.Offsetof(ti.Bytes_sent)},
		{"bytes_retrans", tiBytesRetrans, unsafe.Offsetof(ti.Bytes_retrans)},
		{"length asked (through snd_wnd)", TCPInfoLen, unsafe.Offsetof(ti.Rcv_wnd)},
	}
	for _, c := range cases {
		if c.mine != c.sys {
			t.Errorf("%s at %d, kernel header says %d", c.name, c.mine, c.sys)
		}
	}
	if IPProtoMPTCP != unix.IPPROTO_MPTCP || SolMPTCP != unix.SOL_MPTCP {
		t.Error("MPTCP protocol or socket level numbers differ from x/sys/unix")
	}
}
