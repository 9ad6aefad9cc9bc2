// Command report turns the testbed's run records into radio energy, statistics, SVG plots and a Markdown
// report beside the seed papers' numbers.
//
//	go run ./e2e/cmd/report --runs out/runs.jsonl --out out/
//
// --runs given more than once pools the files as one grid run in turns (report.PoolRuns): more repetitions of
// the same grid, each file's numbered after the previous files'.
//
// It writes out/summary.csv (one row per load), out/report.md and the SVG figures the report links, and prints a
// one-screen summary of the decisions benchmark when the runs have sp-wifi, mp-always and mp-adaptive loads.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/e2e/energy"
	"github.com/mpsurf/mpsurf/e2e/report"
	"github.com/mpsurf/mpsurf/native-host/cli"
)

func main() {
	fs := cli.Flags("report")
	var runs []string
	fs.Func("runs", "run records, one JSON object per line (default out/runs.jsonl); given more than once, the files are pooled as further repetitions of one grid", func(v string) error {
		if v == "" {
			return fmt.Errorf("empty file name")
		}
		runs = append(runs, v)
		return nil
	})
	out := fs.String("out", "out", "output directory")
	models := fs.String("models", "policy-models", "directory with power-lte.json, power-3g.json, power-wifi.json and model.json (each preference's weights, modes.*, value the decisions' utility; defaults.mode is the preference of loads that name none)")
	initial := fs.String("cell-initial", string(energy.StartIdle), `cellular radio state at each load's start: "idle"; "connected" (pre-promoted, as seed 000 did with pings); or "observed" (where the packets of the earlier loads on the profile's wwan0 timeline left it, any mode's, and each load charged the energy it adds)`)
	chromium := fs.String("chromium", "/usr/bin/chromium", `browser binary whose --version the report states ("" to leave it out)`)
	err := cli.ParseNone(fs, os.Args[1:])
	init, ierr := energy.ParseInitial(*initial)
	if err == nil && ierr != nil {
		err = cli.Usagef("--cell-initial: %v", ierr)
	}
	if err != nil {
		os.Exit(cli.Exit(err, "report", cli.Described(fs, "usage: report [--runs FILE]... [--out DIR] [--models DIR] [--cell-initial idle|connected|observed] [--chromium PATH]\n"), os.Stdout, os.Stderr))
	}
	m, err := report.LoadModels(*models)
	if err != nil {
		fail(err)
	}
	w, def, err := report.LoadModeWeights(*models)
	if err != nil {
		fail(err)
	}
	env := map[string]string{}
	if v := browserVersion(*chromium); v != "" {
		env["browser"] = v
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		env["kernel"] = strings.TrimSpace(string(b))
	}
	if len(runs) == 0 {
		runs = []string{"out/runs.jsonl"}
	}
	res, err := report.Generate(report.Options{RunsPath: runs[0], Pool: runs[1:], OutDir: *out, Models: m, CellInitial: init, Environment: env, Weights: w, DefaultMode: def})
	if err != nil {
		fail(err)
	}
	a := res.Analysis
	fmt.Printf("%d loads: %d ok, %d failed, %d ok without energy\n", len(a.Loads), len(a.OK), len(a.Failed), len(a.NoEnergy))
	for _, f := range res.Files {
		fmt.Println(f)
	}
	for _, d := range res.Decisions {
		fmt.Println()
		d.WriteSummary(os.Stdout)
	}
}

// browserVersion asks the browser for its version, giving up after a few seconds.
func browserVersion(path string) string {
	if path == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "report:", err)
	os.Exit(1)
}
