package model

import (
	"math"
	"sort"
)

// plf is a nondecreasing piecewise-linear function of time: through the points (t[i], b[i]) and with slope tail
// after the last one. Time is in seconds, bytes as float64.
type plf struct {
	t, b []float64
	tail float64
}

func (f *plf) add(t, b float64) {
	f.t = append(f.t, t)
	f.b = append(f.b, b)
}

// at is f(x).
func (f *plf) at(x float64) float64 {
	n := len(f.t)
	if n == 0 || x <= f.t[0] {
		if n == 0 {
			return 0
		}
		return f.b[0]
	}
	if x >= f.t[n-1] {
		return f.b[n-1] + f.tail*(x-f.t[n-1])
	}
	i := sort.SearchFloat64s(f.t, x) // f.t[i-1] < x <= f.t[i]
	t0, t1, b0, b1 := f.t[i-1], f.t[i], f.b[i-1], f.b[i]
	if t1 == t0 {
		return b1
	}
	return b0 + (b1-b0)*(x-t0)/(t1-t0)
}

// inv is the first time at which f reaches s; +Inf when it never does.
func (f *plf) inv(s float64) float64 {
	n := len(f.t)
	if n == 0 {
		return inf
	}
	if s <= f.b[0] {
		return f.t[0]
	}
	if s > f.b[n-1] {
		if f.tail <= 0 {
			return inf
		}
		return f.t[n-1] + (s-f.b[n-1])/f.tail
	}
	i := sort.SearchFloat64s(f.b, s) // f.b[i-1] < s <= f.b[i]
	t0, t1, b0, b1 := f.t[i-1], f.t[i], f.b[i-1], f.b[i]
	return t0 + (t1-t0)*(s-b0)/(b1-b0)
}

// sum returns f + h·g, evaluated on the union of their breakpoints.
func sum(f, g *plf, h float64) plf {
	var out plf
	out.t = make([]float64, 0, len(f.t)+len(g.t))
	out.b = make([]float64, 0, len(f.t)+len(g.t))
	i, j := 0, 0
	for i < len(f.t) || j < len(g.t) {
		var x float64
		switch {
		case j >= len(g.t) || (i < len(f.t) && f.t[i] <= g.t[j]):
			x = f.t[i]
			i++
		default:
			x = g.t[j]
			j++
		}
		if n := len(out.t); n > 0 && out.t[n-1] == x {
			continue
		}
		out.add(x, f.at(x)+h*g.at(x))
	}
	out.tail = f.tail + h*g.tail
	return out
}

// shifted is g delayed by d: zero until d, then g's shape.
func shifted(g *plf, d float64) plf {
	out := plf{t: make([]float64, len(g.t)), b: g.b, tail: g.tail}
	for i, t := range g.t {
		out.t[i] = t + d
	}
	return out
}

// capped is min(g, c): g until it reaches c, flat at c after.
func capped(g plf, c float64) plf {
	if math.IsInf(c, 1) {
		return g
	}
	t := g.inv(c)
	if math.IsInf(t, 1) {
		return g
	}
	var out plf
	for i := range g.t {
		if g.t[i] >= t {
			break
		}
		out.add(g.t[i], g.b[i])
	}
	out.add(t, c)
	out.tail = 0
	return out
}
