// Command calibrate compares the cost-benefit model's page-load predictions with loads measured on the testbed,
// fits the numbers the testbed can tell (e2e/calibrate), prints the report and writes it to OUT/calibration.md.
//
//	go run ./e2e/cmd/calibrate --runs out/runs.jsonl [--out out] [--models policy-models] [--seed 1]
package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mpsurf/mpsurf/e2e/calibrate"
	"github.com/mpsurf/mpsurf/e2e/corpus"
	"github.com/mpsurf/mpsurf/e2e/report"
	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/model"
	models "github.com/mpsurf/mpsurf/policy-models"
)

const synopsis = "usage: calibrate --runs FILE [--out DIR] [--models DIR] [--seed N]\n"

func main() {
	fs := cli.Flags("calibrate")
	err := run(fs, os.Args[1:], os.Stdout)
	os.Exit(cli.Exit(err, "calibrate", cli.Described(fs, synopsis), os.Stdout, os.Stderr))
}

func run(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	runs := fs.String("runs", "", "runs.jsonl of the testbed (required)")
	out := fs.String("out", "out", "directory for calibration.md")
	dir := fs.String("models", "", "policy-models directory to read model.json from (default: the built-in copy)")
	seed := fs.Uint64("seed", 1, "corpus seed the grid was run with")
	if err := cli.ParseNone(fs, args); err != nil {
		return err
	}
	if *runs == "" {
		return cli.Usagef("--runs FILE is required")
	}
	recs, err := report.ReadRuns(*runs)
	if err != nil {
		return err
	}
	var p *model.Params
	if *dir != "" {
		p, err = model.LoadDir(*dir)
	} else {
		p, err = model.Load(models.FS, models.Dir)
	}
	if err != nil {
		return err
	}
	c, err := corpus.New(*seed)
	if err != nil {
		return err
	}
	res, err := calibrate.Run(*runs, recs, c, p)
	if err != nil {
		return err
	}
	command := "go run ./e2e/cmd/calibrate " + strings.Join(args, " ")
	var b strings.Builder
	if err := res.WriteMarkdown(&b, strings.TrimSpace(command)); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "calibration.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}
