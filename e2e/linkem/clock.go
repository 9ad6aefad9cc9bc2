//go:build linux

package linkem

import (
	"time"

	"golang.org/x/sys/unix"
)

// Go's monotonic clock is CLOCK_MONOTONIC on Linux; remembering one reading
// of both lets us compute CLOCK_MONOTONIC from time.Since (a vDSO call) for
// the absolute deadlines given to timerfd.
var (
	baseTime = time.Now()
	baseMono = func() int64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			panic("linkem: CLOCK_MONOTONIC: " + err.Error())
		}
		return ts.Nano()
	}()
)

// Now returns the current CLOCK_MONOTONIC time in nanoseconds.
func Now() int64 { return baseMono + int64(time.Since(baseTime)) }
