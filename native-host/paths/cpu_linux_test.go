package paths

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

// BenchmarkIdleCPU runs the sampler for MPSURF_CPU_SECONDS (10) seconds on this machine, with every
// non-loopback interface treated as cellular so that counters are read every 50 ms, and reports the
// process's CPU time as a percentage of one core:
//
//	go test ./native-host/paths/ -run '^$' -bench IdleCPU -benchtime 1x
func BenchmarkIdleCPU(b *testing.B) {
	m, err := radio.Load(filepath.Join("../../policy-models", "power-lte.json"))
	if err != nil {
		b.Fatal(err)
	}
	ifs, err := Discover("/", nil)
	if err != nil {
		b.Fatal(err)
	}
	names := map[string]string{}
	for _, i := range ifs {
		names[i.Name] = Cellular
	}
	d := 10 * time.Second
	if v, err := time.ParseDuration(os.Getenv("MPSURF_CPU_SECONDS") + "s"); err == nil && v > 0 {
		d = v
	}
	for b.Loop() {
		s, err := NewSampler(Config{Names: names, Cellular: m})
		if err != nil {
			b.Fatal(err)
		}
		var r0, r1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), d)
		if err := s.Run(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		wall := time.Since(start)
		syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()+r1.Stime.Nano()-r0.Stime.Nano()) * time.Nanosecond
		b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
		b.ReportMetric(float64(s.Ticks())/wall.Seconds(), "ticks/s")
	}
}
