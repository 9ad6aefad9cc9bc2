package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/cli"
)

func TestRunWritesReport(t *testing.T) {
	out := t.TempDir()
	var stdout strings.Builder
	if err := run(cli.Flags("calibrate"), []string{"--runs", "../../testdata/grid-baseline-runs.jsonl", "--out", out, "--models", "../../../policy-models"}, &stdout); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "calibration.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != stdout.String() || !strings.Contains(string(b), "| fitted (after) |") {
		t.Errorf("calibration.md and stdout differ or lack the error table")
	}
}

func TestRunBadInput(t *testing.T) {
	for _, args := range [][]string{{}, {"--runs", filepath.Join(t.TempDir(), "missing.jsonl")}, {"--runs", "x", "extra"},
		{"--runs", "../../testdata/grid-baseline-runs.jsonl", "--models", t.TempDir()}} {
		if err := run(cli.Flags("calibrate"), args, &strings.Builder{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
