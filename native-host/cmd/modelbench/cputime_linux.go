package main

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling thread's CPU time: a call measured by it leaves out the time the thread waited for a
// core, which on a shared machine is most of a wall-clock p99. The caller keeps to its thread (pinThread).
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// pinThread keeps the calling goroutine on its OS thread until the returned function is called.
func pinThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
