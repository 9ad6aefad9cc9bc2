package paths

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// While held (multipath paused, a cellular cap reached), no probe of the sampler's own starts on a cellular path;
// a WiFi path due one still gets it.
func TestHoldCellularStopsProbes(t *testing.T) {
	old := time.Unix(1000, 0)
	s := &Sampler{cfg: Config{ProbeTarget: "192.0.2.1:443", RateProbeURL: "https://192.0.2.1/x", CellularProbes: true},
		paths: map[string]*pathState{
			"wwan0": {iface: Iface{Name: "wwan0", Kind: Cellular, Up: true}, addrs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}, down: NewRate(time.Second, time.Minute, time.Second), up: NewRate(time.Second, time.Minute, time.Second)},
			"wlan0": {iface: Iface{Name: "wlan0", Kind: WiFi, Up: true}, addrs: []netip.Addr{netip.MustParseAddr("10.0.1.2")}, down: NewRate(time.Second, time.Minute, time.Second), up: NewRate(time.Second, time.Minute, time.Second)},
		}, known: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a probe that starts ends at once: only whether it started counts here
	now := old.Add(time.Hour)
	s.HoldCellular(true)
	out, rates := make(chan probeResult, 4), make(chan rateResult, 4)
	s.startProbes(ctx, now, out)
	s.startRateProbes(ctx, now, rates)
	if s.paths["wwan0"].probing || s.paths["wwan0"].rateProbing {
		t.Error("a probe started over the cellular path while it was held")
	}
	if !s.paths["wlan0"].probing {
		t.Error("the WiFi path, due a probe, got none")
	}
	s.HoldCellular(false)
	s.startProbes(ctx, now, out)
	if !s.paths["wwan0"].probing {
		t.Error("released, the cellular path due a probe got none")
	}
}

// A kept RTT counts as the last probe: a new host waits CellProbeEvery from the kept estimate's time before it
// probes the cellular path (ProbeEvery on WiFi), rather than probing at every start.
func TestKeptRTTDefersProbes(t *testing.T) {
	kept := time.Unix(1000, 0)
	rtt := 70.0
	for _, c := range []struct {
		name  string
		kind  string
		after time.Duration
		seed  bool
		want  bool
	}{
		{"cellular, a minute after a kept RTT", Cellular, time.Minute, true, false},
		{"cellular, past CellProbeEvery", Cellular, CellProbeEvery + time.Second, true, true},
		{"cellular, nothing kept", Cellular, time.Minute, false, true},
		{"WiFi, a minute after a kept RTT", WiFi, time.Minute, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := &pathState{iface: Iface{Name: "if0", Kind: c.kind, Up: true}, addrs: []netip.Addr{netip.MustParseAddr("10.0.0.2")},
				down: NewRate(time.Second, time.Minute, time.Second), up: NewRate(time.Second, time.Minute, time.Second)}
			now := kept.Add(c.after)
			if c.seed {
				ps.seed(Seed{RTTMS: &rtt, At: kept}, now)
			}
			s := &Sampler{cfg: Config{ProbeTarget: "192.0.2.1:443"}, paths: map[string]*pathState{"if0": ps}, known: map[string]time.Time{}}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			s.startProbes(ctx, now, make(chan probeResult, 1))
			if ps.probing != c.want {
				t.Errorf("probe started %v, want %v", ps.probing, c.want)
			}
		})
	}
}
