package decide

import (
	"context"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// A tunnel is decided like a navigation without a path, but nothing is carried into the kernel, and a tunnel of
// unknown size takes the break-even when the distribution's θ1 lies above it.
func TestTunnel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sizes  store.History
		paused string
		check  func(t *testing.T, d Decision)
	}{
		{"never seen, the user's loads elsewhere mixed as in the proxy grid", store.History{Others: []int64{50_300, 20_300, 100_300, 3_900_000}}, "",
			func(t *testing.T, d Decision) {
				if d.Size.Known || d.BreakEven == nil || d.Theta1 == nil {
					t.Fatalf("known %v, break-even %v, θ1 %v", d.Size.Known, d.BreakEven, d.Theta1)
				}
				if got := d.UnknownSizeTheta1(); got == nil || *got != *d.BreakEven {
					t.Errorf("unknown-size θ1 %v, want the break-even %d", got, *d.BreakEven)
				}
				// The distribution's θ1 would give the small pages it holds a subflow; the break-even keeps them on WiFi.
				if *d.Theta1 > 100_300 || *d.BreakEven < 200_000 {
					t.Errorf("θ1 %d, break-even %d: want θ1 below a 100 kB page and the break-even above 200 kB", *d.Theta1, *d.BreakEven)
				}
			}},
		{"never seen, prior only", store.History{}, "",
			func(t *testing.T, d Decision) {
				if d.Theta1 == nil || *d.Theta1 != 0 || d.BreakEven == nil {
					t.Fatalf("θ1 %v, break-even %v", d.Theta1, d.BreakEven)
				}
				if got := d.UnknownSizeTheta1(); got == nil || *got != *d.BreakEven {
					t.Errorf("unknown-size θ1 %v, want the break-even %d", got, *d.BreakEven)
				}
			}},
		{"seen: the origin's own θ1 stands", store.History{Origin: []int64{3_900_000, 4_000_000}}, "",
			func(t *testing.T, d Decision) {
				if !d.Size.Known || d.BreakEven != nil {
					t.Fatalf("known %v, break-even %v", d.Size.Known, d.BreakEven)
				}
				if got := d.UnknownSizeTheta1(); got != d.Theta1 {
					t.Errorf("unknown-size θ1 %v, want the decision's %v", got, d.Theta1)
				}
			}},
		{"a site rule stands", store.History{}, "rule",
			func(t *testing.T, d Decision) {
				if d.Basis != BasisRule || d.UnknownSizeTheta1() == nil || *d.UnknownSizeTheta1() != 0 {
					t.Errorf("basis %s, θ1 %v", d.Basis, d.UnknownSizeTheta1())
				}
			}},
		{"paused: never", store.History{}, "user",
			func(t *testing.T, d Decision) {
				if d.Theta1 != nil || d.UnknownSizeTheta1() != nil || d.Paused != "user" {
					t.Errorf("θ1 %v, paused %q", d.Theta1, d.Paused)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			act := &actuator{}
			g := Given{Paths: measured(), Proto: "h2", Sizes: tc.sizes}
			if tc.paused == "rule" {
				tc.paused = ""
				g.Settings = &protocol.Prefs{Mode: "balanced", DeadlineMS: 3000, BillingDay: 1,
					Overrides: []protocol.Override{{Host: "new.example", Rule: protocol.RuleAlways}}}
			}
			dec := New(Config{Params: params(t), Links: &g, Memory: &g, Actuator: act})
			d, err := dec.Tunnel(context.Background(), "https://new.example", tc.paused)
			if err != nil {
				t.Fatal(err)
			}
			if len(act.got) != 0 || d.Actuation != "" || d.CellRxStart != nil {
				t.Errorf("a tunnel's decision was carried out: %d, %q", len(act.got), d.Actuation)
			}
			if d.Origin != "https://new.example" || d.Tab != -1 {
				t.Errorf("origin %q tab %d", d.Origin, d.Tab)
			}
			if err := d.Body().Validate(); err != nil {
				t.Error(err)
			}
			tc.check(t, d)
			if d.BreakEven != nil && d.Body().Inputs["break_even_bytes"] != *d.BreakEven {
				t.Errorf("inputs %v", d.Body().Inputs)
			}
		})
	}
}
