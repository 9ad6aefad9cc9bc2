//go:build linux

package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/e2e/profiles"
	"github.com/mpsurf/mpsurf/native-host/cli"
)

func TestParseMixed(t *testing.T) {
	tests := []struct {
		args   []string
		pos    []string
		prefix string
	}{
		{[]string{"mp"}, []string{"mp"}, "mps"},
		{[]string{"mp", "--prefix", "x"}, []string{"mp"}, "x"},
		{[]string{"--prefix=x", "mp"}, []string{"mp"}, "x"},
		{[]string{"--prefix=x", "--", "sh", "-c", "--prefix"}, []string{"sh", "-c", "--prefix"}, "x"},
		{nil, nil, "mps"},
	}
	for _, tt := range tests {
		t.Setenv("MPS_PREFIX", "")
		fs, prefix := newFlags("t")
		pos, err := cli.ParseMixed(fs, tt.args)
		if err != nil || !slices.Equal(pos, tt.pos) || *prefix != tt.prefix {
			t.Errorf("cli.ParseMixed(%q) = %q, prefix %q, %v; want %q, %q", tt.args, pos, *prefix, err, tt.pos, tt.prefix)
		}
	}
	fs, _ := newFlags("t")
	if _, err := cli.ParseMixed(fs, []string{"mp", "--nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown flag: %v", err)
	}
}

func TestGoodputProfile(t *testing.T) {
	for _, tt := range []struct {
		rate  float64
		queue int
	}{
		{1, 75000},   // 2 x BDP = 12,500 B: the baseline 50-packet queue is larger
		{10, 125000}, // 2 x 10 Mbit/s x 50 ms
		{50, 625000}, // 2 x 50 Mbit/s x 50 ms
	} {
		p, err := goodputProfile(tt.rate)
		if err != nil {
			t.Fatal(err)
		}
		w := p.Links["wlan0"]
		if w.QueueBytes != tt.queue || *w.Down.RateMbit != tt.rate || *w.Up.RateMbit != tt.rate || w.RTTMs() != 50 {
			t.Errorf("rate %g: queue %d (want %d), rates %v/%v, RTT %v", tt.rate, w.QueueBytes, tt.queue, *w.Down.RateMbit, *w.Up.RateMbit, w.RTTMs())
		}
		if err := w.Params(w.Down).Validate(); err != nil {
			t.Error(err)
		}
	}
}

func TestFailures(t *testing.T) {
	rep := accuracyReport{
		RTT:     []rttRow{{Profile: "a", Iface: "wlan0", ErrorMs: 1.9}, {Profile: "b", Iface: "wwan0", ErrorMs: -2.1}},
		Goodput: []goodputRow{{RateMbit: 1, Dir: "down", IPErrPct: -4.9}, {RateMbit: 50, Dir: "up", IPErrPct: 5.2}},
	}
	got := rep.failures()
	if len(got) != 2 || !strings.Contains(got[0], "RTT b wwan0") || !strings.Contains(got[1], "rate 50 up") {
		t.Errorf("failures() = %q", got)
	}
	var b strings.Builder
	printReport(&b, rep)
	if !strings.Contains(b.String(), "wwan0") || !strings.Contains(b.String(), "-4.90 %") {
		t.Errorf("report:\n%s", b.String())
	}
}

// Bounds of what the emulator did, by its own clock.
const (
	// A packet may go out up to linkem's earlyNs (10 us) before its time, and a pure ACK is a byte shorter
	// than a probe (8 bits at 0.331 Mbit/s: 24 us): 0.05 ms covers both, each way.
	earlySlackMs = 0.05
	// The emulator's rate is the bytes it wrote over the time its rate stage spent sending them: it differs
	// from the configured rate only by each packet's sending time rounded to a whole nanosecond.
	emulatorRateTolerancePct = 0.1
)

// TestIntegrationAccuracy sends real TCP through the emulated links and checks what the emulator did, by its own
// clock, which the machine's load cannot bend: each probe packet was held for its direction's delay and
// serialization (the RTT the profile sets; at most one other packet queued ahead), every byte of a bulk transfer
// was sent at the configured rate, and every byte the emulator wrote reached the receiving interface. The wall
// clock bounds only from below: no round trip is shorter than its link allows. How close round trips and
// transfers come to the configuration on the wall clock of this shared machine is a benchmark, `testbed
// accuracy` (npm run bench), which holds those tolerances (printReport, failures); the figures are logged here.
func TestIntegrationAccuracy(t *testing.T) {
	needRoot(t)
	r, err := newRig(testPrefix("acc"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	plan := quickPlan()
	for _, name := range []string{"baseline", "3g"} {
		p, err := profiles.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.tb.SetProfile(p); err != nil {
			t.Fatal(err)
		}
		for _, iface := range []string{"wlan0", "wwan0"} {
			row, err := r.measureRTT(p, iface, plan.pings)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("RTT %s %s: configured %.1f, expected %.2f; emulator %.2f (its deliveries %.3f ms late per round trip); wall clock median %.2f ms",
				name, iface, row.ConfiguredMs, row.ExpectedMs, row.EmulatorMs, row.LateMs, row.MedianMs)
			if row.EmulatorMs < row.ExpectedMs-earlySlackMs || row.EmulatorMs > row.ExpectedMs+rttToleranceMs {
				t.Errorf("RTT %s %s: the emulator held a round trip %.3f ms, expected %.3f (-%.2f, +%.0f)", name, iface, row.EmulatorMs, row.ExpectedMs, earlySlackMs, rttToleranceMs)
			}
			if row.MedianMs < row.ExpectedMs-earlySlackMs {
				t.Errorf("RTT %s %s: measured %.3f ms, shorter than the link's %.3f", name, iface, row.MedianMs, row.ExpectedMs)
			}
		}
	}
	for _, rate := range plan.rates {
		// The wall-clock window is only logged: a short transfer does.
		row, err := r.measureGoodput(rate, "down", 300*time.Millisecond, 700*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rate %g Mbit/s: emulator %.4f Mbit/s over %d B (%.3f ms late per packet); wall clock: IP %.3f (%+.2f %%), busy %.1f %%, payload %.3f Mbit/s",
			rate, row.EmulatorMbit, row.EmulatorBytes, row.LateMs, row.IPMbit, row.IPErrPct, row.BusyPct, row.PayloadMbit)
		if row.EmulatorBytes == 0 || row.KernelBytes != row.EmulatorBytes {
			t.Errorf("rate %g Mbit/s: the emulator wrote %d IP bytes, the interface received %d", rate, row.EmulatorBytes, row.KernelBytes)
		}
		if pct := (row.EmulatorMbit/rate - 1) * 100; math.Abs(pct) > emulatorRateTolerancePct {
			t.Errorf("rate %g Mbit/s: the emulator sent at %.4f Mbit/s by its own clock, %+.3f %% off", rate, row.EmulatorMbit, pct)
		}
	}
}
