package report

import (
	"math"
	"sort"
)

// Stat summarises a sample.
type Stat struct {
	N                        int
	Mean, SD                 float64 // SD is the sample standard deviation (0 for N < 2)
	Min, Q1, Median, Q3, Max float64
}

// Summarize computes a Stat; NaN values are skipped.
func Summarize(xs []float64) Stat {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Stat{}
	}
	sort.Float64s(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	s := Stat{N: len(v), Mean: sum / float64(len(v)), Min: v[0], Max: v[len(v)-1]}
	if len(v) > 1 {
		var ss float64
		for _, x := range v {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(v)-1))
	}
	s.Q1, s.Median, s.Q3 = quantile(v, 0.25), quantile(v, 0.5), quantile(v, 0.75)
	return s
}

// quantile interpolates linearly between order statistics of sorted v (type 7, as R and numpy default to).
func quantile(v []float64, q float64) float64 {
	h := q * float64(len(v)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(v) {
		return v[len(v)-1]
	}
	return v[i] + (h-lo)*(v[i+1]-v[i])
}
