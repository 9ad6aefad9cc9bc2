package report

import (
	"math"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	cases := []struct {
		in   []float64
		want Stat
	}{
		{nil, Stat{}},
		{[]float64{math.NaN()}, Stat{}},
		{[]float64{5}, Stat{N: 1, Mean: 5, Min: 5, Q1: 5, Median: 5, Q3: 5, Max: 5}},
		// 1..4: mean 2.5, sample sd sqrt(5/3), type-7 quartiles 1.75, 2.5, 3.25.
		{[]float64{4, 1, 3, 2}, Stat{N: 4, Mean: 2.5, SD: math.Sqrt(5.0 / 3), Min: 1, Q1: 1.75, Median: 2.5, Q3: 3.25, Max: 4}},
		{[]float64{10, math.NaN(), 20}, Stat{N: 2, Mean: 15, SD: math.Sqrt(50), Min: 10, Q1: 12.5, Median: 15, Q3: 17.5, Max: 20}},
	}
	for _, c := range cases {
		got := Summarize(c.in)
		same := got.N == c.want.N
		for _, p := range [][2]float64{{got.Mean, c.want.Mean}, {got.SD, c.want.SD}, {got.Min, c.want.Min}, {got.Q1, c.want.Q1},
			{got.Median, c.want.Median}, {got.Q3, c.want.Q3}, {got.Max, c.want.Max}} {
			same = same && math.Abs(p[0]-p[1]) < 1e-12
		}
		if !same {
			t.Errorf("Summarize(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestComparisonPosition(t *testing.T) {
	rng := func(lo, hi float64) comparison {
		return comparison{unit: "%", seedLo: lo, seedHi: hi, hasRange: true}
	}
	cases := []struct {
		c    comparison
		vals []float64
		want string
	}{
		{rng(18.22, 57.19), []float64{20, 30, 50}, "inside the seed's"},
		{rng(18.22, 57.19), []float64{5, 30}, "our minimum is 13.2 points below the seed's minimum."},
		{rng(18.22, 57.19), []float64{30, 60}, "our maximum is 2.8 points above the seed's maximum."},
		{rng(18.22, 57.19), []float64{10, 60}, "below the seed's minimum; our maximum is 2.8 points above"},
		{rng(13.4, 51.8), []float64{1, 3}, "whole range lies below the seed's: our maximum is 10.4 points under its minimum"},
		{rng(-41.1, 30.8), []float64{40, 45}, "whole range lies above the seed's: our minimum is 9.2 points over its maximum"},
		{comparison{unit: "x", seedLo: 5.5, seedHi: 7.3, hasRange: true}, []float64{4.4, 6}, "our minimum is 1.10x below"},
		{comparison{unit: "x", seedAvg: 7.5, hasAvg: true}, []float64{10, 12}, "our mean is 3.50x above the seed's average (7.50x)"},
		{comparison{unit: "x", seedAvg: 7.5, hasAvg: true}, []float64{2, 4}, "our mean is 4.50x below"},
		{comparison{unit: "%"}, []float64{1}, ""},
		{rng(1, 2), nil, ""},
	}
	for _, c := range cases {
		c.c.vals = c.vals
		got := c.c.position()
		if (c.want == "" && got != "") || !strings.Contains(got, c.want) {
			t.Errorf("position(%v) = %q, want %q", c.vals, got, c.want)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		want   string
	}{
		{0, 4450, "0 1000 2000 3000 4000 5000"},
		{0, 7.3, "0 2 4 6 8"},            // 7.3/6 = 1.22 rounds up to a step of 2
		{-22.9, 37.6, "-40 -20 0 20 40"}, // 60.5/6 = 10.1 rounds up to 20
		{0, 0.9, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{0, 0, "0.0 0.2 0.4 0.6 0.8 1.0"}, // an empty range becomes [0, 1]
		{0, 25, "0 5 10 15 20 25"},
		{0, 14, "0.0 2.5 5.0 7.5 10.0 12.5 15.0"},
	}
	for _, c := range cases {
		ts := niceTicks(c.lo, c.hi, 6)
		var parts []string
		for _, v := range ts {
			parts = append(parts, tickLabel(v, ts[1]-ts[0]))
		}
		if got := strings.Join(parts, " "); got != c.want {
			t.Errorf("niceTicks(%v, %v) = %s, want %s", c.lo, c.hi, got, c.want)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	// Decimal units throughout: 1 kB = 1000 bytes, 1 MB = 10^6 bytes.
	for in, want := range map[int64]string{512: "512 B", 2048: "2.0 kB", 102400: "102 kB", 1 << 20: "1.05 MB", 4450800: "4.45 MB", 999999: "1000 kB"} {
		if got := humanBytes(in); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

// Text from records ends up in SVG and Markdown escaped.
func TestEscaping(t *testing.T) {
	c := &chart{title: `<script>&"x"`, kind: kindBars, categories: []string{"a<b"}, series: []series{{name: `s"&`, values: []value{{ok: true, y: 1}}}}}
	svg := string(c.svg())
	if strings.Contains(svg, "<script>") || strings.Contains(svg, `a<b`) {
		t.Errorf("unescaped text in SVG")
	}
	if got := mdCell("a|b\nc"); got != `a\|b c` {
		t.Errorf("mdCell = %q", got)
	}
}
