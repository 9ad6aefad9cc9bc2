package models

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestRateMemory derives model.json's rate_memory from the in-repository AT&T LTE driving trace and checks that
// the file's numbers are the fit's: the autocorrelation of ln(per-second downlink rate) over lags of 1-60 s, fitted
// by least squares with share e^(-t/slow) + (1 - share) e^(-t/fast) over a grid. Run with -v to see the
// correlations and the fit.
func TestRateMemory(t *testing.T) {
	ac := traceAutocorrelation(t, "../e2e/profiles/traces/ATT-LTE-driving.down", 60)
	for _, lag := range []int{1, 2, 5, 10, 20, 30, 60} {
		t.Logf("lag %2d s: %.2f", lag, ac[lag])
	}
	type fit struct{ share, fast, slow, sse float64 }
	best := fit{sse: math.Inf(1)}
	for share := 0.0; share <= 0.4001; share += 0.01 {
		for fast := 1.0; fast <= 10.0001; fast += 0.5 {
			for _, slow := range []float64{10, 15, 20, 30, 45, 60, 90, 120, 180, 300} {
				sse := 0.0
				for lag := 1; lag <= 60; lag++ {
					d := share*math.Exp(-float64(lag)/slow) + (1-share)*math.Exp(-float64(lag)/fast) - ac[lag]
					sse += d * d
				}
				if sse < best.sse {
					best = fit{share, fast, slow, sse}
				}
			}
		}
	}
	t.Logf("fit: %.2f e^(-t/%g s) + %.2f e^(-t/%g s), squared error %.3f", best.share, best.slow, 1-best.share, best.fast, best.sse)

	b, err := FS.ReadFile("model.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		RateMemory struct {
			FastS     float64 `json:"fast_s"`
			SlowS     float64 `json:"slow_s"`
			SlowShare float64 `json:"slow_share"`
		} `json:"rate_memory"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	rm := m.RateMemory
	if math.Abs(rm.FastS-best.fast) > 0.26 || rm.SlowS != best.slow || math.Abs(rm.SlowShare-best.share) > 0.015 {
		t.Errorf("model.json rate_memory = %+v; the trace's fit is fast_s %g, slow_s %g, slow_share %.2f", rm, best.fast, best.slow, best.share)
	}
}

// traceAutocorrelation reads a Mahimahi trace (one line per 1500-byte delivery opportunity, in ms) and returns
// the autocorrelation of ln(deliveries per second) at lags 0..maxLag seconds. A second with no delivery counts as
// one, so that outages stay finite in the logarithm.
func traceAutocorrelation(t *testing.T, file string, maxLag int) []float64 {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var counts []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		ms, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("%s: %q: %v", file, line, err)
		}
		for len(counts) <= ms/1000 {
			counts = append(counts, 0)
		}
		counts[ms/1000]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	counts = counts[:len(counts)-1] // the last second is partial
	if len(counts) < 10*maxLag {
		t.Fatalf("%s: %d s of trace, too short for lags of %d s", file, len(counts), maxLag)
	}
	x := make([]float64, len(counts))
	mean := 0.0
	for i, c := range counts {
		x[i] = math.Log(math.Max(c, 1))
		mean += x[i]
	}
	mean /= float64(len(x))
	v := 0.0
	for i := range x {
		x[i] -= mean
		v += x[i] * x[i]
	}
	v /= float64(len(x))
	out := make([]float64, maxLag+1)
	for lag := 0; lag <= maxLag; lag++ {
		s := 0.0
		for i := 0; i+lag < len(x); i++ {
			s += x[i] * x[i+lag]
		}
		out[lag] = s / float64(len(x)-lag) / v
	}
	return out
}
