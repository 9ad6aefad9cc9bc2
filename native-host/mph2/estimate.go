package mph2

import "time"

// Seed 003's estimation constants (§3.4.1 and footnote 3).
const (
	// PingEvery is how often each connection sends an HTTP/2 PING.
	PingEvery = 100 * time.Millisecond
	// RTTWindow is how many PING samples the RTT estimate averages.
	RTTWindow = 5
	// SampleBytes is how much new data makes one throughput sample.
	SampleBytes = 20_000
	// BandwidthWindow is how many bytes of the most recent samples the bandwidth estimate covers.
	BandwidthWindow = 500_000
)

// RTT is the moving average of the last RTTWindow samples. The zero value has no estimate.
type RTT struct {
	samples [RTTWindow]time.Duration
	n, next int
}

// Add records one sample.
func (r *RTT) Add(d time.Duration) {
	if d <= 0 {
		return
	}
	r.samples[r.next] = d
	r.next = (r.next + 1) % RTTWindow
	if r.n < RTTWindow {
		r.n++
	}
}

// Value is the average, and false before the first sample.
func (r *RTT) Value() (time.Duration, bool) {
	if r.n == 0 {
		return 0, false
	}
	var sum time.Duration
	for i := 0; i < r.n; i++ {
		sum += r.samples[i]
	}
	return sum / time.Duration(r.n), true
}

// Bandwidth estimates a path's throughput from the bytes it receives: a sample each time at least SampleBytes
// have arrived since the last one, and the estimate is the byte-weighted average rate of the newest samples that
// cover BandwidthWindow bytes (their bytes over their durations). Time the path spends idle (no stream receiving)
// is not counted: Idle ends the current measurement and the next bytes start a new one.
type Bandwidth struct {
	samples []bwSample
	active  bool
	since   time.Time
	pending int64
}

type bwSample struct {
	bytes int64
	dur   time.Duration
}

// Add records n bytes received at now.
func (b *Bandwidth) Add(n int64, now time.Time) {
	if !b.active {
		// The first bytes after idle only start the clock: their own transfer time is unknown.
		b.active, b.since, b.pending = true, now, 0
		return
	}
	b.pending += n
	if b.pending < SampleBytes {
		return
	}
	d := now.Sub(b.since)
	if d <= 0 {
		return // a burst read at one instant: wait for more
	}
	b.samples = append(b.samples, bwSample{b.pending, d})
	b.since, b.pending = now, 0
	// Keep only the newest samples that still reach back BandwidthWindow bytes.
	var sum int64
	for i := len(b.samples) - 1; i >= 0; i-- {
		sum += b.samples[i].bytes
		if sum >= BandwidthWindow {
			b.samples = append(b.samples[:0], b.samples[i:]...)
			break
		}
	}
}

// Idle says no stream of the path is receiving now.
func (b *Bandwidth) Idle() { b.active = false }

// Bytes is how many bytes the estimate's samples cover.
func (b *Bandwidth) Bytes() int64 {
	var n int64
	for _, s := range b.samples {
		n += s.bytes
	}
	return n
}

// Value is the estimate in bytes per second, and false before the first sample.
func (b *Bandwidth) Value() (float64, bool) {
	var bytes int64
	var dur time.Duration
	for _, s := range b.samples {
		bytes += s.bytes
		dur += s.dur
	}
	if dur <= 0 {
		return 0, false
	}
	return float64(bytes) / dur.Seconds(), true
}

// HTTP/2 flow-control credit per stream, once sized from the path's estimates (Credit).
const (
	minCredit = 192 << 10
	maxCredit = 16 << 20
	// creditEstimateBytes is how many bytes the bandwidth estimate must cover before it sizes the credit: the
	// first samples can be one burst read at once (a loopback write, WiFi's aggregated frames, a socket buffer
	// drained late) at many times the path's rate, and that rate times the RTT, granted, would commit the whole
	// object to one stream, where no range end can move any more. Until then the default credit stays.
	creditEstimateBytes = BandwidthWindow / 2
)

// Credit is the flow-control credit a path's streams keep ahead of what they received: enough for the path to run
// at its rate, three bandwidth-delay products of the path without its queues (baseRTT, the smallest RTT seen: the
// rate measured under this very credit must not cap itself; sized from the queued RTT, the credit would fill the
// queues it measures and grow without end), within [minCredit, maxCredit]. False while the estimates cannot say.
func Credit(bw *Bandwidth, baseRTT time.Duration) (int64, bool) {
	rate, ok := bw.Value()
	if !ok || baseRTT <= 0 || bw.Bytes() < creditEstimateBytes {
		return 0, false
	}
	return min(max(int64(3*rate*baseRTT.Seconds()), minCredit), maxCredit), true
}
