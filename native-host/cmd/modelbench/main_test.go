package main

import (
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/model"
	models "github.com/mpsurf/mpsurf/policy-models"
)

func TestCasesTakeTheirBranches(t *testing.T) {
	p, err := model.Load(models.FS, models.Dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		multipath bool
		reason    string
	}{
		{true, "page size unknown"}, {true, "multipath:"}, {false, "h3"}, {false, "http/1.1"},
	}
	cs := Cases(p)
	if len(cs) != len(want) {
		t.Fatalf("%d cases", len(cs))
	}
	for i, c := range cs {
		out := model.Evaluate(c.In)
		if out.Multipath != want[i].multipath || !strings.HasPrefix(out.Reason, want[i].reason) || out.Fallback {
			t.Errorf("%s: multipath %v, fallback %v, reason %q", c.Name, out.Multipath, out.Fallback, out.Reason)
		}
	}
}

func TestRun(t *testing.T) {
	var b strings.Builder
	if err := run(200, &b); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "\n"); got != 7 {
		t.Errorf("%d lines, want 7:\n%s", got, b.String())
	}
	if err := run(10, &b); err == nil {
		t.Error("n = 10 accepted")
	}
}

func BenchmarkEvaluate(b *testing.B) {
	p, err := model.Load(models.FS, models.Dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range Cases(p) {
		b.Run(c.Name, func(b *testing.B) {
			for b.Loop() {
				sink += model.Evaluate(c.In).Theta1
			}
		})
	}
}
