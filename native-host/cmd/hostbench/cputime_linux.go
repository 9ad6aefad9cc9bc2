package main

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the CPU time of every thread of this process: both ends of a round trip over io.Pipe run here, so a
// round trip measured by it leaves out the time its goroutines waited for a core.
//
// It sums each thread's own CPU clock rather than reading CLOCK_PROCESS_CPUTIME_ID: the process clock adds the
// runtime not yet accounted of the calling thread only, and takes every other thread's as the scheduler last
// accounted it (at its tick or its last switch, kernel/sched/cputime.c thread_group_cputime), so the host's
// goroutines still running on another core went uncounted until the next tick, and a sub-millisecond round trip
// read as a few microseconds or as a whole tick. A thread's own clock includes its pending runtime
// (task_sched_runtime). golang.org/x/sys/unix has no constructor for a thread's clock id, hence the arithmetic.
func processCPU() (time.Duration, bool) {
	f, err := os.Open("/proc/self/task")
	if err != nil {
		return 0, false
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return 0, false
	}
	var sum time.Duration
	for _, name := range names {
		tid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		var ts unix.Timespec
		if unix.ClockGettime(threadClock(tid), &ts) != nil {
			continue // the thread has exited
		}
		sum += time.Duration(ts.Nano())
	}
	return sum, true
}

// threadClock is the clock id of thread tid's CPU time: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) of the kernel's
// include/linux/posix-timers.h, the complement of the id shifted by three bits, CPUCLOCK_PERTHREAD_MASK (4) and
// CPUCLOCK_SCHED (2).
func threadClock(tid int) int32 {
	return int32(^tid<<3 | 4 | 2)
}
