//go:build linux

package host

import (
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/nstest"
)

// TestIntegrationEndpointsHealth: what status says of in-kernel subflow endpoints (NetworkManager's), read from a
// namespace's kernel: none, one under the in-kernel path manager (warn, with the fix), one under the userspace path
// manager the helper selects (ignored for now, fix still given).
func TestIntegrationEndpointsHealth(t *testing.T) {
	nstest.NeedRoot(t)
	ns := nstest.New(t, "mpseh", "a")
	read := func() (h EndpointsHealth) {
		ns.In(func() error { h = MPTCPEndpoints("/proc/sys/net/mptcp"); return nil })
		return h
	}
	if h := read(); h.State != "ok" || len(h.SubflowEndpoints) != 0 || h.Fix != nil {
		t.Fatalf("no endpoints: %+v", h)
	}
	nstest.Run(t, "ip", "-n", ns.Name, "mptcp", "endpoint", "add", "10.9.9.9", "subflow")
	nstest.Run(t, "ip", "-n", ns.Name, "mptcp", "endpoint", "add", "10.9.9.10", "signal")
	h := read()
	if h.State != "warn" || h.PathManager != "kernel" || len(h.SubflowEndpoints) != 1 || !strings.HasPrefix(h.SubflowEndpoints[0], "10.9.9.9") ||
		h.Fix == nil || !strings.Contains(*h.Fix, "connection.mptcp-flags") {
		t.Fatalf("a subflow endpoint under the in-kernel path manager: %+v", h)
	}
	ns.Sysctl(t, "net.mptcp.path_manager", "userspace")
	if h := read(); h.State != "ok" || h.PathManager != "userspace" || h.Fix == nil || !strings.Contains(h.Detail, "ignored") {
		t.Fatalf("under the userspace path manager: %+v", h)
	}
}
