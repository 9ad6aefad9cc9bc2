package energy

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

const t0 = int64(1_700_000_000_000_000_000) // a window start, unix ns

func sec(s float64) int64 { return int64(s * 1e9) }

// phaseJ is a tail phase's energy written out by hand: duration times power, or times the DRX duty-cycle
// average for DRX phases.
func phaseJ(p radio.Phase, seconds float64) float64 {
	if p.PowerMW != nil {
		return seconds * *p.PowerMW / 1e3
	}
	d := p.DRX
	return seconds * (d.OnMS*d.OnPowerMW + (d.CycleMS-d.OnMS)*d.SleepPowerMW) / d.CycleMS / 1e3
}

func fullTailJ(m *radio.Model) float64 {
	var j float64
	for _, p := range m.Tail {
		j += phaseJ(p, p.DurationMS/1e3)
	}
	return j
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

func run(t *testing.T, m *radio.Model, pkts []radio.Packet, w Window, init Initial) Result {
	t.Helper()
	r, err := Simulate(m, pkts, w, init)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// One packet on an idle LTE radio costs one promotion, the whole tail and the packet's throughput term.
func TestLTEOnePacketFromIdle(t *testing.T) {
	m := loadModel(t, radio.LTE)
	p := radio.Packet{T: t0 + sec(1), Bytes: 1500}
	r := run(t, m, []radio.Packet{p}, Window{t0, t0 + sec(2)}, StartIdle)

	promoJ := m.Promotion.DurationMS / 1e3 * m.Promotion.PowerMW / 1e3
	dataJ := m.Connected.AlphaDownMWPerMbps * (1500 * 8 / 1e6) / 1e3
	tailJ := fullTailJ(m)
	// By hand from the shipped numbers: 0.26 s * 1210 mW = 0.3146 J; tail 0.1*1288 + 0.02*1122 +
	// 11.456*1091 mJ = 12.649736 J; data 51.97 * 0.012 mJ.
	t.Logf("one packet on idle LTE: %.6f J (promotion %.6f, tail %.6f, data %.6f)", r.TotalJ, promoJ, tailJ, dataJ)
	near(t, "promotion J", r.Category[radio.CatPromotion].J, promoJ)
	near(t, "tail J", r.Category[radio.CatTail].J, tailJ)
	near(t, "active J", r.Category[radio.CatActive].J, dataJ)
	near(t, "total J", r.TotalJ, promoJ+tailJ+dataJ)
	near(t, "no-tail J", r.NoTailJ(), promoJ+dataJ)
	near(t, "promotion s", r.Category[radio.CatPromotion].S, m.Promotion.DurationMS/1e3)
	near(t, "active s", r.Category[radio.CatActive].S, 0)
	if r.Promotions != 1 || r.Packets != 1 || r.BytesDown != 1500 || r.Initial != StartIdle {
		t.Errorf("promotions %d packets %d bytes down %d initial %s", r.Promotions, r.Packets, r.BytesDown, r.Initial)
	}
	if want := t0 + sec(2) + int64(m.Drain()); r.Stop != want {
		t.Errorf("window stops at %d, want end + drain = %d", r.Stop, want)
	}
	// Idle before the packet and after the tail: reported, not in the total.
	near(t, "idle s", r.Category[radio.CatIdle].S, float64(r.Stop-r.Start)/1e9-m.Promotion.DurationMS/1e3-float64(m.Drain()-time.Duration(m.Promotion.DurationMS*1e6))/1e9)
}

// A pre-promoted radio (seed 000's pings before each load) pays no promotion, but its tail runs from the
// window's start.
func TestLTEPrePromoted(t *testing.T) {
	m := loadModel(t, radio.LTE)
	p := radio.Packet{T: t0 + sec(1), Bytes: 1500}
	r := run(t, m, []radio.Packet{p}, Window{t0, t0 + sec(2)}, StartConnected)
	// Before the packet: 100 ms inactivity, 20 ms short DRX, 880 ms long DRX; then a full tail.
	before := phaseJ(m.Tail[0], 0.1) + phaseJ(m.Tail[1], 0.02) + phaseJ(m.Tail[2], 0.88)
	dataJ := m.Connected.AlphaDownMWPerMbps * (1500 * 8 / 1e6) / 1e3
	near(t, "tail J", r.Category[radio.CatTail].J, before+fullTailJ(m))
	near(t, "total J", r.TotalJ, before+fullTailJ(m)+dataJ)
	if r.Promotions != 0 || r.Category[radio.CatPromotion].J != 0 || r.Initial != StartConnected {
		t.Errorf("pre-promoted radio: promotions %d, %v J, initial %s", r.Promotions, r.Category[radio.CatPromotion].J, r.Initial)
	}
}

func TestLTEGaps(t *testing.T) {
	m := loadModel(t, radio.LTE)
	beta := m.Connected.BetaMW / 1e3
	promo := m.Promotion.DurationMS / 1e3
	// Packets 50 ms apart after the promotion ends: the gap is continuous reception at beta.
	a := []radio.Packet{{T: t0, Bytes: 100}, {T: t0 + sec(promo) + sec(0.05), Bytes: 100}}
	r := run(t, m, a, Window{t0, t0 + sec(1)}, StartIdle)
	near(t, "active s (50 ms gap)", r.Category[radio.CatActive].S, 0.05)
	near(t, "active J (50 ms gap)", r.Category[radio.CatActive].J, 0.05*beta+2*dataJ(m, radio.Packet{Bytes: 100}))
	near(t, "tail J (50 ms gap)", r.Category[radio.CatTail].J, fullTailJ(m))

	// 500 ms apart: the radio passed inactivity, short DRX and 380 ms of long DRX, then a full tail.
	b := []radio.Packet{{T: t0, Bytes: 100}, {T: t0 + sec(promo) + sec(0.5), Bytes: 100}}
	r = run(t, m, b, Window{t0, t0 + sec(1)}, StartIdle)
	gap := phaseJ(m.Tail[0], 0.1) + phaseJ(m.Tail[1], 0.02) + phaseJ(m.Tail[2], 0.38)
	near(t, "tail J (500 ms gap)", r.Category[radio.CatTail].J, gap+fullTailJ(m))
	near(t, "active s (500 ms gap)", r.Category[radio.CatActive].S, 0)
	if r.Promotions != 1 {
		t.Errorf("500 ms gap: %d promotions, want 1", r.Promotions)
	}

	// 20 s apart: two promotions, two full tails.
	c := []radio.Packet{{T: t0, Bytes: 100}, {T: t0 + sec(20), Bytes: 100}}
	r = run(t, m, c, Window{t0, t0 + sec(20)}, StartIdle)
	near(t, "tail J (20 s gap)", r.Category[radio.CatTail].J, 2*fullTailJ(m))
	if r.Promotions != 2 {
		t.Errorf("20 s gap: %d promotions, want 2", r.Promotions)
	}
}

// Packets arriving during a promotion wait for it; a steady flow then keeps the radio in continuous
// reception with the throughput term on every byte.
func TestLTEBulk(t *testing.T) {
	m := loadModel(t, radio.LTE)
	var pkts []radio.Packet
	for i := range 1001 { // 1001 packets of 1250 B every 1 ms: 10 Mbit/s downlink for 1 s
		pkts = append(pkts, radio.Packet{T: t0 + int64(i)*int64(time.Millisecond), Bytes: 1250})
	}
	r := run(t, m, pkts, Window{t0, t0 + sec(1)}, StartIdle)
	promo := m.Promotion.DurationMS / 1e3
	activeS := 1 - promo // continuous from the promotion's end to the last packet
	dataJ := m.Connected.AlphaDownMWPerMbps * 1001 * 1250 * 8 / 1e6 / 1e3
	near(t, "active s", r.Category[radio.CatActive].S, activeS)
	near(t, "data J", r.DataJ, dataJ)
	near(t, "active J", r.Category[radio.CatActive].J, activeS*m.Connected.BetaMW/1e3+dataJ)
	near(t, "total J", r.TotalJ, promo*m.Promotion.PowerMW/1e3+activeS*m.Connected.BetaMW/1e3+dataJ+fullTailJ(m))
}

func Test3G(t *testing.T) {
	m := loadModel(t, radio.ThreeG)
	promo := m.Promotion.DurationMS / 1e3
	dch := m.Tail[0]
	fach := m.Tail[1]
	dchJ := func(s float64) float64 { return phaseJ(dch, s) }
	fachJ := func(s float64) float64 { return phaseJ(fach, s) }

	// One large packet from idle: promotion, DCH tail, FACH tail.
	one := []radio.Packet{{T: t0, Bytes: 1500}}
	r := run(t, m, one, Window{t0, t0}, StartIdle)
	near(t, "one packet J", r.TotalJ, promo*m.Promotion.PowerMW/1e3+dchJ(5)+fachJ(12))

	// A small packet 3 s into FACH stays on FACH and restarts its 12 s timer; a large one 4 s later
	// promotes FACH -> DCH and runs a whole new tail.
	at := promo + 5 + 3
	wakeS := fach.Wake.PromotionMS / 1e3
	pkts := []radio.Packet{{T: t0, Bytes: 1500}, {T: t0 + sec(at), Bytes: 100}, {T: t0 + sec(at+4), Bytes: 1500}}
	r = run(t, m, pkts, Window{t0, t0 + sec(at+4)}, StartIdle)
	want := promo*m.Promotion.PowerMW/1e3 + dchJ(5) + fachJ(3) + fachJ(4) + wakeS*fach.Wake.PowerMW/1e3 + dchJ(5) + fachJ(12)
	near(t, "FACH sequence J", r.TotalJ, want)
	near(t, "FACH sequence promotion J", r.Category[radio.CatPromotion].J, promo*m.Promotion.PowerMW/1e3+wakeS*fach.Wake.PowerMW/1e3)
	if r.Promotions != 2 {
		t.Errorf("FACH sequence: %d promotions, want 2", r.Promotions)
	}
	if got := r.State["promo_fach_dch"].S; math.Abs(got-wakeS) > 1e-9 {
		t.Errorf("FACH->DCH promotion lasted %v s, want %v", got, wakeS)
	}
	if r.BytesDown != 3000 { // the FACH packet carries no throughput term
		t.Errorf("carried %d bytes, want 3000", r.BytesDown)
	}
}

func TestWiFi(t *testing.T) {
	m := loadModel(t, radio.WiFi)
	var pkts []radio.Packet
	for i := range 11 { // every 100 ms for 1 s
		pkts = append(pkts, radio.Packet{T: t0 + int64(i)*sec(0.1), Bytes: 1000, Up: i%2 == 0})
	}
	r := run(t, m, pkts, Window{t0, t0 + sec(1)}, StartIdle)
	beta := m.Connected.BetaMW / 1e3
	near(t, "active J", r.Category[radio.CatActive].J, 1*beta)
	near(t, "tail J", r.Category[radio.CatTail].J, phaseJ(m.Tail[0], m.Tail[0].DurationMS/1e3))
	near(t, "promotion J", r.Category[radio.CatPromotion].J, 0)
	if r.BytesUp != 6000 || r.BytesDown != 5000 {
		t.Errorf("bytes up %d down %d, want 6000 / 5000", r.BytesUp, r.BytesDown)
	}
}

func TestWindowAndErrors(t *testing.T) {
	m := loadModel(t, radio.LTE)
	pkts := []radio.Packet{{T: t0 - 1, Bytes: 1}, {T: t0 + 5, Bytes: 1}, {T: t0 + sec(3), Bytes: 1}}
	r := run(t, m, pkts, Window{t0, t0 + sec(1)}, StartIdle)
	if r.Packets != 1 || r.Ignored != 2 {
		t.Errorf("replayed %d, ignored %d; want 1 and 2", r.Packets, r.Ignored)
	}
	if _, err := Simulate(m, nil, Window{t0, t0 - 1}, StartIdle); err == nil {
		t.Error("window ending before its start accepted")
	}
	if _, err := Simulate(m, nil, Window{t0, t0}, Initial("warm")); err == nil {
		t.Error("unknown initial state accepted")
	}
	if _, err := Simulate(m, []radio.Packet{{T: t0 + 2, Bytes: 1}, {T: t0 + 1, Bytes: 1}}, Window{t0, t0 + 3}, StartIdle); err == nil {
		t.Error("unsorted packets accepted")
	}
	// No packets, idle start: nothing but idle.
	r = run(t, m, nil, Window{t0, t0 + sec(1)}, StartIdle)
	if r.TotalJ != 0 {
		t.Errorf("empty trace costs %v J", r.TotalJ)
	}
}

// Segments tile the window without gaps and the binned power curve integrates to the total, for random
// traces on every model.
func TestTimelineInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tech := range []string{radio.LTE, radio.ThreeG, radio.WiFi} {
		m := loadModel(t, tech)
		for trial := range 50 {
			var pkts []radio.Packet
			tt := t0
			for range rng.IntN(60) {
				// Gaps from microseconds to 30 s, so every phase gets visited.
				tt += int64(math.Exp(rng.Float64()*17)) * int64(time.Microsecond) / 10
				pkts = append(pkts, radio.Packet{T: tt, Up: rng.IntN(3) == 0, Bytes: 40 + rng.IntN(1460)})
			}
			init := StartIdle
			if trial%2 == 1 {
				init = StartConnected
			}
			tr, err := Timeline(m, pkts, Window{t0, tt}, init)
			if err != nil {
				t.Fatal(err)
			}
			at := tr.Start
			for _, s := range tr.Segments {
				if s.Start != at || s.End <= s.Start {
					t.Fatalf("%s trial %d: segment %+v does not follow %d", tech, trial, s, at)
				}
				at = s.End
			}
			if at != tr.Stop {
				t.Fatalf("%s trial %d: segments end at %d, window at %d", tech, trial, at, tr.Stop)
			}
			r := tr.Sum()
			for _, bin := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 700 * time.Millisecond} {
				series, err := tr.PowerSeries(bin)
				if err != nil {
					t.Fatal(err)
				}
				var j float64
				for i, s := range series {
					w := float64(min(s.T+int64(bin), tr.Stop)-s.T) / 1e9
					if i == len(series)-1 && w <= 0 {
						t.Fatalf("empty last bin")
					}
					j += s.PowerMW * w / 1e3
				}
				if math.Abs(j-r.TotalJ) > 1e-6*math.Max(1, r.TotalJ) {
					t.Errorf("%s trial %d bin %v: power curve integrates to %v J, total is %v J", tech, trial, bin, j, r.TotalJ)
				}
			}
			var sum float64
			for _, c := range []radio.Category{radio.CatPromotion, radio.CatActive, radio.CatTail} {
				sum += r.Category[c].J
			}
			near(t, "category sum", sum, r.TotalJ)
		}
	}
}

func TestPowerSeriesBadBin(t *testing.T) {
	m := loadModel(t, radio.WiFi)
	tr, err := Timeline(m, nil, Window{t0, t0}, StartIdle)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.PowerSeries(0); err == nil {
		t.Error("zero bin accepted")
	}
	if _, err := tr.PowerSeries(time.Nanosecond); err == nil {
		t.Error("250 million bins accepted")
	}
}
