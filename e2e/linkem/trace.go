package linkem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
)

// MTU is the size of one delivery opportunity in a Mahimahi trace: each
// opportunity can carry up to this many bytes (mm-link's PACKET_SIZE).
const MTU = 1500

// maxTraceMs bounds trace timestamps so that times in nanoseconds cannot
// overflow int64 (2^40 ms is about 35 years).
const maxTraceMs = 1 << 40

// maxTraceLines bounds the size of a trace held in memory.
const maxTraceLines = 10_000_000

// Trace is a Mahimahi packet-delivery trace: each entry is the time in
// milliseconds of one opportunity to deliver MTU bytes. The trace repeats
// with a period equal to its last timestamp.
type Trace struct {
	ms     []int64 // non-decreasing
	period int64   // ms, > 0
}

// Len returns the number of delivery opportunities in one period.
func (t *Trace) Len() int { return len(t.ms) }

// PeriodMs returns the length of one period in milliseconds.
func (t *Trace) PeriodMs() int64 { return t.period }

// MeanRateBps returns the average rate the trace offers, in bits per second.
func (t *Trace) MeanRateBps() float64 {
	return float64(len(t.ms)) * MTU * 8 / (float64(t.period) / 1000)
}

// ParseTrace reads a trace: one non-negative integer (milliseconds) per line,
// in non-decreasing order. Blank lines and surrounding spaces are ignored.
func ParseTrace(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), 256)
	var ms []int64
	line := 0
	for sc.Scan() {
		line++
		f := bytes.TrimSpace(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil || v < 0 || v > maxTraceMs {
			return nil, fmt.Errorf("trace line %d: %q is not a timestamp in ms (integer 0..%d)", line, truncate(f), int64(maxTraceMs))
		}
		if n := len(ms); n > 0 && v < ms[n-1] {
			return nil, fmt.Errorf("trace line %d: timestamp %d is before the previous one (%d)", line, v, ms[n-1])
		}
		if len(ms) == maxTraceLines {
			return nil, fmt.Errorf("trace line %d: more than %d delivery opportunities", line, maxTraceLines)
		}
		ms = append(ms, v)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("trace line %d: line too long", line+1)
		}
		return nil, fmt.Errorf("trace: %w", err)
	}
	if len(ms) == 0 {
		return nil, errors.New("trace: no delivery opportunities")
	}
	last := ms[len(ms)-1]
	if last == 0 {
		// A zero period would mean infinitely many opportunities per loop.
		return nil, errors.New("trace: last timestamp must be > 0 (it is the loop period)")
	}
	return &Trace{ms: ms, period: last}, nil
}

// LoadTrace parses the trace file at path.
func LoadTrace(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ParseTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// at returns the time in ns, relative to the trace start, of opportunity j
// (counted across loops).
func (t *Trace) at(j int64) int64 {
	n := int64(len(t.ms))
	return ((j/n)*t.period + t.ms[j%n]) * 1e6
}

// firstAtOrAfter returns the index of the first opportunity at or after rel
// ns from the trace start.
func (t *Trace) firstAtOrAfter(rel int64) int64 {
	if rel < 0 {
		rel = 0
	}
	p := t.period * 1e6
	loop := rel / p
	within := rel - loop*p
	if within == 0 && loop > 0 {
		// The last entry equals the period, so entries of the previous
		// loop equal to the period fall exactly on rel.
		n := len(t.ms)
		if i := sort.Search(n, func(i int) bool { return t.ms[i]*1e6 >= p }); i < n {
			return (loop-1)*int64(n) + int64(i)
		}
	}
	i := sort.Search(len(t.ms), func(i int) bool { return t.ms[i]*1e6 >= within })
	return loop*int64(len(t.ms)) + int64(i)
}

func truncate(b []byte) []byte {
	if len(b) > 20 {
		return b[:20]
	}
	return b
}
