package calibrate

import (
	"math"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/e2e/corpus"
	"github.com/mpsurf/mpsurf/e2e/report"
	"github.com/mpsurf/mpsurf/native-host/model"
	models "github.com/mpsurf/mpsurf/policy-models"
)

const gridFile = "../testdata/grid-baseline-runs.jsonl"

func setup(t *testing.T) (*corpus.Corpus, *model.Params) {
	t.Helper()
	c, err := corpus.New(1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.Load(models.FS, models.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

func TestRunOnGrid(t *testing.T) {
	recs, err := report.ReadRuns(gridFile)
	if err != nil {
		t.Fatal(err)
	}
	c, p := setup(t)
	r, err := Run(gridFile, recs, c, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Loads) == 0 || len(r.Loads)+len(r.Skipped) != len(recs) {
		t.Fatalf("%d loads and %d skipped of %d records", len(r.Loads), len(r.Skipped), len(recs))
	}
	for _, l := range r.Loads {
		for _, x := range []float64{l.NetworkMS, l.Predicted} {
			if !(x > 0) || math.IsInf(x, 0) {
				t.Fatalf("run %s: prediction %v", l.Rec.RunID, x)
			}
		}
		if l.Predicted < l.NetworkMS {
			t.Errorf("run %s: predicted %v below its network part %v", l.Rec.RunID, l.Predicted, l.NetworkMS)
		}
	}
	// Out of sample: every load predicted by numbers fitted on the other repetitions.
	if r.Folds != 2 || !(r.OutOfSample.All > 0 && r.OutOfSample.All < 15) {
		t.Errorf("out of sample: %d folds, MdAPE %+v", r.Folds, r.OutOfSample)
	}
	for _, e := range []Errors{r.Before, r.After, r.NetworkOnly, r.OutOfSample} {
		for _, x := range []float64{e.All, e.MP, e.SP} {
			if math.IsNaN(x) || x < 0 {
				t.Errorf("MdAPE %v", x)
			}
		}
	}
	// The fit minimises the multipath error over a grid that holds the sweep's points.
	if len(r.Sweep) != 11 {
		t.Errorf("sweep of %d points, want 11", len(r.Sweep))
	}
	for _, sw := range r.Sweep {
		if r.After.MP > sw[1]+1e-9 {
			t.Errorf("fitted multipath MdAPE %v > %v at hol %v", r.After.MP, sw[1], sw[0])
		}
	}
	if r.FittedHOL < 0 || r.FittedHOL > 1 {
		t.Errorf("hol %v outside its grid", r.FittedHOL)
	}
	// The grid has both page classes, all three modes and both protocols on one profile: 12 rows.
	if len(r.Rows) != 12 {
		t.Errorf("%d rows, want 12", len(r.Rows))
	}
	n := 0
	for _, row := range r.Rows {
		n += row.N
	}
	if n != len(r.Loads) {
		t.Errorf("rows hold %d loads of %d", n, len(r.Loads))
	}
	var b strings.Builder
	if err := r.WriteMarkdown(&b, "calibrate --runs "+gridFile); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"# Model calibration", "| multipath.hol_discount |", "| page.processing_ms |",
		"| fitted (after) |", "| baseline | small | sp-wifi | h2 |", "| baseline | large | mp-always | http/1.1 |", "MdAPE"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestNetworkMS(t *testing.T) {
	_, p := setup(t)
	w, cell, err := profilePaths("baseline")
	if err != nil {
		t.Fatal(err)
	}
	cv, err := model.NewCurves(p, w, cell)
	if err != nil {
		t.Fatal(err)
	}
	small := Page{Name: "one", Bytes: 2000, Objects: 1, MainBytes: 2000}
	big := Page{Name: "big", Bytes: 3e6, Objects: 61, MainBytes: 30e3, FirstParty: 40, FirstPartyBytes: 2e6,
		ThirdParty: 20, ThirdPartyBytes: 0.97e6}
	ms := func(mode, proto string, pg Page, hol float64) float64 {
		t.Helper()
		x, err := NetworkMS(cv, hol, mode, proto, pg)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	// A 2 kB page over WiFi: TCP, TLS and the request, three 50 ms round trips, plus 2 kB at 7.04 Mbit/s.
	if got := ms(report.ModeSPWiFi, report.ProtoH2, small, 1); math.Abs(got-152.3) > 1 {
		t.Errorf("2 kB over WiFi: %v ms, want about 152", got)
	}
	// A large page is bandwidth-bound: multipath beats both paths, and more so with a larger hol.
	wifi, cellMS := ms(report.ModeSPWiFi, report.ProtoH2, big, 1), ms(report.ModeSPCell, report.ProtoH2, big, 1)
	mp9, mp5 := ms(report.ModeMPAlways, report.ProtoH2, big, 0.9), ms(report.ModeMPAlways, report.ProtoH2, big, 0.5)
	if !(mp9 < mp5 && mp5 < min(wifi, cellMS)) {
		t.Errorf("wifi %v, cell %v, mp hol 0.9 %v, hol 0.5 %v", wifi, cellMS, mp9, mp5)
	}
	if lower := 3e6 / (7.04e6 / 8) * 1000; wifi < lower {
		t.Errorf("3 MB over WiFi in %v ms, faster than the link (%v ms)", wifi, lower)
	}
	// HTTP/1.1 needs new connections, so it never beats HTTP/2 in this model.
	if h1 := ms(report.ModeSPWiFi, report.ProtoHTTP1, big, 1); h1 < wifi {
		t.Errorf("http/1.1 %v ms < h2 %v ms", h1, wifi)
	}
	for _, bad := range [][2]string{{report.ModeMPAdaptive, report.ProtoH2}, {report.ModeSPWiFi, "h3"}} {
		if _, err := NetworkMS(cv, 1, bad[0], bad[1], big); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestPrepareRejectsOtherCorpus(t *testing.T) {
	recs, err := report.ReadRuns(gridFile)
	if err != nil {
		t.Fatal(err)
	}
	c, p := setup(t)
	recs = append([]report.Record(nil), recs...)
	recs[0].PageBytes++
	if _, _, err := Prepare(recs, c, p); err == nil || !strings.Contains(err.Error(), "corpus seed 1") {
		t.Errorf("error %v, want a corpus mismatch", err)
	}
	recs[0].PageBytes--
	recs[0].Profile = "no-such-profile"
	if _, _, err := Prepare(recs, c, p); err == nil {
		t.Error("unknown profile accepted")
	}
}
