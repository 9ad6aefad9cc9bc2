package model

import (
	"math"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

var inf = math.Inf(1)

// link is what the transfer curve needs of a path: RTT in seconds and the rate cap in bytes per second.
type link struct {
	rtt, rate float64
}

// curve is B(t) for conns parallel TCP flows whose first response byte can arrive at start: slow start from their
// initial windows, doubling per RTT, each round's windows arriving at the link rate, until a round's windows fill
// the bandwidth-delay product; from then on the link rate.
func curve(l link, start float64, tr *Transport, conns float64) plf {
	var f plf
	f.t = make([]float64, 0, 8)
	f.b = make([]float64, 0, 8)
	f.add(0, 0)
	if start > 0 {
		f.add(start, 0)
	}
	bdp := l.rate * l.rtt
	w := tr.InitialWindow * tr.MSSBytes * conns
	ts, b := start, 0.0
	for k := 0; k < tr.MaxSlowStartRs && w < bdp; k++ {
		// The window arrives back to back at the link rate, then the sender waits for the ACKs.
		f.add(ts+w/l.rate, b+w)
		b += w
		ts += l.rtt
		f.add(ts, b)
		w *= 2
	}
	f.tail = l.rate
	return f
}

// firstByte is when a new HTTPS connection's first response byte arrives, counted from its SYN.
func firstByte(rtt float64, tr *Transport) float64 {
	return (tr.HandshakeRTTs + tr.TLSRTTs + tr.RequestRTTs) * rtt
}

// radioState is where the cellular radio is, as the model needs it.
type radioState struct {
	model *radio.Model
	// delay before the radio can send (promotion still to come or under way), seconds
	delay float64
	// promotionJ is the energy of a promotion this transfer causes (0 when the radio is already awake or promoting)
	promotionJ float64
	// tailOffset is how far into its tail the radio already is (seconds); the tail it would run anyway is the rest
	tailOffset float64
	// wakes: false when the radio is already connected, so only the tail is extended
	wakes bool
	// fromIdle: no tail is under way, so the transfer pays the whole tail
	fromIdle bool
	name     string
}

// stateOf places the RRC state in the technology's power model. An unknown or missing state counts as idle,
// the costly assumption.
func stateOf(m *radio.Model, r *RRC) (radioState, bool) {
	idle := radioState{model: m, delay: m.Promotion.DurationMS / 1000,
		promotionJ: m.Promotion.DurationMS * m.Promotion.PowerMW / 1e6, wakes: true, fromIdle: true, name: "idle"}
	if r == nil {
		return idle, false
	}
	since := float64(r.SinceMS) / 1000
	switch r.State {
	case "idle":
		return idle, true
	case m.Promotion.Name:
		return radioState{model: m, delay: math.Max(0, m.Promotion.DurationMS/1000-since), name: r.State}, true
	case m.Connected.Name:
		return radioState{model: m, name: r.State}, true
	}
	off := 0.0
	for _, ph := range m.Tail {
		if ph.Wake != nil && r.State == ph.Wake.Name {
			return radioState{model: m, delay: math.Max(0, ph.Wake.PromotionMS/1000-since), name: r.State}, true
		}
		if r.State == ph.Name {
			s := radioState{model: m, tailOffset: off + math.Min(since, ph.DurationMS/1000), name: r.State}
			if ph.Wake != nil {
				// 3G FACH: a transfer larger than the RLC thresholds promotes to DCH first.
				s.delay = ph.Wake.PromotionMS / 1000
				s.promotionJ = ph.Wake.PromotionMS * ph.Wake.PowerMW / 1e6
				s.wakes = true
			}
			return s, true
		}
		off += ph.DurationMS / 1000
	}
	return idle, false
}

// weightedState is a radio state and its probability.
type weightedState struct {
	s radioState
	w float64
}

// radioStates is the radio's state as the model weighs it: the one state reported, or each state of the spread
// (RRC.Spread) with its probability. A spread state the radio model lacks leaves the spread aside for the sure,
// least awake state.
func radioStates(m *radio.Model, r *RRC, notes *[]string) []weightedState {
	rs, known := stateOf(m, r)
	if !known {
		*notes = append(*notes, "RRC state unknown, assumed idle")
		return []weightedState{{rs, 1}}
	}
	if len(r.Spread) == 0 {
		return []weightedState{{rs, 1}}
	}
	out := make([]weightedState, 0, len(r.Spread))
	for _, sh := range r.Spread {
		s, ok := stateOf(m, &RRC{Tech: r.Tech, State: sh.State, SinceMS: sh.SinceMS})
		if !ok {
			*notes = append(*notes, "RRC spread names a state the radio model lacks ("+sh.State+"): taken as "+rs.name)
			return []weightedState{{rs, 1}}
		}
		if sh.P > 0 {
			out = append(out, weightedState{s, sh.P})
		}
	}
	if len(out) == 0 {
		return []weightedState{{rs, 1}}
	}
	return out
}

// tailExtensionJ is the tail energy the transfer adds: the whole tail from idle, otherwise the whole tail minus
// the part of the current one the radio would have run anyway.
func (r *radioState) tailExtensionJ() float64 {
	if r.fromIdle {
		return tailJ(r.model, 0)
	}
	return tailJ(r.model, 0) - tailJ(r.model, r.tailOffset)
}

// tailJ is the tail's energy from offset (seconds into the tail) to its end.
func tailJ(m *radio.Model, offset float64) float64 {
	var j, start float64
	for _, ph := range m.Tail {
		d := ph.DurationMS / 1000
		if end := start + d; end > offset {
			j += ph.AvgPowerMW() / 1000 * (end - math.Max(start, offset))
		}
		start += d
	}
	return j
}

// activeW is the connected state's power at a downlink rate in bits per second.
func activeW(m *radio.Model, downBps float64) float64 {
	return (m.Connected.BetaMW + m.Connected.AlphaDownMWPerMbps*downBps/1e6) / 1000
}

// RRCStates lists the radio states a decision's RRC input may name for the technology tech ("lte", "3g"): idle,
// the promotion, the connected state and each tail phase (with a phase's own promotion). ok is false when the
// model has no radio of that technology. The command line checks --rrc against it rather than let an unknown
// state pass as idle.
func (p *Params) RRCStates(tech string) (states []string, ok bool) {
	m, ok := p.Radios[tech]
	if !ok || tech == radio.WiFi {
		return nil, false
	}
	states = []string{"idle", m.Promotion.Name, m.Connected.Name}
	for _, ph := range m.Tail {
		states = append(states, ph.Name)
		if ph.Wake != nil {
			states = append(states, ph.Wake.Name)
		}
	}
	return states, true
}
