package paths

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// The estimator inverts its own slow-start timeline: a span computed for a rate gives that rate back; a span no
// longer than the round trips alone gives a lower bound.
func TestEstimateRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rtt   time.Duration
		span  time.Duration
		total int64
		bps   float64
		bound bool
	}{
		// 64 KiB at 7.04 Mbit/s, 50 ms: rounds of 14.5, 29 and 22 kB; the last two after one RTT each.
		{"seeds' WiFi", 50 * time.Millisecond, 0, 65536, 7.04e6, false},
		{"3G", 160 * time.Millisecond, 0, 65536, 0.97e6, false},
		{"slow hotspot", 50 * time.Millisecond, 0, 65536, 2e6, false},
		{"fast WiFi: only a bound", 20 * time.Millisecond, 41 * time.Millisecond, 65536, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			span := tc.span
			first := int64(1448)
			if span == 0 {
				span = spanFor(tc.rtt, tc.bps/8, first, tc.total)
			}
			bps, bound := EstimateRate(tc.rtt, span, tc.total-first, tc.total)
			if bound != tc.bound {
				t.Fatalf("bound %v, want %v (%.0f bit/s over %v)", bound, tc.bound, bps, span)
			}
			if !tc.bound && math.Abs(bps/tc.bps-1) > 0.02 {
				t.Errorf("%.0f bit/s, want %.0f", bps, tc.bps)
			}
			if tc.bound && bps <= 0 {
				t.Errorf("bound %.0f", bps)
			}
		})
	}
	if _, bound := EstimateRate(0, time.Second, 10, 10); !bound {
		t.Error("no RTT: not a bound")
	}
}

// spanFor is the span a link of rate r (bytes/s) gives, the first read carrying first bytes.
func spanFor(rtt time.Duration, r float64, first, total int64) time.Duration {
	return time.Duration(slowStartSpan(rtt.Seconds(), r, first, total) * 1e9)
}

// A real TLS server on loopback: the probe reads its first 64 KiB by range and checks the pinned key. Loopback is
// faster than a 64 KiB transfer can tell, so the result is usually only a lower bound; on a busy machine the
// transfer's scheduling delays can make it a measurement instead, still far above any real link's 10 Mbit/s.
func TestProbeRateAgainstAServer(t *testing.T) {
	body := make([]byte, 1<<20)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "1m.bin", time.Time{}, bytes.NewReader(body))
	}))
	defer srv.Close()
	h := sha256.Sum256(srv.Certificate().RawSubjectPublicKeyInfo)
	pin := base64.StdEncoding.EncodeToString(h[:])
	lo := netip.MustParseAddr("127.0.0.1")
	ctx := context.Background()
	r, err := ProbeRate(ctx, lo, srv.URL+"/1m.bin", []string{pin}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes != RateProbeBytes || r.RTT <= 0 || r.BPS < 10e6 {
		t.Errorf("%+v", r)
	}
	if _, err := ProbeRate(ctx, lo, srv.URL+"/1m.bin", []string{"bm90IHRoZSBwaW4="}, 5*time.Second); err == nil {
		t.Error("a certificate without the pinned key accepted")
	}
	if _, err := ProbeRate(ctx, lo, "http://"+srv.Listener.Addr().String()+"/", nil, time.Second); err == nil {
		t.Error("a plain http URL accepted")
	}
}
