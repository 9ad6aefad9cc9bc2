package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/paths"
	"github.com/mpsurf/mpsurf/native-host/store"
)

func TestCycleStartAndDaysLeft(t *testing.T) {
	d := func(y int, m time.Month, day, h int) time.Time { return time.Date(y, m, day, h, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		now        time.Time
		billingDay int64
		start      time.Time
		left       int64
	}{
		{d(2026, 11, 22, 12), 1, d(2026, 11, 1, 0), 9},
		{d(2026, 11, 22, 12), 25, d(2026, 10, 25, 0), 3},
		{d(2026, 11, 25, 0), 25, d(2026, 11, 25, 0), 30},
		// 31 on a 30-day month is its last day; February clamps too.
		{d(2026, 11, 30, 12), 31, d(2026, 11, 30, 0), 31},
		{d(2026, 3, 1, 12), 31, d(2026, 2, 28, 0), 30}, // renews on March 31
		{d(2026, 1, 5, 0), 10, d(2025, 12, 10, 0), 5},
		// Out of range falls back to the 1st.
		{d(2026, 11, 22, 0), 0, d(2026, 11, 1, 0), 9},
	} {
		if got := CycleStart(tc.now, tc.billingDay); !got.Equal(tc.start) {
			t.Errorf("CycleStart(%v, %d) = %v, want %v", tc.now, tc.billingDay, got, tc.start)
		}
		if got := DaysLeft(tc.now, tc.billingDay); got != tc.left {
			t.Errorf("DaysLeft(%v, %d) = %d, want %d", tc.now, tc.billingDay, got, tc.left)
		}
	}
}

func TestPickPaths(t *testing.T) {
	rtt := 20.0
	ps := []paths.Path{
		{Name: "eth0", Kind: paths.Ethernet, Up: true, RTTMS: &rtt},
		{Name: "wwan0", Kind: paths.Cellular, Up: true},
		{Name: "wlan1", Kind: paths.WiFi, Up: false},
		{Name: "wlan0", Kind: paths.WiFi, Up: true},
	}
	mean := 15e6
	ps[1].DownMeanBPS, ps[1].DownMeanN = &mean, 4
	p, s := PickPaths(ps)
	if p == nil || p.Name != "wlan0" || s == nil || s.Name != "wwan0" {
		t.Fatalf("primary %+v secondary %+v, want wlan0 and wwan0", p, s)
	}
	if s.DownMeanBps == nil || *s.DownMeanBps != mean || s.DownMeanN != 4 {
		t.Errorf("the cellular path's long-run rate did not reach the model: %v over %d", s.DownMeanBps, s.DownMeanN)
	}
	p, s = PickPaths(ps[:2])
	if p == nil || p.Name != "eth0" || *p.RTTMS != 20 {
		t.Errorf("without WiFi the wired path is primary: %+v", p)
	}
	if p, s = PickPaths(nil); p != nil || s != nil {
		t.Errorf("no paths: %+v %+v", p, s)
	}
}

func TestKeptEstimatesFillWhatIsNotMeasuredYet(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	old := json.RawMessage(`{"name":"wwan0","kind":"cellular","up":true,"rtt_ms":70,"down_bps":9185000,"up_bps":2286000,"loss":0,"down_age_s":40,"down_mean_bps":12000000,"down_mean_n":6}`)
	stale := json.RawMessage(`{"name":"wlan0","kind":"wifi","up":true,"rtt_ms":50,"down_bps":7040000}`)
	if err := db.SavePaths(ctx, time.Now().Add(-time.Minute), map[string]json.RawMessage{"wwan0": old}); err != nil {
		t.Fatal(err)
	}
	if err := db.SavePaths(ctx, time.Now().Add(-EstimateMaxAge-time.Minute), map[string]json.RawMessage{"wlan0": stale}); err != nil {
		t.Fatal(err)
	}
	f := NewMeter(nil, db, nil)
	f.loadEstimates(ctx)

	live := 30.0
	cell := &model.Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: &live}
	f.fillFromKept(cell)
	if *cell.RTTMS != 30 {
		t.Errorf("a live RTT was replaced: %v", *cell.RTTMS)
	}
	if cell.DownBps == nil || *cell.DownBps != 9185000 || cell.UpBps == nil || cell.Loss == nil {
		t.Errorf("kept rate not used: %+v", cell)
	}
	// The link's long-run level comes with it: an aged rate moves towards it rather than the prior.
	if cell.DownMeanBps == nil || *cell.DownMeanBps != 12e6 || cell.DownMeanN != 6 {
		t.Errorf("kept long-run rate not used: %v over %d", cell.DownMeanBps, cell.DownMeanN)
	}
	// Its age is the measurement's: 40 s when it was kept a minute ago, not the minute alone.
	if a := cell.DownAgeS; a == nil || *a < 99 || *a > 110 {
		t.Errorf("kept rate's age %v, want about 100 s", a)
	}
	wifi := &model.Path{Name: "wlan0", Kind: "wifi", Up: true}
	f.fillFromKept(wifi)
	if wifi.RTTMS != nil || wifi.DownBps != nil {
		t.Errorf("an estimate older than %v was used: %+v", EstimateMaxAge, wifi)
	}
}

// A lower bound reaches the model as one, gives way to a measurement kept by an earlier host, and is never kept
// as a measurement for the next.
func TestBoundRates(t *testing.T) {
	bps := 0.74e6
	for _, src := range []string{paths.SourcePassiveBound, paths.SourceProbeBound} {
		m := toModel(paths.Path{Name: "wlan0", Kind: paths.WiFi, Up: true, DownBPS: &bps, DownSource: &src})
		if m.DownBps == nil || *m.DownBps != bps || !m.DownBound {
			t.Errorf("%s: %+v, want the rate as a bound", src, m)
		}
	}
	src := paths.SourcePassive
	if m := toModel(paths.Path{Name: "wlan0", Kind: paths.WiFi, Up: true, DownBPS: &bps, DownSource: &src}); m.DownBound {
		t.Errorf("a passive measurement read as a bound: %+v", m)
	}

	db, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	kept := map[string]json.RawMessage{
		"wlan0": json.RawMessage(`{"name":"wlan0","kind":"wifi","up":true,"rtt_ms":50,"down_bps":7040000}`),
		"wlan1": json.RawMessage(`{"name":"wlan1","kind":"wifi","up":true,"rtt_ms":50,"down_bps":740000,"down_bound":true}`),
	}
	if err := db.SavePaths(ctx, time.Now().Add(-time.Minute), kept); err != nil {
		t.Fatal(err)
	}
	f := NewMeter(nil, db, nil)
	f.loadEstimates(ctx)
	live := &model.Path{Name: "wlan0", Kind: "wifi", Up: true, DownBps: &bps, DownBound: true}
	f.fillFromKept(live)
	if live.DownBps == nil || *live.DownBps != 7.04e6 || live.DownBound {
		t.Errorf("a live bound beside a kept measurement: %+v, want the measurement", live)
	}
	other := &model.Path{Name: "wlan1", Kind: "wifi", Up: true}
	f.fillFromKept(other)
	if other.DownBps == nil || !other.DownBound {
		t.Errorf("a kept bound filled in as %+v, want it still a bound", other)
	}
	// A held rate is kept with its age, and forgotten once older than the sampler's memory of one.
	for _, c := range []struct {
		keptAge float64
		want    bool
	}{{30, true}, {paths.BoundHorizon.Seconds() - 30, false}} {
		est := fmt.Sprintf(`{"name":"wlan3","kind":"wifi","up":true,"down_bps":7e6,"down_sustained_bps":2.9e6,"down_sustained_age_s":%g}`, c.keptAge)
		if err := db.SavePaths(ctx, time.Now().Add(-time.Minute), map[string]json.RawMessage{"wlan3": json.RawMessage(est)}); err != nil {
			t.Fatal(err)
		}
		f.loadEstimates(ctx)
		p := &model.Path{Name: "wlan3", Kind: "wifi", Up: true, DownBps: &bps}
		f.fillFromKept(p)
		if got := p.DownSustainedBps != nil; got != c.want {
			t.Errorf("held rate kept %g s before: filled in %v, want %v", c.keptAge, got, c.want)
		} else if got && (*p.DownSustainedBps != 2.9e6 || *p.DownSustainedAgeS < 89 || *p.DownSustainedAgeS > 100) {
			t.Errorf("held rate kept 30 s before a minute ago: %g at %g s", *p.DownSustainedBps, *p.DownSustainedAgeS)
		}
	}
	// Bound against bound, the faster one stands while it is young enough.
	for _, c := range []struct {
		name       string
		live, kept float64
		keptAge    float64 // s, when kept a minute ago
		want       float64
	}{
		{"a slower live bound", 0.5e6, 0.74e6, 30, 0.74e6},
		{"a faster live bound", 2e6, 0.74e6, 30, 2e6},
		{"a kept bound older than the bound horizon", 0.5e6, 0.74e6, paths.BoundHorizon.Seconds(), 0.5e6},
	} {
		est := fmt.Sprintf(`{"name":"wlan2","kind":"wifi","up":true,"down_bps":%g,"down_bound":true,"down_age_s":%g}`, c.kept, c.keptAge)
		if err := db.SavePaths(ctx, time.Now().Add(-time.Minute), map[string]json.RawMessage{"wlan2": json.RawMessage(est)}); err != nil {
			t.Fatal(err)
		}
		f.loadEstimates(ctx)
		v := c.live
		p := &model.Path{Name: "wlan2", Kind: "wifi", Up: true, DownBps: &v, DownBound: true}
		f.fillFromKept(p)
		if p.DownBps == nil || *p.DownBps != c.want || !p.DownBound {
			t.Errorf("%s: %+v, want a bound of %g", c.name, p, c.want)
		}
	}
}
