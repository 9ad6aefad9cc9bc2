package host

import "testing"

// The way the browser's pages reach a second path, as status reports it: mptcpize's LD_PRELOAD wins, a
// configured proxy's relay comes next, and neither is "none".
func TestBrowserMPTCP(t *testing.T) {
	for _, tc := range []struct {
		preload string
		relay   bool
		way     string
		wrapped bool
	}{
		{"/usr/lib/x86_64-linux-gnu/mptcpize/libmptcpwrap.so.0.0.1", false, "mptcpize", true},
		{"/usr/lib/x86_64-linux-gnu/mptcpize/libmptcpwrap.so.0.0.1", true, "mptcpize", true},
		{"", true, "relay", false},
		{"/usr/lib/libother.so", false, "none", false},
		{"", false, "none", false},
	} {
		got := browserMPTCP(tc.preload, tc.relay)
		if got.Way != tc.way || got.Wrapped != tc.wrapped || got.Detail == "" {
			t.Errorf("LD_PRELOAD=%q relay=%v: %+v, want way %s", tc.preload, tc.relay, got, tc.way)
		}
	}
}
