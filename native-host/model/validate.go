package model

import (
	"fmt"
	"math"
)

// Bounds an input must respect. Beyond them a number is a measurement or encoding fault, not a link: the model
// refuses it rather than deciding from it.
const (
	MaxRateBps  = 1e11  // 100 Gbit/s: faster than any WiFi, cellular or home link
	MinRateBps  = 1e3   // 1 kbit/s: below it a link carries nothing a page could use
	MaxRTTMS    = 60000 // a minute
	MaxSizeByte = 1 << 40
	MaxSpread   = 5               // e^5 ≈ 150x either way
	MaxAgeS     = 365 * 24 * 3600 // a measurement's age: a year is absurd already
	MaxMeanN    = 1 << 20         // measurements behind a path's long-run rate (the sampler keeps at most 20)
)

// InputError is an input the model refuses to evaluate, naming the field.
type InputError struct {
	Field, Problem string
}

func (e *InputError) Error() string { return "model input: " + e.Field + ": " + e.Problem }

// Validate checks every number of the input before anything is evaluated: NaN and infinities, negative values,
// loss outside [0, 1], rates and RTTs no link has. The first problem is returned.
func (in *Input) Validate() error {
	if in.Params == nil {
		return &InputError{"params", "missing"}
	}
	for _, x := range []struct {
		name string
		p    *Path
	}{{"primary", in.Primary}, {"secondary", in.Secondary}} {
		if err := x.p.validate(x.name); err != nil {
			return err
		}
	}
	s := &in.Size
	for _, n := range []struct {
		name string
		v    *int64
	}{{"size.median", s.Median}, {"size.p10", s.P10}, {"size.p90", s.P90}} {
		if n.v != nil && (*n.v < 0 || *n.v > MaxSizeByte) {
			return &InputError{n.name, fmt.Sprintf("%d is not 0 to %d bytes", *n.v, int64(MaxSizeByte))}
		}
	}
	for name, pts := range map[string][]int64{"size.points": s.Points, "size.origin": s.Origin} {
		if len(pts) > 1000 {
			return &InputError{name, "more than 1000 sizes"}
		}
		for _, v := range pts {
			if v < 0 || v > MaxSizeByte {
				return &InputError{name, fmt.Sprintf("%d is not 0 to %d bytes", v, int64(MaxSizeByte))}
			}
		}
	}
	if s.Samples < 0 || s.Objects < 0 {
		return &InputError{"size.samples", "negative"}
	}
	if in.Conns < 0 || in.Conns > 1000 {
		return &InputError{"conns", fmt.Sprintf("%d is not 0 to 1000", in.Conns)}
	}
	if r := in.RRC; r != nil {
		if r.SinceMS < 0 {
			return &InputError{"rrc.since_ms", "negative"}
		}
		if len(r.Spread) > 32 {
			return &InputError{"rrc.spread", fmt.Sprintf("%d states; a radio has fewer than 32", len(r.Spread))}
		}
		total := 0.0
		for _, sh := range r.Spread {
			if sh.SinceMS < 0 {
				return &InputError{"rrc.spread.since_ms", "negative"}
			}
			if !(sh.P >= 0 && sh.P <= 1) {
				return &InputError{"rrc.spread.p", fmt.Sprintf("%g is not 0 to 1", sh.P)}
			}
			total += sh.P
		}
		if len(r.Spread) > 0 && math.Abs(total-1) > 1e-6 {
			return &InputError{"rrc.spread.p", fmt.Sprintf("probabilities sum to %g, not 1", total)}
		}
	}
	if b := in.Battery; b != nil && !(b.Percent >= 0 && b.Percent <= 100) {
		return &InputError{"battery.percent", fmt.Sprintf("%g is not 0 to 100", b.Percent)}
	}
	if u := in.Usage; u != nil && (u.UsedBytes < 0 || u.DaysLeft < 0) {
		return &InputError{"usage", "negative"}
	}
	if p := in.Prefs; p != nil {
		if p.DeadlineMS < 0 || p.DeadlineMS > 600000 || p.BatteryFloorPercent < 0 || p.BatteryFloorPercent > 100 ||
			(p.QuotaBytes != nil && *p.QuotaBytes < 0) {
			return &InputError{"prefs", "a number out of range"}
		}
	}
	if c := in.Learned; c != nil {
		for name, f := range map[string]float64{"learned.sp": c.SP, "learned.mp": c.MP} {
			if !(f > 0 && f < 1000) {
				return &InputError{name, fmt.Sprintf("%g is not a positive factor", f)}
			}
		}
	}
	return nil
}

func (p *Path) validate(name string) error {
	if p == nil {
		return nil
	}
	finite := func(field string, v *float64, lo, hi float64) error {
		if v == nil {
			return nil
		}
		x := *v
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return &InputError{name + "." + field, "not a finite number"}
		case x < lo || x > hi:
			return &InputError{name + "." + field, fmt.Sprintf("%g is outside %g to %g", x, lo, hi)}
		}
		return nil
	}
	counted := func(field string, n, hi int64) error {
		if n < 0 || n > hi {
			return &InputError{name + "." + field, fmt.Sprintf("%d is outside 0 to %d", n, hi)}
		}
		return nil
	}
	for _, err := range []error{
		finite("rtt_ms", p.RTTMS, 0.01, MaxRTTMS),
		finite("down_bps", p.DownBps, MinRateBps, MaxRateBps),
		finite("up_bps", p.UpBps, 0, MaxRateBps),
		finite("loss", p.Loss, 0, 1),
		finite("spread", &p.Spread, 0, MaxSpread),
		finite("down_age_s", p.DownAgeS, 0, MaxAgeS),
		finite("down_mean_bps", p.DownMeanBps, MinRateBps, MaxRateBps),
		finite("down_sustained_bps", p.DownSustainedBps, MinRateBps, MaxRateBps),
		finite("down_sustained_age_s", p.DownSustainedAgeS, 0, MaxAgeS),
		counted("down_mean_n", p.DownMeanN, MaxMeanN),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}
