package model

import "math"

// breakEven is the smallest transfer, in bytes per connection, that multipath from the first byte pays for on these
// links under these weights: the size where U(S) at θ1 = 0 first exceeds theta.indifference_s, the margin below which
// choose calls a difference no difference. nil when no size up to theta.max_bytes pays.
//
// It is the θ1 a connection of unknown size can take (decide.Decision.UnknownSizeTheta1): θ1 bounds what a connection
// must have received before its subflow, so a transfer that stays below the break-even never wakes the radio, and
// one that passes it is a transfer the model would have sent multipath had it known its size.
//
// The scan is the θ1 candidates' own grid (theta.min_bytes, times theta.grid_ratio), then a bisection of the first
// step that crosses down to theta.size_margin: how closely θ1 is placed above a known size too.
func (e *evaluation) breakEven() *float64 {
	th := &e.p.Theta
	pays := func(s float64) bool { return e.fromFirstByte(s) > th.IndifferenceS }
	lo := 0.0
	for hi := th.MinBytes; hi <= th.MaxBytes; hi *= th.GridRatio {
		if !pays(hi) {
			lo = hi
			continue
		}
		if lo == 0 {
			be := math.Ceil(hi / e.conns)
			return &be
		}
		for hi/lo > 1+th.SizeMargin {
			mid := math.Sqrt(lo * hi)
			if pays(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		be := math.Ceil(hi / e.conns)
		return &be
	}
	return nil
}

// fromFirstByte is the expected utility, over the link scenarios, of multipath from the first byte for a page of
// exactly s bytes.
func (e *evaluation) fromFirstByte(s float64) float64 {
	var u float64
	for i := range e.scens {
		sc := &e.scens[i]
		mp, t0 := e.mpCurve(sc, 0)
		u += sc.w * e.eval(sc, &mp, t0, s, sc.primSP.inv(s)).u
	}
	return u
}
