package radio

import (
	"testing"
	"time"
)

func TestDemote(t *testing.T) {
	lte := loadModel(t, LTE)
	g3 := loadModel(t, ThreeG)
	wifi := loadModel(t, WiFi)
	ms := time.Millisecond
	cases := []struct {
		m      *Model
		anchor State
		since  time.Duration
		want   string
		left   time.Duration // checked when > 0
	}{
		{lte, Idle, time.Hour, "idle", 0},
		{lte, Promoting, 0, "promotion", 260 * ms},
		{lte, Promoting, 259 * ms, "promotion", 1 * ms},
		{lte, Promoting, 300 * ms, "inactivity", 60 * ms},
		{lte, Connected, 0, "inactivity", 100 * ms},
		{lte, Connected, 99 * ms, "inactivity", 1 * ms},
		{lte, Connected, 100 * ms, "short_drx", 20 * ms},
		{lte, Connected, 120 * ms, "long_drx", 11456 * ms},
		{lte, Connected, 11575 * ms, "long_drx", 1 * ms},
		{lte, Connected, 11576 * ms, "idle", 0},
		{lte, Connected, -5 * ms, "inactivity", 100 * ms},
		{g3, Promoting, 1999 * ms, "promo_idle_dch", 1 * ms},
		{g3, Promoting, 2 * time.Second, "dch_tail", 5 * time.Second},
		{g3, Connected, 4999 * ms, "dch_tail", 1 * ms},
		{g3, Connected, 5 * time.Second, "fach", 12 * time.Second},
		{g3, Connected, 17 * time.Second, "idle", 0},
		{g3, State{KindTail, 1}, 11 * time.Second, "fach", 1 * time.Second},
		{g3, State{KindPromotion, 1}, 1 * time.Second, "promo_fach_dch", 500 * ms},
		{g3, State{KindPromotion, 1}, 1600 * ms, "dch_tail", 4900 * ms},
		{wifi, Connected, 249 * ms, "tail", 1 * ms},
		{wifi, Connected, 250 * ms, "idle", 0},
	}
	for _, c := range cases {
		s, left := c.m.Demote(c.anchor, c.since)
		if got := c.m.Name(s); got != c.want {
			t.Errorf("%s: Demote(%s, %v) = %s, want %s", c.m.Technology, c.m.Name(c.anchor), c.since, got, c.want)
		}
		if c.left > 0 && left != c.left {
			t.Errorf("%s: Demote(%s, %v) leaves %v in state, want %v", c.m.Technology, c.m.Name(c.anchor), c.since, left, c.left)
		}
	}
}

func TestWake(t *testing.T) {
	lte := loadModel(t, LTE)
	g3 := loadModel(t, ThreeG)
	wifi := loadModel(t, WiFi)
	down := func(n int) Packet { return Packet{T: 1, Bytes: n} }
	up := func(n int) Packet { return Packet{T: 1, Up: true, Bytes: n} }
	cases := []struct {
		m         *Model
		cur       State
		p         Packet
		want      string
		wantReset bool
	}{
		{lte, Idle, down(100), "promotion", true},
		{lte, Promoting, down(100), "promotion", false},
		{lte, State{KindTail, 0}, down(100), "continuous", true},
		{lte, State{KindTail, 2}, up(100), "continuous", true},
		{wifi, Idle, down(100), "active", true}, // no promotion in the WiFi model
		{g3, Idle, down(40), "promo_idle_dch", true},
		{g3, State{KindTail, 0}, down(1500), "dch", true},
		{g3, State{KindTail, 1}, down(475), "fach", true}, // at the RLC threshold: stays on FACH
		{g3, State{KindTail, 1}, down(476), "promo_fach_dch", true},
		{g3, State{KindTail, 1}, up(543), "fach", true},
		{g3, State{KindTail, 1}, up(544), "promo_fach_dch", true},
		{g3, State{KindPromotion, 1}, down(1500), "promo_fach_dch", false},
	}
	for _, c := range cases {
		s, reset := c.m.Wake(c.cur, c.p)
		if got := c.m.Name(s); got != c.want || reset != c.wantReset {
			t.Errorf("%s: Wake(%s, %+v) = %s reset=%v, want %s reset=%v", c.m.Technology, c.m.Name(c.cur), c.p, got, reset, c.want, c.wantReset)
		}
	}
}

func TestStep(t *testing.T) {
	lte := loadModel(t, LTE)
	p := &Packet{T: 1, Bytes: 1400}
	if s, reset := lte.Step(Connected, 5*time.Second, nil); lte.Name(s) != "long_drx" || reset {
		t.Errorf("Step without packet = %s reset=%v", lte.Name(s), reset)
	}
	if s, reset := lte.Step(Connected, 5*time.Second, p); s != Connected || !reset {
		t.Errorf("Step with packet in long DRX = %s reset=%v, want continuous, reset", lte.Name(s), reset)
	}
	if s, reset := lte.Step(Connected, 20*time.Second, p); s != Promoting || !reset {
		t.Errorf("Step with packet after the tail = %s reset=%v, want promotion, reset", lte.Name(s), reset)
	}
	if s, reset := lte.Step(Promoting, 100*time.Millisecond, p); s != Promoting || reset {
		t.Errorf("Step with packet during promotion = %s reset=%v, want promotion, no reset", lte.Name(s), reset)
	}
}

func TestInvalidStatePanics(t *testing.T) {
	g3 := loadModel(t, ThreeG)
	for _, s := range []State{{KindTail, 2}, {KindTail, -1}, {KindPromotion, 0}, {Kind(9), 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Demote(%+v) did not panic", s)
				}
			}()
			g3.Demote(s, 0)
		}()
	}
}
