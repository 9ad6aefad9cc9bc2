package energy

import (
	"fmt"
	"sort"
	"time"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

// Initial is the radio state assumed at a window's start.
type Initial string

// Initial states. StartConnected models a radio promoted just before the window (seed 000 section 3.3 pinged
// over LTE before every load): its tail clock starts at the window's start. StartObserved takes the radio
// where the link's earlier packets left it (StartAt) and charges a window the energy its own packets add to
// that state (SimulateFrom); Timeline and Simulate, which see only the window's packets, cannot start there.
const (
	StartIdle      Initial = "idle"
	StartConnected Initial = "connected"
	StartObserved  Initial = "observed"
)

// ParseInitial checks an initial state name.
func ParseInitial(s string) (Initial, error) {
	switch Initial(s) {
	case StartIdle, StartConnected, StartObserved:
		return Initial(s), nil
	}
	return "", fmt.Errorf("initial radio state %q: want %q, %q or %q", s, StartIdle, StartConnected, StartObserved)
}

// Start is a radio's state at a window's start: the radio entered State at Since (unix ns, at or before the
// window's start) and has run State's schedule (radio.Model.Schedule) since, so a tail that began before the
// window goes on with the time it has left.
type Start struct {
	State radio.State
	Since int64
}

// StartAt is the state at t of a radio that carried the packets of pkts (sorted by time) that come before t:
// the model's state machine (radio.Model.Step) walked through them from idle. Packets at or after t are not
// looked at. The walk begins after the last silence of at least m.Drain() before t: whatever came earlier,
// the radio was idle by then.
func StartAt(m *radio.Model, pkts []radio.Packet, t int64) Start {
	hi := sort.Search(len(pkts), func(i int) bool { return pkts[i].T >= t })
	drain := int64(m.Drain())
	if hi == 0 || t-pkts[hi-1].T >= drain {
		return Start{State: radio.Idle, Since: t}
	}
	lo := hi - 1
	for lo > 0 && pkts[lo].T-pkts[lo-1].T < drain {
		lo--
	}
	s := Start{State: radio.Idle, Since: pkts[lo].T}
	for _, p := range pkts[lo:hi] {
		if next, reset := m.Step(s.State, time.Duration(p.T-s.Since), &p); reset {
			s = Start{State: next, Since: p.T}
		}
	}
	return s
}

// Window is a load's traffic window in unix nanoseconds. Packets in [Start, End] are replayed; energy is
// counted over [Start, End + Model.Drain()] so that the last packet's promotion and tail are complete.
// Packets outside [Start, End] belong to other loads and are skipped.
type Window struct {
	Start, End int64
}

// Segment is a stretch of time in one state.
type Segment struct {
	State      radio.State
	Name       string
	Start, End int64   // unix ns
	PowerMW    float64 // mean power, without the connected state's throughput term
}

// Seconds is the segment's length.
func (s Segment) Seconds() float64 { return float64(s.End-s.Start) / 1e9 }

// Trace is a replayed packet timeline.
type Trace struct {
	Model       *radio.Model
	Initial     Initial
	From        Start // the radio's state at Start
	Start, Stop int64
	Segments    []Segment
	// Carried are the packets charged the throughput term, at the time they were carried (a packet that
	// arrived during a promotion is carried at its end). Packets served in a tail phase (3G FACH) are not.
	Carried    []radio.Packet
	Packets    int // replayed
	Ignored    int // outside the window
	Promotions int // promotions started in the window
}

// Timeline replays pkts (sorted by time, as ParseTrace returns them) through m's state machine, from the
// named initial state at the window's start.
func Timeline(m *radio.Model, pkts []radio.Packet, w Window, init Initial) (*Trace, error) {
	if _, err := ParseInitial(string(init)); err != nil {
		return nil, err
	}
	s := Start{State: radio.Idle, Since: w.Start}
	switch init {
	case StartConnected:
		s.State = radio.Connected
	case StartObserved:
		return nil, fmt.Errorf("initial radio state %q needs the packets before the window: use StartAt and TimelineFrom", init)
	}
	tr, err := TimelineFrom(m, pkts, w, s)
	if err != nil {
		return nil, err
	}
	tr.Initial = init
	return tr, nil
}

// TimelineFrom replays pkts (sorted by time) through m's state machine from s. Its Initial is StartObserved;
// Timeline names the states it starts from.
func TimelineFrom(m *radio.Model, pkts []radio.Packet, w Window, s Start) (*Trace, error) {
	if w.End < w.Start {
		return nil, fmt.Errorf("window ends (%d) before it starts (%d)", w.End, w.Start)
	}
	if s.Since > w.Start {
		return nil, fmt.Errorf("radio state entered at %d, after the window's start %d", s.Since, w.Start)
	}
	if !m.Valid(s.State) {
		return nil, fmt.Errorf("radio state %+v is not a state of model %q", s.State, m.ID)
	}
	tr := &Trace{Model: m, Initial: StartObserved, From: s, Start: w.Start, Stop: w.End + int64(m.Drain())}
	anchor, anchorT := s.State, s.Since
	first := radio.State{Kind: radio.KindTail, Phase: 0}
	cursor := w.Start
	for i, p := range pkts {
		if i > 0 && p.T < pkts[i-1].T {
			return nil, fmt.Errorf("packet %d at %d comes before packet %d at %d: sort the timeline first", i, p.T, i-1, pkts[i-1].T)
		}
		if p.T < w.Start || p.T > w.End {
			tr.Ignored++
			continue
		}
		tr.Packets++
		cur, _ := m.Demote(anchor, time.Duration(p.T-anchorT))
		// The radio was in its first tail phase and this packet brings it back: that gap was active time.
		gapActive := cur == first && (anchor.Kind == radio.KindConnected || anchor.Kind == radio.KindPromotion)
		tr.silence(anchor, anchorT, cursor, p.T, gapActive)
		cursor = p.T
		next, reset := m.Wake(cur, p)
		if reset {
			anchor, anchorT = next, p.T
			if next.Kind == radio.KindPromotion {
				tr.Promotions++
			}
		}
		switch next.Kind {
		case radio.KindConnected:
			tr.Carried = append(tr.Carried, p)
		case radio.KindPromotion:
			_, left := m.Demote(anchor, time.Duration(p.T-anchorT))
			c := p
			c.T = p.T + int64(left)
			tr.Carried = append(tr.Carried, c)
		}
	}
	tr.silence(anchor, anchorT, cursor, tr.Stop, false)
	return tr, nil
}

// silence appends the segments of [from, to) during which no packet arrived, the radio having entered
// anchor at anchorT <= from.
func (tr *Trace) silence(anchor radio.State, anchorT, from, to int64, firstTailActive bool) {
	m := tr.Model
	t := anchorT
	for _, pc := range m.Schedule(anchor) {
		end := t + int64(pc.Dur)
		s := pc.State
		if firstTailActive && s == (radio.State{Kind: radio.KindTail, Phase: 0}) {
			s = radio.Connected
		}
		tr.add(s, max(t, from), min(end, to))
		t = end
		if t >= to {
			return
		}
	}
	tr.add(radio.Idle, max(t, from), to)
}

func (tr *Trace) add(s radio.State, from, to int64) {
	if from >= to {
		return
	}
	if n := len(tr.Segments); n > 0 && tr.Segments[n-1].State == s && tr.Segments[n-1].End == from {
		tr.Segments[n-1].End = to
		return
	}
	tr.Segments = append(tr.Segments, Segment{State: s, Name: tr.Model.Name(s), Start: from, End: to, PowerMW: tr.Model.PowerMW(s)})
}

// dataJ is the throughput term's energy for one carried packet: alpha [mW per Mbit/s] * Mbit = mJ.
func dataJ(m *radio.Model, p radio.Packet) float64 {
	a := m.Connected.AlphaDownMWPerMbps
	if p.Up {
		a = m.Connected.AlphaUpMWPerMbps
	}
	return a * float64(p.Bytes) * 8 / 1e6 / 1e3
}

// Amount is energy and time spent.
type Amount struct {
	J float64 `json:"j"`
	S float64 `json:"s"`
}

// Result is a window's radio energy.
type Result struct {
	Model      string                    `json:"model"`
	Technology string                    `json:"technology"`
	Initial    Initial                   `json:"initial_state"`
	StartState string                    `json:"start_state"` // the model's name of the state at Start
	Start      int64                     `json:"start_unix_ns"`
	Stop       int64                     `json:"stop_unix_ns"`
	TotalJ     float64                   `json:"total_j"` // promotion + active + tail; idle excluded
	Category   map[radio.Category]Amount `json:"category"`
	State      map[string]Amount         `json:"state"`
	DataJ      float64                   `json:"data_j"` // throughput term, part of the active category
	Promotions int                       `json:"promotions"`
	Packets    int                       `json:"packets"`
	Ignored    int                       `json:"ignored"`
	BytesUp    int64                     `json:"bytes_up"`
	BytesDown  int64                     `json:"bytes_down"`
	// AnywayJ is the energy the radio would have spent in the window without the window's packets (the rest of
	// a tail under way at its start), left out of the totals (SimulateFrom); 0 from idle or connected.
	AnywayJ float64 `json:"anyway_j"`
}

// NoTailJ is the energy without the tail category (seed 001's Fig. 4 left the tail out).
func (r Result) NoTailJ() float64 { return r.TotalJ - r.Category[radio.CatTail].J }

// Sum adds up a replayed trace.
func (tr *Trace) Sum() Result {
	m := tr.Model
	r := Result{
		Model: m.ID, Technology: m.Technology, Initial: tr.Initial, Start: tr.Start, Stop: tr.Stop,
		StartState: m.Name(tr.state()),
		Category:   map[radio.Category]Amount{}, State: map[string]Amount{},
		Promotions: tr.Promotions, Packets: tr.Packets, Ignored: tr.Ignored,
	}
	for _, c := range radio.Categories {
		r.Category[c] = Amount{}
	}
	for _, s := range tr.Segments {
		sec := s.Seconds()
		j := s.PowerMW * sec / 1e3
		c := r.Category[s.State.Category()]
		c.J += j
		c.S += sec
		r.Category[s.State.Category()] = c
		a := r.State[s.Name]
		a.J += j
		a.S += sec
		r.State[s.Name] = a
	}
	for _, p := range tr.Carried {
		r.DataJ += dataJ(m, p)
		if p.Up {
			r.BytesUp += int64(p.Bytes)
		} else {
			r.BytesDown += int64(p.Bytes)
		}
	}
	c := r.Category[radio.CatActive]
	c.J += r.DataJ
	r.Category[radio.CatActive] = c
	a := r.State[m.Connected.Name]
	a.J += r.DataJ
	r.State[m.Connected.Name] = a
	r.TotalJ = r.Category[radio.CatPromotion].J + r.Category[radio.CatActive].J + r.Category[radio.CatTail].J
	return r
}

// Simulate replays pkts over w and adds up the energy.
func Simulate(m *radio.Model, pkts []radio.Packet, w Window, init Initial) (Result, error) {
	tr, err := Timeline(m, pkts, w, init)
	if err != nil {
		return Result{}, err
	}
	return tr.Sum(), nil
}

// SimulateFrom is the energy pkts add over w to a radio that starts at s: the replay's energy less what the
// radio would have spent over the same span without them, which is the rest of a tail under way at the
// window's start (AnywayJ; the packets that started that tail paid for all of it). A radio still connected
// pays no promotion, and a tail is charged only as far as the window's packets extend it, as the host's model
// charges a transfer (native-host/model). From idle it equals Simulate's StartIdle.
func SimulateFrom(m *radio.Model, pkts []radio.Packet, w Window, s Start) (Result, error) {
	tr, err := TimelineFrom(m, pkts, w, s)
	if err != nil {
		return Result{}, err
	}
	anyway, err := TimelineFrom(m, nil, w, s)
	if err != nil {
		return Result{}, err
	}
	r, a := tr.Sum(), anyway.Sum()
	// Idle time stays the replay's: it is in no total, and a negative idle time would only confuse.
	idle := m.Name(radio.Idle)
	for c, x := range a.Category {
		if c == radio.CatIdle {
			continue
		}
		y := r.Category[c]
		y.J -= x.J
		y.S -= x.S
		r.Category[c] = y
	}
	for name, x := range a.State {
		if name == idle {
			continue
		}
		y := r.State[name]
		y.J -= x.J
		y.S -= x.S
		r.State[name] = y
	}
	r.TotalJ -= a.TotalJ
	r.AnywayJ = a.TotalJ
	return r, nil
}

// state is the radio's state at the trace's start.
func (tr *Trace) state() radio.State {
	s, _ := tr.Model.Demote(tr.From.State, time.Duration(tr.Start-tr.From.Since))
	return s
}

// Sample is the mean power over one bin starting at T.
type Sample struct {
	T       int64
	PowerMW float64
}

// PowerSeries is the trace's power curve in bins of width bin (the last may be shorter), idle excluded as
// in the totals. Its integral equals Result.TotalJ.
func (tr *Trace) PowerSeries(bin time.Duration) ([]Sample, error) {
	if bin <= 0 {
		return nil, fmt.Errorf("bin width %v: want > 0", bin)
	}
	n := int((tr.Stop - tr.Start + int64(bin) - 1) / int64(bin))
	if n <= 0 {
		return nil, nil
	}
	if n > 10_000_000 {
		return nil, fmt.Errorf("%d bins of %v: too many, pick a wider bin", n, bin)
	}
	mj := make([]float64, n) // energy per bin in mJ
	b := int64(bin)
	for _, s := range tr.Segments {
		if s.State.Kind == radio.KindIdle {
			continue
		}
		for i := int((s.Start - tr.Start) / b); i < n; i++ {
			lo := tr.Start + int64(i)*b
			hi := min(lo+b, tr.Stop)
			if lo >= s.End {
				break
			}
			ov := min(hi, s.End) - max(lo, s.Start)
			if ov > 0 {
				mj[i] += s.PowerMW * float64(ov) / 1e9
			}
		}
	}
	for _, p := range tr.Carried {
		i := min(int((p.T-tr.Start)/b), n-1)
		mj[i] += dataJ(tr.Model, p) * 1e3
	}
	out := make([]Sample, n)
	for i := range mj {
		lo := tr.Start + int64(i)*b
		w := float64(min(lo+b, tr.Stop)-lo) / 1e9
		out[i] = Sample{T: lo, PowerMW: mj[i] / w}
	}
	return out, nil
}
