package host

import (
	"runtime/debug"
	"testing"
)

// SetGC sets the serving host's collector, and leaves each setting the environment gives alone.
func TestSetGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })
	for _, tc := range []struct {
		name                string
		env                 map[string]string
		wantPct             int
		wantLimit, setLimit int64
	}{
		{"nothing set", nil, GCPercent, MemoryLimit, 1 << 40},
		{"GOGC set", map[string]string{"GOGC": "50"}, 100, MemoryLimit, 1 << 40},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, GCPercent, 1 << 40, 1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(tc.setLimit)
			SetGC(func(k string) string { return tc.env[k] })
			if got := debug.SetGCPercent(100); got != tc.wantPct {
				t.Errorf("GC percent %d, want %d", got, tc.wantPct)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tc.wantLimit)
			}
		})
	}
}
