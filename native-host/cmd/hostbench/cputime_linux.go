package main

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// cpuMeter measures the CPU time of every thread of this process over a span: both ends of a round trip over
// io.Pipe run here, so a round trip measured by it leaves out the time its goroutines waited for a core.
//
// It sums each thread's own CPU clock rather than reading CLOCK_PROCESS_CPUTIME_ID: the process clock adds the
// runtime not yet accounted of the calling thread only, and takes every other thread's as the scheduler last
// accounted it (at its tick or its last switch, kernel/sched/cputime.c thread_group_cputime), so the host's
// goroutines still running on another core went uncounted until the next tick, and a sub-millisecond round trip
// read as a few microseconds or as a whole tick. A thread's own clock includes its pending runtime
// (task_sched_runtime).
//
// The threads are listed (/proc/self/task) before the span starts, and listed again after it ends for any thread
// started within it, so that the span holds only the clock reads: a listing is tens of microseconds, and the
// other threads' work during one inside the span would count as the round trip's.
type cpuMeter struct {
	tids  []int
	start []time.Duration // each of tids' clock at the span's start; -1: the thread had exited
	names map[string]bool // scratch for the second listing
}

// begin lists the threads and reads their clocks: the span starts.
func (m *cpuMeter) begin() bool {
	names, ok := taskNames()
	if !ok {
		return false
	}
	m.tids, m.start = m.tids[:0], m.start[:0]
	for _, name := range names {
		tid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		m.tids = append(m.tids, tid)
	}
	for _, tid := range m.tids {
		m.start = append(m.start, threadCPU(tid))
	}
	return true
}

// end reads the clocks of the threads begin listed (the span ends), then adds the whole CPU time of any thread
// started since: the CPU time of the process over the span. A thread that exited within the span counts nothing
// of it.
func (m *cpuMeter) end() (time.Duration, bool) {
	var sum time.Duration
	for i, tid := range m.tids {
		if c := threadCPU(tid); c >= 0 && m.start[i] >= 0 {
			sum += c - m.start[i]
		}
	}
	names, ok := taskNames()
	if !ok {
		return 0, false
	}
	if m.names == nil {
		m.names = make(map[string]bool)
	}
	clear(m.names)
	for _, tid := range m.tids {
		m.names[strconv.Itoa(tid)] = true
	}
	for _, name := range names {
		if m.names[name] {
			continue
		}
		if tid, err := strconv.Atoi(name); err == nil {
			if c := threadCPU(tid); c >= 0 {
				sum += c
			}
		}
	}
	return sum, true
}

func taskNames() ([]string, bool) {
	f, err := os.Open("/proc/self/task")
	if err != nil {
		return nil, false
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	return names, err == nil
}

// threadCPU is thread tid's CPU time, or -1 when it has exited.
func threadCPU(tid int) time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(threadClock(tid), &ts) != nil {
		return -1
	}
	return time.Duration(ts.Nano())
}

// threadClock is the clock id of thread tid's CPU time: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) of the kernel's
// include/linux/posix-timers.h, the complement of the id shifted by three bits, CPUCLOCK_PERTHREAD_MASK (4) and
// CPUCLOCK_SCHED (2). golang.org/x/sys/unix has no constructor for a thread's clock id, hence the arithmetic.
func threadClock(tid int) int32 {
	return int32(^tid<<3 | 4 | 2)
}
