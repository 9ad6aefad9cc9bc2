package decide

import (
	"context"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

func TestTransfer(t *testing.T) {
	never := &protocol.Prefs{Mode: "balanced", DeadlineMS: 3000, BillingDay: 1, HeaderScope: "all",
		Overrides: []protocol.Override{{Host: "files.example", Rule: "never"}}}
	quota := int64(0)
	spent := &protocol.Prefs{Mode: "balanced", DeadlineMS: 3000, BillingDay: 1, HeaderScope: "all", QuotaBytes: &quota}
	for _, tc := range []struct {
		name   string
		given  Given
		origin string
		size   int64
		paused string
		want   bool
		reason string
	}{
		{"a large file on measured links is worth both", Given{Paths: measured()}, "https://files.example", 32 << 20, "", true, "multipath"},
		{"a tiny file is not", Given{Paths: measured()}, "https://files.example", 2 << 10, "", false, "single path"},
		{"the user's site rule says never", Given{Paths: measured(), Settings: never}, "https://files.example", 32 << 20, "", false, "site rule"},
		{"the quota is used up", Given{Paths: measured(), Settings: spent}, "https://files.example", 32 << 20, "", false, "quota"},
		{"multipath paused", Given{Paths: measured()}, "https://files.example", 32 << 20, "user", false, "paused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.given
			d := New(Config{Params: params(t), Links: &g, Memory: &g})
			dec, err := d.Transfer(context.Background(), Request{Origin: tc.origin, Tab: -1, Nav: "download-1", Paused: tc.paused}, tc.size, "h2")
			if err != nil {
				t.Fatal(err)
			}
			if dec.Multipath != tc.want || !strings.Contains(dec.Reason, tc.reason) {
				t.Errorf("multipath %v (%s), want %v with %q", dec.Multipath, dec.Reason, tc.want, tc.reason)
			}
			if !dec.Size.Known || *dec.Size.Median != tc.size || dec.Input.Size.Source != "transfer" {
				t.Errorf("size %+v", dec.Size)
			}
		})
	}
}
