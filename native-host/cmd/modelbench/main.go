// Command modelbench measures model.Evaluate, the cost-benefit decision, on representative inputs, and as
// the baseline of the same run the seed policy's decide (policy.Decide, a table lookup). It prints p50, p99 and
// mean per call and each against the baseline's.
//
//	go run ./native-host/cmd/modelbench [-n 20000] [-case TEXT]
//
// -case runs only the inputs whose name contains TEXT (and the baseline): under valgrind --tool=callgrind (with
// GODEBUG=asyncpreemptoff=1, whose signals callgrind does not follow) the instructions per call are the same on
// every run, where times on a shared machine are not.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	models "github.com/mpsurf/mpsurf/policy-models"
)

// warmup calls run before each measurement, so that caches and the branch predictor are as in steady use.
const warmup = 1000

func main() {
	fs := cli.Flags("modelbench")
	n := fs.Int("n", 20000, "calls per input")
	only := fs.String("case", "", "run only the inputs whose name contains this text")
	if err := cli.ParseNone(fs, os.Args[1:]); err != nil {
		os.Exit(cli.Exit(err, "modelbench", cli.Described(fs, "usage: modelbench [-n N] [-case TEXT]\n"), os.Stdout, os.Stderr))
	}
	if err := run(*n, *only, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "modelbench:", err)
		os.Exit(1)
	}
}

// Case is one measured input.
type Case struct {
	Name string
	In   model.Input
}

func f(x float64) *float64 { return &x }

// Cases are the inputs: the seeds' WiFi and LTE links (seed 000 Table 2), LTE idle, default preferences.
func Cases(p *model.Params) []Case {
	wifi := &model.Path{Name: "wlan0", Kind: "wifi", Up: true, RTTMS: f(50), DownBps: f(7.04e6), UpBps: f(2.02e6), Loss: f(0)}
	lte := &model.Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: f(70), DownBps: f(9.185e6), UpBps: f(2.286e6), Loss: f(0)}
	idle := &model.RRC{Tech: "lte", State: "idle", SinceMS: 60000}
	// A page seen 20 times, its origin's other pages 20 times: the most sizes an evaluation weighs.
	var class, origin []int64
	for i := range int64(20) {
		class = append(class, 1_900_000+i*10_000)
		origin = append(origin, 30_000+i*40_000)
	}
	known := model.Size{Known: true, Points: class, Origin: origin, Source: "bench"}
	in := func(proto string, s model.Size) model.Input {
		return model.Input{Origin: "https://example.com", Protocol: proto, Size: s, Primary: wifi, Secondary: lte, RRC: idle, Params: p}
	}
	prior := in(model.H2, model.Size{Source: "bench"})
	prior.Primary, prior.Secondary = nil, nil
	// A host unsure of the radio (rrc spread): every link scenario once per state; beside it, the same at a sure one.
	sure := prior
	sure.Size = known
	unsure := sure
	unsure.RRC = &model.RRC{Tech: "lte", State: "idle", SinceMS: 9000, Spread: []model.RRCShare{
		{State: "idle", SinceMS: 9000, P: 0.4}, {State: "long_drx", SinceMS: 3000, P: 0.55}, {State: "continuous", SinceMS: 50, P: 0.05}}}
	return []Case{
		{"unknown size, h2 (θ1 over the size prior)", in(model.H2, model.Size{Source: "bench"})},
		{"unknown size and links (9 link scenarios)", prior},
		{"history, unknown links (9 scenarios)", sure},
		{"history, unknown links, radio unsure (9 scenarios x 3 states)", unsure},
		{"2 MB page with 40 loads of history, h2", in(model.H2, known)},
		{"h3", in(model.H3, known)},
		{"2 MB page with history, http/1.1", in(model.HTTP1, known)},
	}
}

// Stats are per-call durations: wall clock, and the thread's CPU time (CPUOK false where it is not measured).
type Stats struct {
	P50, P99, Mean time.Duration
	CPUP50, CPUP99 time.Duration
	CPUOK          bool
}

func measure(n int, call func()) Stats {
	defer pinThread()()
	for range warmup {
		call()
	}
	d, cpu := make([]time.Duration, n), make([]time.Duration, n)
	var total time.Duration
	cpuOK := true
	for i := range d {
		c0, ok0 := threadCPU()
		t := time.Now()
		call()
		d[i] = time.Since(t)
		c1, ok1 := threadCPU()
		cpu[i], cpuOK = c1-c0, cpuOK && ok0 && ok1
		total += d[i]
	}
	slices.Sort(d)
	slices.Sort(cpu)
	p99 := min(n-1, n*99/100)
	return Stats{P50: d[n/2], P99: d[p99], Mean: total / time.Duration(n), CPUP50: cpu[n/2], CPUP99: cpu[p99], CPUOK: cpuOK}
}

var sink int64 // keeps the calls' results alive

func run(n int, only string, w io.Writer) error {
	if n < 100 {
		return fmt.Errorf("-n %d: need at least 100 calls for a p99", n)
	}
	p, err := model.Load(models.FS, models.Dir)
	if err != nil {
		return err
	}
	src := policy.EmbeddedSource()
	file, err := src.Load()
	if err != nil {
		return err
	}
	base := measure(n, func() { sink += *policy.Decide(policy.Input{Model: file, Source: src, Revision: 1}).Theta1 })
	fmt.Fprintf(w, "%d calls each, after %d warm-up calls; cpu: the thread's CPU time per call (no wait for a core)\n", n, warmup)
	fmt.Fprintf(w, "%-46s %10s %10s %10s %8s %8s %8s %10s %10s\n", "input", "p50", "p99", "mean", "p50/b", "p99/b", "mean/b", "cpu p50", "cpu p99")
	line := func(name string, s Stats) {
		r := func(a, b time.Duration) float64 { return float64(a) / float64(b) }
		c50, c99 := "n/a", "n/a"
		if s.CPUOK {
			c50, c99 = s.CPUP50.String(), s.CPUP99.String()
		}
		fmt.Fprintf(w, "%-46s %10s %10s %10s %8.1f %8.1f %8.1f %10s %10s\n", name, s.P50, s.P99, s.Mean,
			r(s.P50, base.P50), r(s.P99, base.P99), r(s.Mean, base.Mean), c50, c99)
	}
	line("baseline: policy.Decide (seed)", base)
	ran := 0
	for _, c := range Cases(p) {
		if !strings.Contains(c.Name, only) {
			continue
		}
		ran++
		in := c.In
		s := measure(n, func() {
			if out, err := model.Evaluate(in); err == nil && out.Theta1 != nil {
				sink += *out.Theta1
			}
		})
		line("model.Evaluate: "+c.Name, s)
	}
	if ran == 0 {
		return fmt.Errorf("-case %q: no input's name contains it", only)
	}
	return nil
}
