package rrc

import (
	"fmt"
	"time"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

// SourceInferred is the RRC object's source for states this package infers.
const SourceInferred = "inferred"

// Info is the PROTOCOL.md RRC object (in status).
type Info struct {
	Interface string `json:"interface"`
	Tech      string `json:"tech"`
	State     string `json:"state"`
	SinceMS   int64  `json:"since_ms"` // unix ms at which the radio entered State
	Source    string `json:"source"`
	// Spread is set while the machine is unsure of the state (Resume after packets it did not see): the states
	// the radio may be in, each with its probability; State is then the least awake of them.
	Spread []Share `json:"spread,omitempty"`
}

// Share is one state the radio may be in, with its probability (Info.Spread).
type Share struct {
	State   string  `json:"state"`
	SinceMS int64   `json:"since_ms"` // unix ms at which the radio entered State
	P       float64 `json:"p"`
}

// Counters is one sample of an interface's counters.
type Counters struct {
	RxPackets, TxPackets uint64
	RxBytes, TxBytes     uint64
}

// Machine is the inferred state of one cellular interface. It is not safe for concurrent use.
type Machine struct {
	model   *radio.Model
	iface   string
	anchor  radio.State // the state entered at the last reset
	anchorT time.Time
	name    string    // the reported state as last evaluated
	since   time.Time // when the radio entered it
	last    Counters
	lastT   time.Time
	primed  bool
	// unsure: packets crossed the interface at some unseen time in [gapFrom, gapTo] (Resume); the state before
	// them is gapAnchor at gapAnchorT. A packet seen later ends it: the radio's state then no longer depends on
	// when the unseen ones came.
	unsure         bool
	gapFrom, gapTo time.Time
	gapAnchor      radio.State
	gapAnchorT     time.Time
}

// New returns a machine for iface that starts idle at start. Only cellular models (LTE, 3G) have RRC states.
func New(m *radio.Model, iface string, start time.Time) (*Machine, error) {
	if m == nil {
		return nil, fmt.Errorf("rrc: no model")
	}
	if m.Technology != radio.LTE && m.Technology != radio.ThreeG {
		return nil, fmt.Errorf("rrc: model %q is %s; want %s or %s", m.ID, m.Technology, radio.LTE, radio.ThreeG)
	}
	return &Machine{model: m, iface: iface, anchor: radio.Idle, anchorT: start, name: "idle", since: start}, nil
}

// Observe takes one counter sample taken at t (samples in time order). The first sample only sets the
// baseline. Counters that go backwards (an interface re-created) reset the baseline without activity.
func (x *Machine) Observe(t time.Time, c Counters) {
	prev, prevT, primed := x.last, x.lastT, x.primed
	x.last, x.lastT, x.primed = c, t, true
	if !primed || c.RxPackets < prev.RxPackets || c.TxPackets < prev.TxPackets {
		x.eval(t)
		return
	}
	dRx, dTx := c.RxPackets-prev.RxPackets, c.TxPackets-prev.TxPackets
	if dRx > 0 || dTx > 0 {
		x.unsure = false
	}
	// Packets of an interval count at its end. When the interval is longer than half the first tail phase (the
	// sampler was late: a loaded machine, a suspended process), they may have come at any time in it, and a
	// single event at the end would let the radio demote inside an interval that carried traffic; so they are
	// spread over the interval, one event per half phase, as far as there are packets to spread (a lone packet
	// after a long gap stays one event).
	events := uint64(1)
	if step := x.model.Tail[0].Duration() / 2; step > 0 && t.Sub(prevT) > step {
		events = min(uint64(t.Sub(prevT)/step)+1, max(dRx, dTx))
	}
	for i := uint64(1); i <= events; i++ {
		at := t
		if events > 1 {
			at = prevT.Add(t.Sub(prevT) * time.Duration(i) / time.Duration(events))
		}
		// One packet per direction with the interval's mean size: enough for the 3G FACH thresholds, which
		// are per packet in the model too.
		var pkts []radio.Packet
		if dRx > 0 {
			pkts = append(pkts, radio.Packet{T: at.UnixNano(), Bytes: meanSize(c.RxBytes, prev.RxBytes, dRx)})
		}
		if dTx > 0 {
			pkts = append(pkts, radio.Packet{T: at.UnixNano(), Up: true, Bytes: meanSize(c.TxBytes, prev.TxBytes, dTx)})
		}
		for j := range pkts {
			x.packet(at, &pkts[j])
		}
	}
	x.eval(t)
}

// LastSample is the time of the last counter sample (zero before the first).
func (x *Machine) LastSample() time.Time { return x.lastT }

// Packet feeds one packet seen at t directly (for callers that see packets rather than counters).
func (x *Machine) Packet(t time.Time, p radio.Packet) {
	x.packet(t, &p)
	x.eval(t)
}

func (x *Machine) packet(t time.Time, p *radio.Packet) {
	x.eval(t) // record the state the packet finds, so that its entry time is kept
	next, reset := x.model.Step(x.anchor, t.Sub(x.anchorT), p)
	if reset {
		x.anchor, x.anchorT = next, t
	}
}

func meanSize(now, before, n uint64) int {
	if now < before || n == 0 {
		return 0
	}
	return int((now - before) / n)
}

// State reports the radio's state at now (not before the last sample).
func (x *Machine) State(now time.Time) Info {
	x.eval(now)
	in := Info{Interface: x.iface, Tech: x.model.Technology, State: x.name, SinceMS: x.since.UnixMilli(), Source: SourceInferred}
	if x.unsure {
		in.Spread = x.spread(now)
	}
	return in
}

// spreadPoints is how many instants of the unseen gap spread evaluates: each carries 1/spreadPoints of the
// probability, finer than the model's other uncertainties (three rate points per link).
const spreadPoints = 20

// spread is the distribution of the state at now over when, in the gap, the unseen packets' last one came. The
// counters say that packets crossed, not when: each instant of the gap is taken as likely as any other for the
// last of them. That errs on the idle side where several bursts came (the last of several is likelier late), as
// the least awake state (State) errs all the way. Nil when every instant leads to the same state.
func (x *Machine) spread(now time.Time) []Share {
	var names []string
	entered := map[string][]time.Time{}
	gap := x.gapTo.Sub(x.gapFrom)
	for k := range spreadPoints {
		u := x.gapFrom.Add(gap * time.Duration(2*k+1) / (2 * spreadPoints))
		anchor, anchorT := x.gapAnchor, x.gapAnchorT
		if next, reset := x.model.Step(anchor, u.Sub(anchorT), &radio.Packet{T: u.UnixNano(), Bytes: fullPacket}); reset {
			anchor, anchorT = next, u
		}
		name, t := walk(x.model, anchor, anchorT, now, anchorT)
		if _, ok := entered[name]; !ok {
			names = append(names, name)
		}
		entered[name] = append(entered[name], t)
	}
	if len(names) < 2 {
		return nil
	}
	out := make([]Share, len(names))
	for i, name := range names {
		ts := entered[name]
		// The middle instant of those that lead to a state stands for them.
		out[i] = Share{State: name, SinceMS: ts[len(ts)/2].UnixMilli(), P: float64(len(ts)) / spreadPoints}
	}
	return out
}

// Name is the reported name of the state at now, and when the radio entered it.
func (x *Machine) eval(now time.Time) {
	name, entered := x.at(now)
	if name != x.name {
		x.name, x.since = name, entered
	}
}

// at walks the anchor's schedule to the state at now and the time it began.
func (x *Machine) at(now time.Time) (string, time.Time) {
	return walk(x.model, x.anchor, x.anchorT, now, x.since)
}

// walk is the state at now of a radio that entered anchor at anchorT, and the time it began; idleSince is when
// an idle anchor's idleness began (the schedule of idle has no pieces).
func walk(m *radio.Model, anchor radio.State, anchorT, now, idleSince time.Time) (string, time.Time) {
	since := now.Sub(anchorT)
	if since < 0 {
		since = 0
	}
	t := anchorT
	for _, p := range m.Schedule(anchor) {
		if since < p.Dur {
			return report(m, p.State), t
		}
		since -= p.Dur
		t = t.Add(p.Dur)
	}
	if anchor == radio.Idle {
		return "idle", idleSince
	}
	return "idle", t
}

func report(m *radio.Model, s radio.State) string {
	if s.Kind == radio.KindTail && s.Phase == 0 {
		return m.Name(radio.Connected)
	}
	return m.Name(s)
}

// Mark is what a machine knows of the radio that a later one on the same interface can go on from (Resume):
// the state the radio entered at the last reset, when, and the interface's packet counters at the last sample.
// A host is started anew with each browser session, and its machine would otherwise start idle: the testbed's
// hosts, one per page load, found every decision "at the margin of RRC state idle" although most loads started
// inside the previous load's tail (e2e/RESULTS.md), and so charged each join a promotion and a whole tail.
type Mark struct {
	Kind      radio.Kind `json:"kind"`
	Phase     int        `json:"phase"`
	AtMS      int64      `json:"at_ms"`     // unix ms of the reset
	SampleMS  int64      `json:"sample_ms"` // unix ms of the last counter sample; 0: none
	RxPackets uint64     `json:"rx_packets"`
	TxPackets uint64     `json:"tx_packets"`
}

// Mark returns the machine's mark; ok is false before the first counter sample (nothing is known then).
func (x *Machine) Mark() (Mark, bool) {
	if !x.primed {
		return Mark{}, false
	}
	return Mark{Kind: x.anchor.Kind, Phase: x.anchor.Phase, AtMS: x.anchorT.UnixMilli(), SampleMS: x.lastT.UnixMilli(),
		RxPackets: x.last.RxPackets, TxPackets: x.last.TxPackets}, true
}

// Resume goes on from an earlier machine's mark, given this machine's first counter sample c taken at t: with
// the same packet counts no packet crossed the interface since, and the earlier schedule holds as it was;
// with others, packets crossed it some time after the mark's last sample, and the radio is at least as awake
// as one packet then would leave it (never less: the cost of a join is not underrated), and until the machine sees
// a packet itself, State spreads the radio over the states a packet at any instant of the gap would leave it in.
// A mark from the future,
// of another model's states, or with counters that went backwards (an interface re-created) is ignored: the
// machine stays as it started, idle. It reports whether the mark was taken.
func (x *Machine) Resume(m Mark, c Counters, t time.Time) bool {
	at, sample := time.UnixMilli(m.AtMS), time.UnixMilli(m.SampleMS)
	s := radio.State{Kind: m.Kind, Phase: m.Phase}
	if m.SampleMS <= 0 || at.After(t) || sample.After(t) || at.After(sample) || !x.model.Valid(s) ||
		c.RxPackets < m.RxPackets || c.TxPackets < m.TxPackets {
		return false
	}
	x.anchor, x.anchorT = s, at
	x.name, x.since = "idle", at
	if c.RxPackets != m.RxPackets || c.TxPackets != m.TxPackets {
		x.eval(sample)
		x.unsure, x.gapFrom, x.gapTo, x.gapAnchor, x.gapAnchorT = true, sample, t, s, at
		x.packet(sample, &radio.Packet{T: sample.UnixNano(), Bytes: fullPacket})
	}
	x.eval(t)
	return true
}

// fullPacket is the size of the packet Resume assumes: a full Ethernet frame, which wakes a 3G radio to DCH as a
// page's data would, not only to FACH.
const fullPacket = 1500
