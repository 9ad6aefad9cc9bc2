package model

import (
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"

	models "github.com/mpsurf/mpsurf/policy-models"
)

func params(t testing.TB) *Params {
	t.Helper()
	p, err := Load(models.FS, models.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func f(x float64) *float64 { return &x }
func i64(x int64) *int64   { return &x }

// The seeds' links (seed 001 §2 and §3.2, seed 000 Table 2), as a measurement would report them.
func wifi() *Path {
	return &Path{Name: "wlan0", Kind: "wifi", Up: true, RTTMS: f(50), DownBps: f(7.04e6), UpBps: f(2.02e6), Loss: f(0)}
}
func lte() *Path {
	return &Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: f(70), DownBps: f(9.185e6), UpBps: f(2.286e6), Loss: f(0)}
}
func threeG() *Path {
	return &Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: f(160), DownBps: f(0.97e6), UpBps: f(0.331e6), Loss: f(0)}
}
func known(n int64) Size {
	return Size{Known: true, Median: i64(n), P90: i64(n), Samples: 5, Source: "test"}
}

var lteIdle = &RRC{Tech: "lte", State: "idle", SinceMS: 60000}

func TestSeedCases(t *testing.T) {
	p := params(t)
	tests := []struct {
		name string
		in   Input
		mp   bool
	}{
		{"50 KB page, LTE idle", Input{Protocol: H2, Size: known(50_000), Primary: wifi(), Secondary: lte(), RRC: lteIdle}, false},
		{"2 MB h2 page, WiFi+LTE idle", Input{Protocol: H2, Size: known(2_000_000), Primary: wifi(), Secondary: lte(), RRC: lteIdle}, true},
		{"2 MB h2 page, LTE connected", Input{Protocol: H2, Size: known(2_000_000), Primary: wifi(), Secondary: lte(),
			RRC: &RRC{Tech: "lte", State: "continuous"}}, true},
		{"2 MB h2 page, 3G secondary", Input{Protocol: H2, Size: known(2_000_000), Primary: wifi(), Secondary: threeG(),
			RRC: &RRC{Tech: "3g", State: "idle"}}, false},
		{"2 MB http/1.1 page", Input{Protocol: HTTP1, Size: known(2_000_000), Primary: wifi(), Secondary: lte(), RRC: lteIdle}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Params = p
			out := Evaluate(tc.in)
			if out.Multipath != tc.mp {
				t.Errorf("multipath %v, want %v: %s", out.Multipath, tc.mp, out.Reason)
			}
			if out.Fallback {
				t.Error("fell back with both paths measured")
			}
			for _, tm := range out.Terms {
				if tm.Value != nil {
					t.Logf("%-24s %12.3f %s", tm.Name, *tm.Value, tm.Unit)
				}
			}
			t.Logf("θ1 %d: %s", out.Theta1, out.Reason)
		})
	}
}

func TestPreferencesMoveTheta1(t *testing.T) {
	p := params(t)
	base := Input{Protocol: H2, Primary: wifi(), Secondary: lte(), RRC: lteIdle, Params: p}
	charging := base
	charging.Battery = &Battery{Present: true, Percent: 80, Charging: true}
	charging.Prefs = &protocol.Prefs{Mode: Balanced, DeadlineMS: 3000, BatteryFloorPercent: 20, ChargingUnlimited: true, QuotaBytes: i64(50e9)}
	charging.Usage = &Usage{UsedBytes: 1e9, DaysLeft: 20}
	scarce := base
	scarce.Battery = &Battery{Present: true, Percent: 60, Charging: false}
	scarce.Prefs = &protocol.Prefs{Mode: Balanced, DeadlineMS: 3000, BatteryFloorPercent: 20, ChargingUnlimited: true, QuotaBytes: i64(2e9)}
	scarce.Usage = &Usage{UsedBytes: 1.95e9, DaysLeft: 10}
	c, s := Evaluate(charging), Evaluate(scarce)
	if !(c.Theta1 < s.Theta1) {
		t.Errorf("θ1 charging with quota %d, on battery with quota nearly used %d", c.Theta1, s.Theta1)
	}
	if c.Theta2 == nil || s.Theta2 == nil || !(*c.Theta2 > *s.Theta2) {
		t.Errorf("θ2 %v vs %v", c.Theta2, s.Theta2)
	}
	if want := int64((2e9 - 1.95e9) / 10 / p.Quota.PagesPerDay); *s.Theta2 != want {
		t.Errorf("θ2 %d, want %d", *s.Theta2, want)
	}
	t.Logf("θ1 charging %d, scarce %d; θ2 %d vs %d", c.Theta1, s.Theta1, *c.Theta2, *s.Theta2)

	low := scarce
	low.Battery = &Battery{Present: true, Percent: 10}
	if out := Evaluate(low); out.Multipath {
		t.Errorf("multipath below the battery floor: %s", out.Reason)
	}
	saver := base
	saver.Prefs = &protocol.Prefs{Mode: BatterySaver, DeadlineMS: 3000}
	if out := Evaluate(saver); out.Theta2 == nil || *out.Theta2 != p.Quota.BatterySaverCapBytes || out.Theta1 <= Evaluate(base).Theta1 {
		t.Errorf("battery saver: θ1 %d θ2 %v", out.Theta1, out.Theta2)
	}
	if out := Evaluate(base); out.Theta2 != nil {
		t.Errorf("no quota, balanced: θ2 %d", *out.Theta2)
	}
}

func TestProtocolsAndUnknowns(t *testing.T) {
	p := params(t)
	out := Evaluate(Input{Protocol: H3, Size: known(5e6), Primary: wifi(), Secondary: lte(), Params: p})
	if out.Multipath || out.Protocol != H3 || !strings.Contains(out.Reason, "QUIC") || !strings.Contains(out.Reason, "not TCP") {
		t.Errorf("h3: %+v", out)
	}
	out = Evaluate(Input{Protocol: HTTP1, Size: known(5e6), Primary: wifi(), Secondary: lte(), RRC: lteIdle, Params: p})
	if out.Multipath || !strings.Contains(out.Reason, "http/1.1") {
		t.Errorf("http/1.1: %s", out.Reason)
	}
	out = Evaluate(Input{Protocol: "", Size: Size{Source: "none"}, Primary: wifi(), Secondary: lte(), RRC: lteIdle, Params: p})
	if out.Protocol != Unknown || !strings.Contains(out.Reason, "assumed h2") || !strings.Contains(out.Reason, "size unknown") ||
		!out.Multipath || out.Size.Known {
		t.Errorf("unknown size and protocol: %+v", out)
	}
	out = Evaluate(Input{Protocol: H2, Size: known(5e6), Primary: wifi(), Params: p})
	if !out.Fallback || out.Theta1 != p.BaselineTheta1 || !out.Multipath || !strings.Contains(out.Reason, "no path measurement") {
		t.Errorf("no secondary: %+v", out)
	}
	out = Evaluate(Input{Protocol: H2, Size: known(5e6), Primary: wifi(), Secondary: lte(), RRC: &RRC{Tech: "lte", State: "warp"}, Params: p})
	if !strings.Contains(out.Reason, "RRC state unknown") {
		t.Errorf("unknown RRC state: %s", out.Reason)
	}
	for _, o := range []Output{out} {
		if len(o.Reason) > 256 {
			t.Errorf("reason of %d bytes", len(o.Reason))
		}
	}
}

// Utility grows with S; θ1 falls as the secondary's bandwidth grows and rises with its RTT. Slow-start rounds make
// the curves step, so the property holds up to one initial window of bytes and 0.01 s-equivalent of utility.
func TestMonotonic(t *testing.T) {
	p := params(t)
	iw := int64(p.Transport.InitialWindow * p.Transport.MSSBytes)
	for _, state := range []string{"idle", "continuous", "long_drx"} {
		rrc := &RRC{Tech: "lte", State: state, SinceMS: 2000}
		prevT1 := int64(-1)
		for _, bw := range []float64{0.5e6, 1e6, 2e6, 4e6, 8e6, 16e6, 32e6, 64e6} {
			sec := lte()
			sec.DownBps = f(bw)
			in := Input{Protocol: H2, Primary: wifi(), Secondary: sec, RRC: rrc, Params: p}
			t1 := Evaluate(in).Theta1
			if prevT1 >= 0 && t1 > prevT1+iw {
				t.Errorf("%s: θ1 rose from %d to %d as bandwidth rose to %g", state, prevT1, t1, bw)
			}
			prevT1 = t1
			prevU := -1e18
			for s := 1e3; s <= 1e9; s *= 1.7 {
				in.Size = known(int64(s))
				u := utilityAt(in)
				if u < prevU-0.01 {
					t.Errorf("%s, %g bit/s: utility fell from %g to %g at %g B", state, bw, prevU, u, s)
				}
				prevU = u
			}
		}
		prevT1 = -1
		for _, rtt := range []float64{10, 20, 40, 70, 100, 150, 200, 300, 500} {
			sec := lte()
			sec.RTTMS = f(rtt)
			t1 := Evaluate(Input{Protocol: H2, Primary: wifi(), Secondary: sec, RRC: rrc, Params: p}).Theta1
			if t1 < prevT1-iw {
				t.Errorf("%s: θ1 fell from %d to %d as RTT rose to %g ms", state, prevT1, t1, rtt)
			}
			prevT1 = t1
		}
	}
}

// utilityAt reads the utility term of an evaluation at a known size.
func utilityAt(in Input) float64 {
	for _, tm := range Evaluate(in).Terms {
		if tm.Name == "utility" && tm.Value != nil {
			return *tm.Value
		}
	}
	return 0
}

func BenchmarkEvaluate(b *testing.B) {
	p := params(b)
	in := Input{Protocol: H2, Size: Size{}, Primary: wifi(), Secondary: lte(), RRC: lteIdle, Params: p}
	b.ReportAllocs()
	for b.Loop() {
		Evaluate(in)
	}
}

func TestOverride(t *testing.T) {
	p := params(t)
	for _, tc := range []struct {
		name     string
		override string
		proto    string
		want     bool
	}{
		{"auto keeps the model's single path", "", H2, false},
		{"always wins over a small page", OverrideAlways, H2, true},
		{"never wins", OverrideNever, H2, false},
		{"always cannot make QUIC multipath", OverrideAlways, H3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Protocol: tc.proto, Size: known(50_000), Primary: wifi(), Secondary: lte(), RRC: lteIdle, Params: p}
			in.Override = tc.override
			out := Evaluate(in)
			if out.Multipath != tc.want {
				t.Fatalf("multipath = %v, want %v (%s)", out.Multipath, tc.want, out.Reason)
			}
			if tc.override != "" && !strings.Contains(out.Reason, "site rule") {
				t.Errorf("reason %q does not name the site rule", out.Reason)
			}
		})
	}
}
