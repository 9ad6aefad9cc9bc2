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
		{false, "size unknown"}, {false, "size unknown"}, {true, "multipath"}, {true, "multipath"}, {true, "multipath"}, {false, "h3"}, {true, "multipath"},
	}
	cs := Cases(p)
	if len(cs) != len(want) {
		t.Fatalf("%d cases", len(cs))
	}
	for i, c := range cs {
		out, err := model.Evaluate(c.In)
		if err != nil || out.Multipath != want[i].multipath || !strings.HasPrefix(out.Reason, want[i].reason) {
			t.Errorf("%s: multipath %v, reason %q, err %v", c.Name, out.Multipath, out.Reason, err)
		}
	}
}

func TestRun(t *testing.T) {
	var b strings.Builder
	if err := run(200, "", &b); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "\n"); got != 10 {
		t.Errorf("%d lines, want 10:\n%s", got, b.String())
	}
	if err := run(10, "", &b); err == nil {
		t.Error("n = 10 accepted")
	}
	// One input (and the baseline) by name; a name that matches none is an error, not an empty table.
	b.Reset()
	if err := run(200, "radio unsure", &b); err != nil || strings.Count(b.String(), "\n") != 4 || !strings.Contains(b.String(), "radio unsure") {
		t.Errorf("-case: %v\n%s", err, b.String())
	}
	if err := run(200, "no such input", &b); err == nil {
		t.Error("-case matching nothing accepted")
	}
}

func BenchmarkEvaluate(b *testing.B) {
	p, err := model.Load(models.FS, models.Dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range Cases(p) {
		b.Run(c.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if out, err := model.Evaluate(c.In); err == nil && out.Theta1 != nil {
					sink += *out.Theta1
				}
			}
		})
	}
}
