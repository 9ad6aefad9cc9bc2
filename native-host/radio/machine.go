package radio

import (
	"fmt"
	"math"
	"time"
)

// Kind is the coarse class of an RRC state.
type Kind uint8

// Kinds of state.
const (
	KindIdle Kind = iota
	KindPromotion
	KindConnected
	KindTail
)

// State is one RRC state of a Model. Phase indexes Model.Tail for KindTail; for KindPromotion it is -1 for
// the promotion from idle and k for the wake promotion out of Tail[k].
type State struct {
	Kind  Kind
	Phase int
}

// Idle, Connected and the promotion from idle, as values.
var (
	Idle      = State{KindIdle, 0}
	Connected = State{KindConnected, 0}
	Promoting = State{KindPromotion, -1}
)

// Category groups states for energy accounting.
type Category string

// Categories; idle is reported but left out of totals.
const (
	CatPromotion Category = "promotion"
	CatActive    Category = "active"
	CatTail      Category = "tail"
	CatIdle      Category = "idle"
)

// Categories lists the categories in report order.
var Categories = []Category{CatPromotion, CatActive, CatTail, CatIdle}

// Category returns the accounting class of s.
func (s State) Category() Category {
	switch s.Kind {
	case KindPromotion:
		return CatPromotion
	case KindConnected:
		return CatActive
	case KindTail:
		return CatTail
	}
	return CatIdle
}

// Name returns the model's name for s ("idle" for idle).
func (m *Model) Name(s State) string {
	switch s.Kind {
	case KindPromotion:
		if s.Phase >= 0 {
			return m.Tail[s.Phase].Wake.Name
		}
		return m.Promotion.Name
	case KindConnected:
		return m.Connected.Name
	case KindTail:
		return m.Tail[s.Phase].Name
	}
	return "idle"
}

// PowerMW is the mean power in s, without the throughput term of the connected state.
func (m *Model) PowerMW(s State) float64 {
	switch s.Kind {
	case KindPromotion:
		if s.Phase >= 0 {
			return m.Tail[s.Phase].Wake.PowerMW
		}
		return m.Promotion.PowerMW
	case KindConnected:
		return m.Connected.BetaMW
	case KindTail:
		return m.Tail[s.Phase].AvgPowerMW()
	}
	return m.IdlePowerMW
}

// Valid says whether s is one of the model's states (a state read back from storage may not be).
func (m *Model) Valid(s State) bool {
	switch s.Kind {
	case KindIdle, KindConnected:
		return true
	case KindTail:
		return s.Phase >= 0 && s.Phase < len(m.Tail)
	case KindPromotion:
		return s.Phase == -1 || (s.Phase >= 0 && s.Phase < len(m.Tail) && m.Tail[s.Phase].Wake != nil)
	}
	return false
}

// forever stands for "until a packet comes" in the state machine.
const forever = time.Duration(math.MaxInt64)

// Piece is one state of a Schedule and how long it lasts without packets.
type Piece struct {
	State State
	Dur   time.Duration
}

// Schedule is what a radio does, without packets, after entering anchor: a list of states and how long
// each lasts; idle follows the last one.
func (m *Model) Schedule(anchor State) []Piece {
	var out []Piece
	from := 0
	switch anchor.Kind {
	case KindIdle:
		return nil
	case KindPromotion:
		d := msDur(m.Promotion.DurationMS)
		if anchor.Phase >= 0 {
			d = msDur(m.Tail[anchor.Phase].Wake.PromotionMS)
		}
		out = append(out, Piece{anchor, d})
	case KindTail:
		from = anchor.Phase
	}
	// Connected itself lasts no time without packets: right after a packet the first tail phase (LTE's
	// inactivity timer, 3G's DCH timer, WiFi's tail) is already running.
	for i := from; i < len(m.Tail); i++ {
		out = append(out, Piece{State{KindTail, i}, m.Tail[i].Duration()})
	}
	return out
}

// Demote returns the state a radio is in after `since` without packets from the moment it entered anchor,
// and how much longer it stays there without packets (a huge value in idle). since < 0 counts as 0.
func (m *Model) Demote(anchor State, since time.Duration) (State, time.Duration) {
	if !m.Valid(anchor) {
		panic(fmt.Sprintf("radio: state %+v is not a state of model %q", anchor, m.ID))
	}
	if since < 0 {
		since = 0
	}
	for _, p := range m.Schedule(anchor) {
		if since < p.Dur {
			return p.State, p.Dur - since
		}
		since -= p.Dur
	}
	return Idle, forever
}

// Packet is one packet seen on an interface.
type Packet struct {
	T     int64 // unix nanoseconds
	Up    bool  // uplink (sent by the device)
	Bytes int
}

// Wake returns where a packet moves a radio that is in cur. reset reports whether the new state's clock
// starts at this packet; it is false while a promotion runs (the packet waits for its end).
func (m *Model) Wake(cur State, p Packet) (next State, reset bool) {
	if !m.Valid(cur) {
		panic(fmt.Sprintf("radio: state %+v is not a state of model %q", cur, m.ID))
	}
	switch cur.Kind {
	case KindIdle:
		if msDur(m.Promotion.DurationMS) > 0 {
			return Promoting, true
		}
		return Connected, true
	case KindPromotion:
		return cur, false
	case KindTail:
		w := m.Tail[cur.Phase].Wake
		if w == nil {
			return Connected, true
		}
		small := w.SmallDownBytes
		if p.Up {
			small = w.SmallUpBytes
		}
		if p.Bytes <= small {
			// Served on the shared channel (3G FACH); its inactivity timer starts over.
			return cur, true
		}
		if msDur(w.PromotionMS) > 0 {
			return State{KindPromotion, cur.Phase}, true
		}
		return Connected, true
	}
	return Connected, true
}

// Step is the whole state machine as one pure function. anchor is the state the radio entered at its last
// reset, since the time elapsed from then, pkt a packet arriving now (nil for none). It returns the state
// now; with a packet, reset reports whether the returned state becomes the new anchor at this instant.
// Without a packet reset is false and the caller keeps its anchor.
func (m *Model) Step(anchor State, since time.Duration, pkt *Packet) (State, bool) {
	cur, _ := m.Demote(anchor, since)
	if pkt == nil {
		return cur, false
	}
	return m.Wake(cur, *pkt)
}
