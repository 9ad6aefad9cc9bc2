package decide

import (
	"context"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// A tunnel is decided like a navigation without a path, and no load is counted against it: the relay hands the
// helper the tunnel's own connection.
func TestTunnel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sizes  store.History
		paused string
		check  func(t *testing.T, d Decision)
	}{
		{"never seen, the user's loads elsewhere mixed", store.History{Others: []int64{50_300, 20_300, 100_300, 3_900_000}}, "",
			func(t *testing.T, d Decision) {
				// θ1 keeps the small pages the user loads on WiFi and lets a large one have its subflow early.
				if d.Size.Known || d.Theta1 == nil || *d.Theta1 <= 100_300 || *d.Theta1 > 1_000_000 {
					t.Errorf("known %v, θ1 %v: want above 100.3 kB and at most 1 MB", d.Size.Known, d.Theta1)
				}
			}},
		{"never seen, prior only", store.History{}, "",
			func(t *testing.T, d Decision) {
				if d.Theta1 == nil || *d.Theta1 < 100_000 || *d.Theta1 > 1_000_000 {
					t.Errorf("θ1 %v: want above a warm-cache page and at most 1 MB", d.Theta1)
				}
			}},
		{"seen: the origin's own θ1", store.History{Origin: []int64{3_900_000, 4_000_000}}, "",
			func(t *testing.T, d Decision) {
				if !d.Size.Known || !d.Multipath || d.Theta1 == nil || *d.Theta1 >= 3_900_000 {
					t.Errorf("known %v, multipath %v, θ1 %v: want multipath below the pages' size", d.Size.Known, d.Multipath, d.Theta1)
				}
			}},
		{"a site rule stands", store.History{}, "rule",
			func(t *testing.T, d Decision) {
				if d.Basis != BasisRule || d.Theta1 == nil || *d.Theta1 != 0 {
					t.Errorf("basis %s, θ1 %v", d.Basis, d.Theta1)
				}
			}},
		{"paused: never", store.History{}, "user",
			func(t *testing.T, d Decision) {
				if d.Theta1 != nil || d.Paused != "user" {
					t.Errorf("θ1 %v, paused %q", d.Theta1, d.Paused)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Given{Paths: measured(), Proto: "h2", Sizes: tc.sizes}
			if tc.paused == "rule" {
				tc.paused = ""
				g.Settings = &protocol.Prefs{Mode: "balanced", DeadlineMS: 3000, BillingDay: 1,
					Overrides: []protocol.Override{{Host: "new.example", Rule: protocol.RuleAlways}}}
			}
			dec := New(Config{Params: params(t), Links: &g, Memory: &g})
			d, err := dec.Tunnel(context.Background(), "https://new.example", tc.paused)
			if err != nil {
				t.Fatal(err)
			}
			if d.Actuation != "" || d.CellRxStart != nil {
				t.Errorf("a tunnel's decision was carried out: %q", d.Actuation)
			}
			if d.Origin != "https://new.example" || d.Tab != -1 {
				t.Errorf("origin %q tab %d", d.Origin, d.Tab)
			}
			if err := d.Body().Validate(); err != nil {
				t.Error(err)
			}
			tc.check(t, d)
		})
	}
}
