//go:build linux

package linkem

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// bufSize holds any packet a TUN device with MTU 1500 can produce; a read
// that fills the buffer completely is treated as an oversized packet.
const bufSize = 2048

// DefaultPoolPackets is the number of packet buffers per direction. It
// bounds the packets held by the emulated link (queue plus delay line): at
// 50 Mbit/s and 100 ms of delay that is about 420 full-size packets.
const DefaultPoolPackets = 4096

// earlyNs is how early a packet may be written instead of arming the timer:
// less than the timer's own wake-up latency (~20-40 us), so it lets packets
// due together go out in one batch without making any of them noticeably
// early.
const earlyNs = 10_000

// Config describes one emulated link between a client-side and a
// router-side TUN device.
type Config struct {
	Name     string // label for errors and stats, e.g. "wlan0"
	ClientFd int    // non-blocking TUN fd in the client namespace
	RouterFd int    // non-blocking TUN fd in the router namespace
	Down, Up Params // router -> client and client -> router
	Seed     uint64 // seed for random loss (the two directions derive their own)
	Timeline *Timeline
	// PoolPackets overrides DefaultPoolPackets when > 0.
	PoolPackets int
}

// DirStats counts what happened to one direction's packets.
type DirStats struct {
	InPackets   uint64 `json:"in_packets"`
	InBytes     uint64 `json:"in_bytes"`
	Lost        uint64 `json:"lost"`          // random loss
	Dropped     uint64 `json:"dropped"`       // queue full
	PoolDrops   uint64 `json:"pool_drops"`    // no free buffer
	Oversize    uint64 `json:"oversize"`      // larger than a buffer
	OutPackets  uint64 `json:"out_packets"`   // written to the other side
	OutBytes    uint64 `json:"out_bytes"`     // IP bytes written
	WriteErrors uint64 `json:"write_errors"`  // write to the other TUN failed
	QueueBytes  int64  `json:"queue_bytes"`   // in the drop-tail queue at the last arrival
	InFlight    uint64 `json:"in_flight"`     // packets taken in and not yet written out: queued or delayed now
	MaxLateNs   int64  `json:"max_late_ns"`   // worst delivery lateness seen
	IdleNs      int64  `json:"idle_ns"`       // time the rate stage had nothing to send (constant rate only)
	LateOver1ms uint64 `json:"late_over_1ms"` // deliveries more than 1 ms late
	// The emulator's own clock: what it scheduled, apart from how late the machine let it deliver.
	SendNs int64 `json:"send_ns"` // time the rate stage spent sending the packets admitted so far (constant rate only)
	HeldNs int64 `json:"held_ns"` // scheduled time in the link (queue, serialization, delay) of the packets written
	LateNs int64 `json:"late_ns"` // total lateness of the packets written, past their scheduled delivery
}

// Stats are a link's counters.
type Stats struct {
	Down DirStats `json:"down"`
	Up   DirStats `json:"up"`
}

// Link moves packets between two TUN devices through two emulated
// directions. Create it with Start; stop it with Close.
type Link struct {
	name     string
	files    []*os.File
	dirs     [2]*direction // down, up
	stop     chan struct{}
	wg       sync.WaitGroup
	closeErr error
	once     sync.Once
}

type packet struct {
	buf []byte
	n   int
	at  int64 // scheduled delivery
	arr int64 // arrival
}

type direction struct {
	tag       byte // 'd' or 'u'
	src       *os.File
	dstFd     int
	shaper    *Shaper
	pending   atomic.Pointer[Params]
	rewind    atomic.Pointer[int64] // a trace offset (ns) to rewind to at the next packet
	queue     chan *packet          // FIFO in delivery order
	free      chan *packet
	scratch   []byte
	timerFd   int
	timer     *os.File
	timeline  *Timeline
	logOnRead bool // uplink: logged when taken from the client

	in, inBytes, lost, dropped, poolDrops, oversize atomic.Uint64
	out, outBytes, writeErrs, lateOver1ms           atomic.Uint64
	queueBytes, maxLate, idle, busy, sending        atomic.Int64
	held, lateSum                                   atomic.Int64
	// written is bumped before and after the scheduler counts a written packet (a sequence lock), so that
	// stats reads out, outBytes, held and lateSum of the same packets: a per-packet mean from two snapshots is
	// then exact however often packets are written meanwhile.
	written atomic.Uint64
}

// Start validates cfg and starts moving packets. The Link owns the fds in
// cfg from then on, also when Start fails (it closes them).
func Start(cfg Config) (*Link, error) {
	pool := cfg.PoolPackets
	if pool <= 0 {
		pool = DefaultPoolPackets
	}
	l := &Link{name: cfg.Name, stop: make(chan struct{})}
	client := os.NewFile(uintptr(cfg.ClientFd), cfg.Name+"-client")
	router := os.NewFile(uintptr(cfg.RouterFd), cfg.Name+"-router")
	l.files = append(l.files, client, router)
	if err := cfg.Down.Validate(); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("%s down: %w", cfg.Name, err)
	}
	if err := cfg.Up.Validate(); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("%s up: %w", cfg.Name, err)
	}
	now := Now()
	down := cfg.Down
	down.DelayFirst = true
	up := cfg.Up
	up.DelayFirst = false
	var err error
	if l.dirs[0], err = newDirection('d', router, cfg.ClientFd, down, cfg.Seed*2+1, now, pool, cfg.Timeline); err != nil {
		l.closeFiles()
		return nil, err
	}
	l.files = append(l.files, l.dirs[0].timer)
	if l.dirs[1], err = newDirection('u', client, cfg.RouterFd, up, cfg.Seed*2+2, now, pool, cfg.Timeline); err != nil {
		l.closeFiles()
		return nil, err
	}
	l.files = append(l.files, l.dirs[1].timer)
	for _, d := range l.dirs {
		l.wg.Add(2)
		go func() { defer l.wg.Done(); d.read(l.stop) }()
		go func() { defer l.wg.Done(); d.schedule(l.stop) }()
	}
	return l, nil
}

func newDirection(tag byte, src *os.File, dstFd int, p Params, seed uint64, now int64, pool int, tl *Timeline) (*direction, error) {
	sh, err := NewShaper(p, seed, now)
	if err != nil {
		return nil, err
	}
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	d := &direction{
		tag: tag, src: src, dstFd: dstFd, shaper: sh,
		queue: make(chan *packet, pool), free: make(chan *packet, pool),
		scratch: make([]byte, bufSize),
		timerFd: tfd, timer: os.NewFile(uintptr(tfd), "timerfd"),
		timeline: tl, logOnRead: tag == 'u',
	}
	slab := make([]byte, pool*bufSize)
	pkts := make([]packet, pool)
	for i := range pkts {
		pkts[i].buf = slab[i*bufSize : (i+1)*bufSize : (i+1)*bufSize]
		d.free <- &pkts[i]
	}
	return d, nil
}

// read takes packets from the source TUN device, decides their fate and
// queues the survivors for the scheduler.
func (d *direction) read(stop <-chan struct{}) {
	for {
		var p *packet
		select {
		case p = <-d.free:
		default:
		}
		buf := d.scratch
		if p != nil {
			buf = p.buf
		}
		n, err := d.src.Read(buf)
		if err != nil {
			select {
			case <-stop:
				return
			default:
			}
			if p != nil {
				d.free <- p
			}
			if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed) {
				return
			}
			// A TUN read fails only for transient reasons (e.g. EINTR);
			// back off briefly so a persistent error cannot spin a core.
			time.Sleep(time.Millisecond)
			continue
		}
		now := Now()
		d.in.Add(1)
		d.inBytes.Add(uint64(n))
		if np := d.pending.Swap(nil); np != nil {
			// Validated by SetParams, so this cannot fail.
			_ = d.shaper.SetParams(*np)
		}
		if off := d.rewind.Swap(nil); off != nil {
			d.shaper.Rewind(now, *off)
		}
		if p == nil {
			d.poolDrops.Add(1)
			continue
		}
		if n >= bufSize {
			d.oversize.Add(1)
			d.free <- p
			continue
		}
		at, v := d.shaper.Admit(now, n)
		d.queueBytes.Store(int64(d.shaper.QueuedBytes()))
		d.idle.Store(d.shaper.idle)
		d.busy.Store(d.shaper.busy)
		d.sending.Store(d.shaper.Sending())
		switch v {
		case Dropped:
			// Never sent by the emulated radio: not on the timeline.
			d.dropped.Add(1)
			d.free <- p
			continue
		case Lost:
			d.lost.Add(1)
		}
		if d.logOnRead && d.timeline != nil {
			d.timeline.Log(d.tag, n)
		}
		if v == Lost {
			d.free <- p
			continue
		}
		p.n, p.at, p.arr = n, at, now
		d.queue <- p // never blocks: the channel holds every buffer
	}
}

// schedule writes each queued packet to the destination at its delivery
// time. Delivery times never decrease, so the head of the FIFO is always the
// next deadline.
func (d *direction) schedule(stop <-chan struct{}) {
	var tick [8]byte
	for {
		var p *packet
		select {
		case p = <-d.queue:
		case <-stop:
			return
		}
		if p.at-Now() > earlyNs {
			its := unix.ItimerSpec{Value: unix.NsecToTimespec(p.at)}
			if err := unix.TimerfdSettime(d.timerFd, unix.TFD_TIMER_ABSTIME, &its, nil); err != nil {
				panic("linkem: timerfd_settime: " + err.Error())
			}
			if _, err := d.timer.Read(tick[:]); err != nil {
				// Only Close sets a deadline on the timer.
				return
			}
		}
		if _, err := unix.Write(d.dstFd, p.buf[:p.n]); err != nil {
			d.writeErrs.Add(1)
		} else {
			late := Now() - p.at
			d.written.Add(1)
			d.held.Add(p.at - p.arr)
			if late > 0 {
				d.lateSum.Add(late)
				if late > 1e6 {
					d.lateOver1ms.Add(1)
				}
				if late > d.maxLate.Load() {
					d.maxLate.Store(late)
				}
			}
			d.out.Add(1)
			d.outBytes.Add(uint64(p.n))
			d.written.Add(1)
			if !d.logOnRead && d.timeline != nil {
				d.timeline.Log(d.tag, p.n)
			}
		}
		d.free <- p
	}
}

func (d *direction) stats() DirStats {
	// The written packets' counters as one (see written).
	var out, outBytes uint64
	var held, late int64
	for {
		seq := d.written.Load()
		if seq%2 == 1 {
			runtime.Gosched()
			continue
		}
		out, outBytes, held, late = d.out.Load(), d.outBytes.Load(), d.held.Load(), d.lateSum.Load()
		if d.written.Load() == seq {
			break
		}
	}
	// The outcomes first, then the arrivals: a packet counted in between is counted as in flight, never as
	// gone before it was.
	werr := d.writeErrs.Load()
	gone := d.lost.Load() + d.dropped.Load() + d.poolDrops.Load() + d.oversize.Load() + out + werr
	in := d.in.Load()
	var inFlight uint64
	if in > gone {
		inFlight = in - gone
	}
	return DirStats{InFlight: inFlight,
		InPackets: in, InBytes: d.inBytes.Load(), Lost: d.lost.Load(),
		Dropped: d.dropped.Load(), PoolDrops: d.poolDrops.Load(), Oversize: d.oversize.Load(),
		OutPackets: out, OutBytes: outBytes, WriteErrors: werr,
		QueueBytes: d.queueBytes.Load(), MaxLateNs: d.maxLate.Load(), LateOver1ms: d.lateOver1ms.Load(),
		IdleNs: IdleAt(d.idle.Load(), d.busy.Load(), Now()),
		SendNs: d.sending.Load(), HeldNs: held, LateNs: late,
	}
}

// Name returns the link's label.
func (l *Link) Name() string { return l.name }

// Stats returns the link's counters.
func (l *Link) Stats() Stats { return Stats{Down: l.dirs[0].stats(), Up: l.dirs[1].stats()} }

// SetParams changes both directions' parameters from their next packet on.
func (l *Link) SetParams(down, up Params) error {
	if err := down.Validate(); err != nil {
		return fmt.Errorf("%s down: %w", l.name, err)
	}
	if err := up.Validate(); err != nil {
		return fmt.Errorf("%s up: %w", l.name, err)
	}
	down.DelayFirst, up.DelayFirst = true, false
	l.dirs[0].pending.Store(&down)
	l.dirs[1].pending.Store(&up)
	return nil
}

// Rewind puts each direction's trace at offset, and restarts its random loss for that offset, when its next packet
// arrives (Shaper.Rewind): a page load that starts after the call meets the trace from offset on, however long the
// browser took to start, and the same losses as any other load rewound to offset.
func (l *Link) Rewind(offset time.Duration) {
	o := int64(offset)
	for _, d := range l.dirs {
		d.rewind.Store(&o)
	}
}

// Close stops the goroutines, drops packets still in flight and closes the
// TUN devices (which removes them). It is safe to call more than once.
func (l *Link) Close() error {
	l.once.Do(func() {
		close(l.stop)
		past := time.Unix(1, 0)
		for _, d := range l.dirs {
			d.src.SetReadDeadline(past)
			d.timer.SetReadDeadline(past)
		}
		l.wg.Wait()
		l.closeErr = l.closeFiles()
	})
	return l.closeErr
}

func (l *Link) closeFiles() error {
	var errs []error
	for _, f := range l.files {
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
