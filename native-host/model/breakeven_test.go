package model

import (
	"fmt"
	"testing"
)

// The break-even is where multipath from the first byte starts to pay: a page known to be just above it is decided
// multipath, one just below it is not, on the same links, and a never-seen page's θ1 from the mixed size
// distribution lies above it (the reason a tunnel of unknown size takes it instead).
func TestBreakEven(t *testing.T) {
	mixed := Size{Others: []int64{20000, 50000, 60000, 80000, 100000, 150000, 1000000, 1500000, 2000000, 3000000}}
	for _, tc := range []struct {
		name       string
		prim, sec  *Path
		rrc        *RRC
		proto      string
		lo, hi     int64 // the break-even lies between these
		wantAbsent bool
	}{
		{"seed links, radio idle", wifi(), lte(), lteIdle, H2, 150_000, 2_000_000, false},
		{"seed links, radio connected: no promotion to pay", wifi(), lte(), lteConnected, H2, 1_000, 600_000, false},
		{"http/1.1: per connection", wifi(), lte(), lteIdle, HTTP1, 20_000, 400_000, false},
		{"3G", wifi(), g3(), g3Idle, H2, 1_000_000, 100_000_000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Protocol: tc.proto, Primary: tc.prim, Secondary: tc.sec, RRC: tc.rrc, Size: mixed}
			out := eval(t, in)
			if tc.wantAbsent {
				if out.BreakEven != nil {
					t.Fatalf("break-even %d on a link where multipath never pays (θ1 %v)", *out.BreakEven, out.Theta1)
				}
				return
			}
			if out.BreakEven == nil {
				t.Fatalf("no break-even; θ1 %v: %s", out.Theta1, out.Reason)
			}
			be := *out.BreakEven
			if be < tc.lo || be > tc.hi {
				t.Errorf("break-even %d, want %d..%d", be, tc.lo, tc.hi)
			}
			conns := int64(1)
			if tc.proto == HTTP1 {
				conns = int64(params(t).HTTP1.Connections)
			}
			// The same links with the page's size known exactly, either side of the break-even (the bisection's
			// margin is size_margin, 10 %).
			above := in
			above.Size = Size{Known: true, Exact: true, Median: i64(be * conns * 115 / 100)}
			if o := eval(t, above); o.Theta1 == nil || *o.Theta1 != 0 {
				t.Errorf("a page of %d bytes, above the break-even: θ1 %v, want 0: %s", *above.Size.Median, o.Theta1, o.Reason)
			}
			below := in
			below.Size = Size{Known: true, Exact: true, Median: i64(be * conns * 85 / 100)}
			if o := eval(t, below); o.Multipath {
				t.Errorf("a page of %d bytes, below the break-even, decided multipath: %s", *below.Size.Median, o.Reason)
			}
			if o := eval(t, below); o.BreakEven != nil {
				t.Errorf("a page of known size carries a break-even (%d)", *o.BreakEven)
			}
			th := "never"
			if out.Theta1 != nil {
				th = fmt.Sprint(*out.Theta1)
			}
			t.Logf("break-even %d B per connection; θ1 of the mixed distribution %s", be, th)
		})
	}
}
