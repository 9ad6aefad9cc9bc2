package linkem

import (
	"strings"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

func mustShaper(t *testing.T, p Params, seed uint64) *Shaper {
	t.Helper()
	s, err := NewShaper(p, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type arrival struct {
	at   int64
	size int
}

type outcome struct {
	at int64
	v  Verdict
}

func run(s *Shaper, in []arrival) []outcome {
	var out []outcome
	for _, a := range in {
		t, v := s.Admit(a.at, a.size)
		out = append(out, outcome{t, v})
	}
	return out
}

func TestShaperConstantRate(t *testing.T) {
	// 12 Mbit/s: a 1500-byte packet takes exactly 1 ms, a 150-byte one 0.1 ms.
	base := Params{RateBps: 12e6, Delay: 10 * time.Millisecond, QueueBytes: 100_000}
	tests := []struct {
		name       string
		delayFirst bool
		in         []arrival
		want       []outcome
	}{
		{
			name: "uplink burst serializes then delays",
			in:   []arrival{{0, 1500}, {0, 1500}, {0, 150}},
			want: []outcome{{11 * ms, Deliver}, {12 * ms, Deliver}, {12*ms + ms/10, Deliver}},
		},
		{
			name:       "downlink burst delays then serializes",
			delayFirst: true,
			in:         []arrival{{0, 1500}, {0, 1500}, {0, 150}},
			want:       []outcome{{11 * ms, Deliver}, {12 * ms, Deliver}, {12*ms + ms/10, Deliver}},
		},
		{
			name: "idle time is not banked",
			in:   []arrival{{0, 1500}, {50 * ms, 1500}, {50 * ms, 1500}},
			want: []outcome{{11 * ms, Deliver}, {61 * ms, Deliver}, {62 * ms, Deliver}},
		},
		{
			name: "small packet on idle link only pays its own serialization",
			in:   []arrival{{5 * ms, 60}},
			want: []outcome{{5*ms + 10*ms + 40_000, Deliver}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base
			p.DelayFirst = tt.delayFirst
			got := run(mustShaper(t, p, 1), tt.in)
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("packet %d: got %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestShaperIdle(t *testing.T) {
	s := mustShaper(t, Params{RateBps: 12e6, QueueBytes: 100_000}, 1)
	s.Admit(0, 1500)    // busy 0-1 ms
	s.Admit(0, 1500)    // busy 1-2 ms
	s.Admit(5*ms, 1500) // idle 2-5 ms, busy 5-6 ms
	if got := s.Idle(5 * ms); got != 3*ms {
		t.Errorf("Idle(5ms) = %d, want 3 ms", got)
	}
	if got := s.Idle(10 * ms); got != 7*ms {
		t.Errorf("Idle(10ms) = %d, want 7 ms (3 + 4 since the last packet left)", got)
	}
	if got := s.Sending(); got != 3*ms {
		t.Errorf("Sending() = %d, want 3 ms (three 1500-byte packets at 12 Mbit/s)", got)
	}
}

func TestShaperLongRunRate(t *testing.T) {
	// A saturated link must deliver exactly rate*duration bytes, with no
	// drift from rounding: 7.04 Mbit/s does not divide 1500 bytes evenly.
	s := mustShaper(t, Params{RateBps: 7.04e6, QueueBytes: 1 << 30}, 1)
	const n = 100_000
	var last int64
	for i := 0; i < n; i++ {
		last, _ = s.Admit(0, 1500)
	}
	want := float64(n) * 1500 * 8 / 7.04e6 * 1e9
	if d := float64(last) - want; d > 1e5 || d < -1e5 {
		t.Errorf("last delivery at %d ns, want %.0f (off by %.0f ns)", last, want, d)
	}
}

func TestShaperDropTail(t *testing.T) {
	// 12 Mbit/s, queue of 3000 bytes: two full packets fit, the third is
	// dropped while both are still queued; after the first leaves (1 ms) one
	// more fits.
	for _, delayFirst := range []bool{false, true} {
		p := Params{RateBps: 12e6, Delay: 5 * time.Millisecond, QueueBytes: 3000, DelayFirst: delayFirst}
		s := mustShaper(t, p, 1)
		got := run(s, []arrival{{0, 1500}, {0, 1500}, {0, 1500}, {ms / 2, 1500}, {ms, 1500}, {ms, 100}})
		want := []Verdict{Deliver, Deliver, Dropped, Dropped, Deliver, Dropped}
		for i, w := range want {
			if got[i].v != w {
				t.Errorf("delayFirst=%v packet %d: verdict %v, want %v", delayFirst, i, got[i].v, w)
			}
		}
		if got[4].at != 3*ms+5*ms {
			t.Errorf("delayFirst=%v: packet 4 delivered at %d, want %d", delayFirst, got[4].at, 8*ms)
		}
		if s.QueuedBytes() != 3000 {
			t.Errorf("QueuedBytes = %d, want 3000", s.QueuedBytes())
		}
	}
}

func TestDropTailAccounting(t *testing.T) {
	q := DropTail{Limit: 5000}
	for i := int64(1); i <= 100; i++ { // grows the ring past its first size
		q.Release(i * 10)
		if !q.Fits(40) {
			t.Fatalf("step %d: 40 bytes do not fit with %d queued", i, q.Bytes())
		}
		q.Push(i*10+25, 40)
	}
	// Departures at 35, 45, ..., 1025; at time 1000 those > 1000 remain.
	q.Release(1000)
	if q.Len() != 3 || q.Bytes() != 120 {
		t.Errorf("after release: len %d bytes %d, want 3 and 120", q.Len(), q.Bytes())
	}
	if q.Fits(5000 - 119) {
		t.Errorf("Fits(%d) with 120 queued and limit 5000", 5000-119)
	}
	if !q.Fits(5000 - 120) {
		t.Errorf("!Fits(%d) with 120 queued and limit 5000", 5000-120)
	}
	q.Release(1 << 62)
	if q.Len() != 0 || q.Bytes() != 0 {
		t.Errorf("after full release: len %d bytes %d", q.Len(), q.Bytes())
	}
}

func TestShaperLossIsSeededAndNearRate(t *testing.T) {
	p := Params{RateBps: 1e9, QueueBytes: 1 << 30, Loss: 0.01}
	count := func(seed uint64) (lost int, pattern []bool) {
		s := mustShaper(t, p, seed)
		for i := 0; i < 200_000; i++ {
			_, v := s.Admit(int64(i)*ms, 100)
			pattern = append(pattern, v == Lost)
			if v == Lost {
				lost++
			}
		}
		return lost, pattern
	}
	a, pa := count(7)
	b, pb := count(7)
	_, pc := count(8)
	if a != b || !equal(pa, pb) {
		t.Fatalf("same seed gave different losses (%d vs %d)", a, b)
	}
	if equal(pa, pc) {
		t.Errorf("different seeds gave the same loss pattern")
	}
	// 200,000 trials at p = 0.01: sd = sqrt(n p (1-p)) = 44.5; allow 5 sd.
	if a < 2000-223 || a > 2000+223 {
		t.Errorf("lost %d of 200000 at p=0.01, want 2000 +- 223", a)
	}
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestShaperTrace(t *testing.T) {
	// Opportunities at 1, 1, 4 ms, repeating every 4 ms.
	tr, err := ParseTrace(strings.NewReader("1\n1\n4\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Trace: tr, Delay: 2 * time.Millisecond, QueueBytes: 100_000}
	tests := []struct {
		name string
		in   []arrival
		want []int64 // delivery times in ms
	}{
		{"two full packets share the two opportunities at 1 ms", []arrival{{0, 1500}, {0, 1500}, {0, 1500}}, []int64{3, 3, 6}},
		{"small packets share one opportunity", []arrival{{0, 500}, {0, 500}, {0, 500}, {0, 10}}, []int64{3, 3, 3, 3}},
		{"a packet split over two opportunities leaves at the second", []arrival{{0, 1000}, {0, 1000}}, []int64{3, 3}},
		{"unused bytes are wasted when the queue empties", []arrival{{0, 100}, {2 * ms, 100}}, []int64{3, 6}},
		{"trace loops", []arrival{{4*ms + 1, 1500}, {4*ms + 1, 1500}, {4*ms + 1, 1500}}, []int64{7, 7, 10}},
		{"arrival exactly at an opportunity uses it", []arrival{{ms, 1500}}, []int64{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(mustShaper(t, p, 1), tt.in)
			for i, w := range tt.want {
				if got[i].v != Deliver || got[i].at != w*ms {
					t.Errorf("packet %d: got %+v, want delivery at %d ms", i, got[i], w)
				}
			}
		})
	}
}

func TestShaperSetParamsKeepsOrder(t *testing.T) {
	p := Params{RateBps: 12e6, Delay: 50 * time.Millisecond, QueueBytes: 100_000, DelayFirst: true}
	s := mustShaper(t, p, 1)
	first, _ := s.Admit(0, 1500)
	p.Delay = 0
	if err := s.SetParams(p); err != nil {
		t.Fatal(err)
	}
	second, _ := s.Admit(ms, 1500)
	if second < first {
		t.Errorf("after cutting the delay a later packet (%d) overtook an earlier one (%d)", second, first)
	}
	third, _ := s.Admit(100*ms, 1500)
	if third != 101*ms {
		t.Errorf("new delay not applied: delivered at %d, want %d", third, 101*ms)
	}
}

func TestParamsValidate(t *testing.T) {
	ok := Params{RateBps: 1e6, QueueBytes: 10_000}
	tests := []struct {
		name string
		edit func(*Params)
		want string
	}{
		{"ok", func(*Params) {}, ""},
		{"negative delay", func(p *Params) { p.Delay = -1 }, "delay"},
		{"zero rate", func(p *Params) { p.RateBps = 0 }, "rate"},
		{"NaN rate", func(p *Params) { p.RateBps = nan() }, "rate"},
		{"loss 1", func(p *Params) { p.Loss = 1 }, "loss"},
		{"tiny queue", func(p *Params) { p.QueueBytes = 100 }, "queue"},
	}
	for _, tt := range tests {
		p := ok
		tt.edit(&p)
		err := p.Validate()
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: Validate() = %v, want error mentioning %q", tt.name, err, tt.want)
		}
	}
}

func nan() float64 { z := 0.0; return z / z }

// A rewound trace meets the next packet where a fresh one would at the same offset: the loads of different modes
// see the same stretch of the trace. A fixed-rate link is unchanged.
func TestShaperRewind(t *testing.T) {
	// Opportunities at 1, 1, 4 ms (period 4 ms), a trace that is far from uniform within its period.
	tr, err := ParseTrace(strings.NewReader("1\n1\n4\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Trace: tr, Delay: 2 * time.Millisecond, QueueBytes: 100_000}
	for _, tc := range []struct {
		name   string
		now    int64 // when the rewound packet arrives
		offset int64
		want   int64 // its delivery, ms after now
	}{
		{"to the start, mid-period", 102*ms + ms/2, 0, 3},
		{"to the start, past the period's opportunities", 101*ms + ms/2, 0, 3},
		{"into the trace's gap", 251 * ms, 2 * ms, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustShaper(t, p, 1)
			run(s, []arrival{{0, 1500}, {50 * ms, 1500}})
			unrewound := *s
			s.Rewind(tc.now, tc.offset)
			got, v := s.Admit(tc.now, 1500)
			if was, _ := unrewound.Admit(tc.now, 1500); was == got {
				t.Fatalf("the case cannot tell a rewind from none: both deliver at +%d ns", was-tc.now)
			}
			if v != Deliver || got-tc.now != tc.want*ms {
				t.Errorf("delivered %v at +%.3f ms, want +%d ms", v, float64(got-tc.now)/float64(ms), tc.want)
			}
		})
	}
	fixed := mustShaper(t, Params{RateBps: 12e6, QueueBytes: 100_000}, 1)
	before := *fixed
	fixed.Rewind(5*ms, 0)
	if fixed.start != before.start {
		t.Errorf("a fixed-rate link was rewound: start %d, was %d", fixed.start, before.start)
	}
}

// After a rewind to the same offset, two links that have had different traffic lose the same packets; another
// offset loses others. Fixed-rate links too: wifi-loss-1's WiFi has no trace, only its loss.
func TestShaperRewindLoss(t *testing.T) {
	p := Params{RateBps: 100e6, Loss: 0.2, QueueBytes: 1 << 30}
	losses := func(s *Shaper, from int64) string {
		var b strings.Builder
		for i := range int64(200) {
			if _, v := s.Admit(from+i*ms, 100); v == Lost {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b := mustShaper(t, p, 7), mustShaper(t, p, 7)
	losses(a, 0)
	losses(b, 0)
	losses(b, 300*ms) // b has seen 200 more packets than a
	a.Rewind(1000*ms, 5000*ms)
	b.Rewind(1000*ms, 5000*ms)
	la, lb := losses(a, 1000*ms), losses(b, 1000*ms)
	if la != lb {
		t.Errorf("same offset, different losses:\n%s\n%s", la, lb)
	}
	if !strings.Contains(la, "x") || !strings.Contains(la, ".") {
		t.Fatalf("a 20 %% loss over 200 packets should lose some and keep some: %s", la)
	}
	c := mustShaper(t, p, 7)
	c.Rewind(1000*ms, 5001*ms)
	if lc := losses(c, 1000*ms); lc == la {
		t.Errorf("offsets 5000 and 5001 ms lost the same packets: %s", lc)
	}
	d := mustShaper(t, p, 8)
	d.Rewind(1000*ms, 5000*ms)
	if ld := losses(d, 1000*ms); ld == la {
		t.Errorf("seeds 7 and 8 lost the same packets at one offset: %s", ld)
	}
}
