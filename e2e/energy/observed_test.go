package energy

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

// restJ is the tail's energy from off seconds into it to its end, written out phase by phase.
func restJ(m *radio.Model, off float64) float64 {
	var j, start float64
	for _, p := range m.Tail {
		d := p.DurationMS / 1e3
		if end := start + d; end > off {
			j += phaseJ(p, end-math.Max(start, off))
		}
		start += d
	}
	return j
}

// A window that starts where earlier traffic left the radio is charged what its packets add: no promotion
// while the radio is connected or in its tail, the tail only as far as they extend it. Without earlier
// traffic within the tail, it starts idle and is charged as Simulate charges StartIdle.
func TestObservedStart(t *testing.T) {
	lte := loadModel(t, radio.LTE)
	g3 := loadModel(t, radio.ThreeG)
	down := func(at float64, n int) radio.Packet { return radio.Packet{T: t0 + sec(at), Bytes: n} }
	// burst is an earlier load: 1500-byte packets every 10 ms for 1 s, the last at end (seconds from t0).
	burst := func(end float64) []radio.Packet {
		var out []radio.Packet
		for i := 100; i >= 0; i-- {
			out = append(out, down(end-float64(i)/100, 1500))
		}
		return out
	}
	lteData := dataJ(lte, down(1, 1500))
	lteBeta := lte.Connected.BetaMW / 1e3
	ltePromo := lte.Promotion.DurationMS / 1e3 * lte.Promotion.PowerMW / 1e3
	g3Beta := g3.Connected.BetaMW / 1e3
	g3Promo := g3.Promotion.DurationMS / 1e3 * g3.Promotion.PowerMW / 1e3
	fach := g3.Tail[1]
	fachW := fach.AvgPowerMW() / 1e3
	wakeJ := fach.Wake.PromotionMS / 1e3 * fach.Wake.PowerMW / 1e3
	win := Window{t0, t0 + sec(2)}
	cases := []struct {
		name       string
		m          *radio.Model
		before     []radio.Packet // traffic before the window
		pkts       []radio.Packet // the window's
		state      string         // the radio's state at the window's start
		promotions int
		promoJ     float64
		totalJ     float64
		anywayJ    float64 // the rest of the earlier tail, charged to the earlier traffic
	}{
		{name: "LTE first load", m: lte, pkts: []radio.Packet{down(1, 1500)},
			state: "idle", promotions: 1, promoJ: ltePromo, totalJ: ltePromo + fullTailJ(lte) + lteData},
		{name: "LTE 3 s after a cellular load", m: lte, before: burst(-3), pkts: []radio.Packet{down(1, 1500)},
			// At the packet the radio is 4 s into its tail: it goes back to continuous reception, and the tail
			// it adds is a whole one less the 7.576 s of long DRX it had left.
			state: "long_drx", totalJ: fullTailJ(lte) - restJ(lte, 4) + lteData, anywayJ: restJ(lte, 3)},
		{name: "LTE 50 ms after a cellular load", m: lte, before: burst(-0.05), pkts: []radio.Packet{down(0.02, 1500)},
			// Still in the inactivity timer: the 20 ms before the packet are continuous reception, and the tail
			// restarts 70 ms after the earlier one began.
			state: "inactivity", totalJ: 0.02*lteBeta + phaseJ(lte.Tail[0], 0.05) + lteData, anywayJ: restJ(lte, 0.05)},
		{name: "LTE 30 s after a cellular load", m: lte, before: burst(-30), pkts: []radio.Packet{down(1, 1500)},
			state: "idle", promotions: 1, promoJ: ltePromo, totalJ: ltePromo + fullTailJ(lte) + lteData},
		{name: "LTE no cellular packet in the earlier load's tail", m: lte, before: burst(-3),
			state: "long_drx", anywayJ: restJ(lte, 3)},
		{name: "3G first load", m: g3, pkts: []radio.Packet{down(1, 1500)},
			state: "idle", promotions: 1, promoJ: g3Promo, totalJ: g3Promo + fullTailJ(g3)},
		{name: "3G 3 s after a cellular load, in the DCH tail", m: g3, before: []radio.Packet{down(-6, 1500), down(-3, 1500)},
			pkts:  []radio.Packet{down(1, 1500)},
			state: "dch_tail", totalJ: 1*g3Beta + fullTailJ(g3) - restJ(g3, 3), anywayJ: restJ(g3, 3)},
		{name: "3G in FACH, a small packet", m: g3, before: []radio.Packet{down(-12, 1500), down(-9, 1500)},
			pkts: []radio.Packet{down(1, 400)},
			// 9 s after the earlier packet: 4 s into FACH. The small packet stays on FACH and restarts its timer.
			state: "fach", totalJ: (1 + fach.DurationMS/1e3 - 8) * fachW, anywayJ: 8 * fachW},
		{name: "3G in FACH, a large packet", m: g3, before: []radio.Packet{down(-12, 1500), down(-9, 1500)},
			pkts:  []radio.Packet{down(1, 1500)},
			state: "fach", promotions: 1, promoJ: wakeJ, totalJ: 1*fachW + wakeJ + fullTailJ(g3) - 8*fachW, anywayJ: 8 * fachW},
		{name: "3G 30 s after a cellular load", m: g3, before: []radio.Packet{down(-32, 1500), down(-30, 1500)},
			pkts:  []radio.Packet{down(1, 1500)},
			state: "idle", promotions: 1, promoJ: g3Promo, totalJ: g3Promo + fullTailJ(g3)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			all := append(append([]radio.Packet{}, c.before...), c.pkts...)
			s := StartAt(c.m, all, win.Start)
			r, err := SimulateFrom(c.m, window(all, win), win, s)
			if err != nil {
				t.Fatal(err)
			}
			if r.StartState != c.state || r.Initial != StartObserved {
				t.Errorf("start state %s (%s), want %s (observed)", r.StartState, r.Initial, c.state)
			}
			if r.Promotions != c.promotions {
				t.Errorf("%d promotions, want %d", r.Promotions, c.promotions)
			}
			near(t, "promotion J", r.Category[radio.CatPromotion].J, c.promoJ)
			near(t, "total J", r.TotalJ, c.totalJ)
			near(t, "anyway J", r.AnywayJ, c.anywayJ)
			var sum float64
			for _, cat := range []radio.Category{radio.CatPromotion, radio.CatActive, radio.CatTail} {
				if r.Category[cat].J < -1e-9 {
					t.Errorf("%s: %v J, a load cannot save energy", cat, r.Category[cat].J)
				}
				sum += r.Category[cat].J
			}
			near(t, "category sum", sum, r.TotalJ)
			if c.state != "idle" {
				return
			}
			// Idle at the start: exactly what the idle accounting charges.
			idle, err := Simulate(c.m, window(all, win), win, StartIdle)
			if err != nil {
				t.Fatal(err)
			}
			if r.TotalJ != idle.TotalJ || r.Promotions != idle.Promotions || r.Category[radio.CatTail] != idle.Category[radio.CatTail] {
				t.Errorf("idle start: %v J, %d promotions; the idle accounting: %v J, %d promotions", r.TotalJ, r.Promotions, idle.TotalJ, idle.Promotions)
			}
		})
	}
}

func window(pkts []radio.Packet, w Window) []radio.Packet {
	var out []radio.Packet
	for _, p := range pkts {
		if p.T >= w.Start && p.T <= w.End {
			out = append(out, p)
		}
	}
	return out
}

func TestStartAt(t *testing.T) {
	lte := loadModel(t, radio.LTE)
	g3 := loadModel(t, radio.ThreeG)
	at := func(m *radio.Model, pkts []radio.Packet, t int64) string {
		s := StartAt(m, pkts, t)
		cur, _ := m.Demote(s.State, time.Duration(t-s.Since))
		return m.Name(cur)
	}
	p := func(s float64) radio.Packet { return radio.Packet{T: t0 + sec(s), Bytes: 1500} }
	cases := []struct {
		m    *radio.Model
		pkts []radio.Packet
		want string
	}{
		{lte, nil, "idle"},
		{lte, []radio.Packet{p(0)}, "idle"},                         // a packet at the start is the window's
		{lte, []radio.Packet{p(-0.1)}, "promotion"},                 // promoting for 260 ms
		{lte, []radio.Packet{p(-0.3)}, "inactivity"},                // 40 ms after the promotion
		{lte, []radio.Packet{p(-11.836)}, "idle"},                   // promotion and the whole tail over
		{lte, []radio.Packet{p(-11.835)}, "long_drx"},               // 1 ms of it left
		{g3, []radio.Packet{p(-1)}, "promo_idle_dch"},               // 3G's promotion takes 2 s
		{g3, []radio.Packet{p(-6), p(-1)}, "dch_tail"},              // the second packet, on DCH's tail, resets it
		{g3, []radio.Packet{p(-30), p(-10)}, "fach"},                // the first is drained before the second
		{g3, []radio.Packet{p(-18.5), p(-18)}, "fach"},              // the second came during the promotion: no reset
		{g3, []radio.Packet{p(-9), p(-7), p(-1)}, "promo_fach_dch"}, // DCH from -7, FACH from -2, then a large packet
	}
	for i, c := range cases {
		if got := at(c.m, c.pkts, t0); got != c.want {
			t.Errorf("case %d (%s): state %s, want %s", i, c.m.Technology, got, c.want)
		}
	}
}

// StartAt walks back only to the last silence of a whole drain; walking every earlier packet from idle gives
// the same state.
func TestStartAtEqualsFullWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tech := range []string{radio.LTE, radio.ThreeG} {
		m := loadModel(t, tech)
		for trial := range 200 {
			var pkts []radio.Packet
			tt := t0
			for range 1 + rng.IntN(80) {
				tt += int64(math.Exp(rng.Float64()*17)) * int64(time.Microsecond) / 10
				pkts = append(pkts, radio.Packet{T: tt, Up: rng.IntN(3) == 0, Bytes: 40 + rng.IntN(1460)})
			}
			at := pkts[rng.IntN(len(pkts))].T + int64(rng.IntN(int(20*time.Second)))
			anchor, anchorT := radio.Idle, t0
			for _, p := range pkts {
				if p.T >= at {
					break
				}
				if next, reset := m.Step(anchor, time.Duration(p.T-anchorT), &p); reset {
					anchor, anchorT = next, p.T
				}
			}
			want, _ := m.Demote(anchor, time.Duration(at-anchorT))
			s := StartAt(m, pkts, at)
			got, _ := m.Demote(s.State, time.Duration(at-s.Since))
			if got != want || (want.Kind != radio.KindIdle && (s.State != anchor || s.Since != anchorT)) {
				t.Fatalf("%s trial %d: StartAt %+v (%s), full walk %+v at %d (%s)", tech, trial, s, m.Name(got), anchor, anchorT, m.Name(want))
			}
		}
	}
}

// Loads one after another on one link, each charged what it adds to the state the one before left: the
// charges add up to the link's energy over all of them, the tails counted once.
func TestObservedChargesAddUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tech := range []string{radio.LTE, radio.ThreeG} {
		m := loadModel(t, tech)
		for trial := range 50 {
			var pkts []radio.Packet
			var wins []Window
			tt := t0
			for range 1 + rng.IntN(8) {
				// Loads of up to 3 s, 0.3-25 s apart; some carry no cellular packet.
				tt += sec(0.3 + rng.Float64()*25)
				w := Window{Start: tt, End: tt + sec(rng.Float64()*3)}
				if rng.IntN(4) > 0 {
					for x := w.Start + sec(rng.Float64()*0.2); x <= w.End; x += int64(math.Exp(rng.Float64()*13)) * int64(time.Microsecond) {
						pkts = append(pkts, radio.Packet{T: x, Up: rng.IntN(3) == 0, Bytes: 40 + rng.IntN(1460)})
					}
				}
				wins = append(wins, w)
				tt = w.End
			}
			var sum float64
			for _, w := range wins {
				r, err := SimulateFrom(m, window(pkts, w), w, StartAt(m, pkts, w.Start))
				if err != nil {
					t.Fatal(err)
				}
				if r.TotalJ < -1e-9 {
					t.Fatalf("%s trial %d: a load charged %v J", tech, trial, r.TotalJ)
				}
				sum += r.TotalJ
			}
			whole := run(t, m, pkts, Window{wins[0].Start, wins[len(wins)-1].End}, StartIdle)
			if math.Abs(sum-whole.TotalJ) > 1e-6*math.Max(1, whole.TotalJ) {
				t.Errorf("%s trial %d: %d loads charged %.9f J, the link spent %.9f J", tech, trial, len(wins), sum, whole.TotalJ)
			}
		}
	}
}

func TestTimelineFromErrors(t *testing.T) {
	m := loadModel(t, radio.ThreeG)
	w := Window{t0, t0 + sec(1)}
	if _, err := TimelineFrom(m, nil, w, Start{State: radio.Connected, Since: t0 + 1}); err == nil {
		t.Error("a state entered after the window's start accepted")
	}
	if _, err := TimelineFrom(m, nil, w, Start{State: radio.State{Kind: radio.KindTail, Phase: 5}, Since: t0}); err == nil {
		t.Error("a state the model lacks accepted")
	}
	if _, err := Timeline(m, nil, w, StartObserved); err == nil {
		t.Error("Timeline started from the observed state without the earlier packets")
	}
	for _, s := range []string{"idle", "connected", "observed"} {
		if _, err := ParseInitial(s); err != nil {
			t.Errorf("ParseInitial(%q): %v", s, err)
		}
	}
}
