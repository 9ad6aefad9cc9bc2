//go:build linux

package actuate

import (
	"testing"

	"github.com/mpsurf/mpsurf/native-host/nstest"
)

// The namespaces of this package's real-kernel tests (native-host/nstest), named mpsac-PID-tag.
type testNS = nstest.NS

func needRoot(t *testing.T)            { t.Helper(); nstest.NeedRoot(t) }
func run(t *testing.T, args ...string) { t.Helper(); nstest.Run(t, args...) }
func newNS(t *testing.T, tag string) *testNS {
	t.Helper()
	return nstest.New(t, "mpsac", tag)
}
func vethPair(t *testing.T, a, b *testNS, idx int) { t.Helper(); nstest.VethPair(t, a, b, idx) }
