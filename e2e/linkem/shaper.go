package linkem

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Params configures one direction of a link.
type Params struct {
	Delay      time.Duration // one-way propagation delay
	RateBps    float64       // constant rate in bit/s; unused when Trace is set
	Trace      *Trace        // Mahimahi delivery trace; nil for a constant rate
	Loss       float64       // probability in [0, 1) that a packet is lost on arrival
	QueueBytes int           // drop-tail limit on bytes waiting for or in transmission
	// DelayFirst puts the delay stage before the queue (downlink) instead of
	// after the rate stage (uplink); see the package comment.
	DelayFirst bool
}

// Validate reports the first parameter that cannot be emulated.
func (p Params) Validate() error {
	switch {
	case p.Delay < 0 || p.Delay > time.Minute:
		return fmt.Errorf("delay %v out of range [0, 1m]", p.Delay)
	case p.Trace == nil && !(p.RateBps >= 1000 && p.RateBps <= 10e9):
		return fmt.Errorf("rate %v bit/s out of range [1 kbit/s, 10 Gbit/s]", p.RateBps)
	case !(p.Loss >= 0 && p.Loss < 1):
		return fmt.Errorf("loss %v out of range [0, 1)", p.Loss)
	case p.QueueBytes < MTU || p.QueueBytes > 1<<30:
		return fmt.Errorf("queue %d bytes out of range [%d, 2^30]", p.QueueBytes, MTU)
	}
	return nil
}

// Verdict is what happened to an arriving packet.
type Verdict uint8

const (
	Deliver Verdict = iota // delivered at the returned time
	Lost                   // dropped by random loss
	Dropped                // dropped because the queue was full
)

// Shaper computes when each packet of one direction is delivered. Times are
// nanoseconds on any monotonic clock. It is not safe for concurrent use.
type Shaper struct {
	p     Params
	rng   *rand.Rand
	seed  uint64 // the loss generator's seed, from which each Rewind derives its own
	start int64  // time origin of the trace

	txNs float64 // constant rate: ns per byte

	busy int64 // constant rate: time the transmitter becomes free
	idle int64 // constant rate: total time the transmitter had nothing to send, up to busy
	sent int64 // constant rate: total time the transmitter spent sending

	opp     int64 // trace: absolute index of the current opportunity
	oppLeft int   // trace: bytes still free in it
	oppSet  bool

	q DropTail

	lastQ   int64 // latest queue-entry time, keeps the delay line FIFO
	lastOut int64 // latest delivery time
}

// NewShaper returns a shaper whose trace starts at time start and whose loss
// decisions come from a generator seeded with seed.
func NewShaper(p Params, seed uint64, start int64) (*Shaper, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s := &Shaper{rng: lossRNG(seed), seed: seed, start: start, busy: start, lastQ: math.MinInt64, lastOut: math.MinInt64}
	s.set(p)
	return s, nil
}

// SetParams changes the parameters from the next packet on. Packets already
// admitted keep their delivery times, and later packets are never delivered
// before earlier ones, as in a FIFO pipe.
func (s *Shaper) SetParams(p Params) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.Trace != s.p.Trace {
		s.oppSet = false
	}
	s.set(p)
	return nil
}

func (s *Shaper) set(p Params) {
	s.p = p
	if p.Trace == nil {
		s.txNs = 8e9 / p.RateBps
	}
	s.q.Limit = p.QueueBytes
}

func lossRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// Rewind puts a trace-driven link at offset (ns) into its trace as of time now, so that loads started after a
// rewind to the same offset meet the same link, as each run of Mahimahi's mm-link starts its trace anew. It also
// restarts the random loss from a generator of its own for that offset, on every link: loads of different modes
// rewound to the same offset then draw the same losses for the same packet sequence (common random numbers), so
// that a single-path decision's load and an sp-wifi load of the same page and repetition differ by what was
// decided, not by which packets a 1 % loss happened to hit. Packets already admitted keep their delivery times.
func (s *Shaper) Rewind(now, offset int64) {
	offset = max(offset, 0)
	// SplitMix64's increment spreads neighbouring offsets over the seed space.
	s.rng = lossRNG(s.seed ^ (uint64(offset)+1)*0x9e3779b97f4a7c15)
	if s.p.Trace == nil {
		return
	}
	s.start, s.oppSet = now-offset, false
}

// Params returns the current parameters.
func (s *Shaper) Params() Params { return s.p }

// Admit decides the fate of a packet of size bytes arriving at time now and,
// for Deliver, returns the time at which it leaves the emulated link.
func (s *Shaper) Admit(now int64, size int) (int64, Verdict) {
	if size <= 0 {
		return 0, Dropped
	}
	if s.p.Loss > 0 && s.rng.Float64() < s.p.Loss {
		return 0, Lost
	}
	enter := now
	if s.p.DelayFirst {
		enter += int64(s.p.Delay)
	}
	enter = max(enter, s.lastQ)
	s.lastQ = enter
	s.q.Release(enter)
	if !s.q.Fits(size) {
		return 0, Dropped
	}
	var out int64
	if s.p.Trace == nil {
		out = s.serialize(enter, size)
	} else {
		out = s.useOpportunities(enter, size)
	}
	s.q.Push(out, size)
	if !s.p.DelayFirst {
		out += int64(s.p.Delay)
	}
	out = max(out, s.lastOut)
	s.lastOut = out
	return out, Deliver
}

// serialize models a constant-rate transmitter: a packet starts when it
// enters the queue or when the previous one has been sent, whichever is
// later, and takes size*8/rate. Idle time is not banked.
func (s *Shaper) serialize(enter int64, size int) int64 {
	if enter > s.busy {
		s.idle += enter - s.busy
	}
	begin := max(enter, s.busy)
	tx := int64(math.Round(float64(size) * s.txNs))
	s.sent += tx
	s.busy = begin + tx
	return s.busy
}

// Sending returns the total time the constant-rate transmitter has spent (or,
// for packets admitted and not yet sent, will spend) sending: the emulated
// link's own measure of its busy time, whatever the wall clock does.
func (s *Shaper) Sending() int64 { return s.sent }

// useOpportunities models mm-link: each trace entry can deliver MTU bytes;
// a packet leaves at the opportunity that carries its last byte; bytes an
// opportunity does not use when the queue is empty are lost to everyone.
func (s *Shaper) useOpportunities(enter int64, size int) int64 {
	tr := s.p.Trace
	if !s.oppSet || s.start+tr.at(s.opp) < enter {
		s.opp = tr.firstAtOrAfter(enter - s.start)
		s.oppLeft = MTU
		s.oppSet = true
	}
	for size > 0 {
		if s.oppLeft == 0 {
			s.opp++
			s.oppLeft = MTU
		}
		take := min(size, s.oppLeft)
		s.oppLeft -= take
		size -= take
	}
	return s.start + tr.at(s.opp)
}

// Idle returns how long the constant-rate transmitter has been idle from the
// start until time now, assuming no packet arrives before now. It tells a
// sender that left the link idle apart from a link that ran slow.
func (s *Shaper) Idle(now int64) int64 {
	return IdleAt(s.idle, s.busy, now)
}

// IdleAt is Idle computed from a snapshot of the idle total and busy-until
// time.
func IdleAt(idle, busy, now int64) int64 {
	if now > busy {
		return idle + now - busy
	}
	return idle
}

// QueuedBytes returns the bytes held in the queue as of the last admission.
func (s *Shaper) QueuedBytes() int { return s.q.Bytes() }

// DropTail is the byte-limited FIFO queue of the rate stage. It records, for
// each accepted packet, the time it finishes transmission; a packet occupies
// the queue from when it enters until then (including while it is being
// sent, as in Dummynet and mm-link).
type DropTail struct {
	Limit int // bytes

	dep   []int64 // ring of departure times
	size  []int32
	head  int
	n     int
	bytes int
}

// Release removes the packets that have left by time t.
func (q *DropTail) Release(t int64) {
	for q.n > 0 && q.dep[q.head] <= t {
		q.bytes -= int(q.size[q.head])
		q.head = (q.head + 1) % len(q.dep)
		q.n--
	}
}

// Fits reports whether a packet of size bytes can enter now.
func (q *DropTail) Fits(size int) bool { return q.bytes+size <= q.Limit }

// Push records an accepted packet that departs at time dep. Departure times
// must not decrease.
func (q *DropTail) Push(dep int64, size int) {
	if q.n == len(q.dep) {
		q.grow()
	}
	i := (q.head + q.n) % len(q.dep)
	q.dep[i] = dep
	q.size[i] = int32(size)
	q.n++
	q.bytes += size
}

func (q *DropTail) grow() {
	c := max(64, 2*len(q.dep))
	dep := make([]int64, c)
	size := make([]int32, c)
	for i := 0; i < q.n; i++ {
		j := (q.head + i) % len(q.dep)
		dep[i], size[i] = q.dep[j], q.size[j]
	}
	q.dep, q.size, q.head = dep, size, 0
}

// Bytes returns the bytes in the queue.
func (q *DropTail) Bytes() int { return q.bytes }

// Len returns the number of packets in the queue.
func (q *DropTail) Len() int { return q.n }
