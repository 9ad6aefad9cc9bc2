package calibrate

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/mpsurf/mpsurf/e2e/corpus"
	"github.com/mpsurf/mpsurf/e2e/report"
	"github.com/mpsurf/mpsurf/native-host/model"
)

// Result is one calibration: the file's numbers, the fitted ones, and the errors under both.
type Result struct {
	Runs    string // how the input is named in the report
	Loads   []*Load
	Skipped []Skipped

	FileHOL, FittedHOL   float64
	FileProc, FittedProc Processing
	// Fit sample sizes: single-path loads of one object and of several objects.
	ProcOnePage, ProcMulti int

	// MdAPE in percent: with the file's numbers, with the fitted ones, and of the network part alone (fitted hol).
	Before, After, NetworkOnly Errors
	// OutOfSample is the MdAPE of two-fold cross-validation by repetition: the numbers fitted on the even
	// repetitions predict the odd ones and the other way round, so no load is predicted by numbers fitted on it.
	OutOfSample Errors
	Folds       int // how many folds had loads to fit on and to predict
	// Sweep is the multipath MdAPE at hol = 0.0, 0.1, ..., 1.0 with the fitted processing constants.
	Sweep [][2]float64
	Rows  []Row
}

// Errors are MdAPEs over all loads and over the multipath and single-path ones.
type Errors struct {
	All, MP, SP float64
}

// Row is one line of the table: one profile, page-size class, mode and protocol.
type Row struct {
	Profile, Class, Mode, Proto  string
	N                            int
	Predicted, Network, Measured float64 // medians, ms
	MdAPE                        float64 // percent
}

// Run calibrates p against recs, whose pages come from c.
func Run(runs string, recs []report.Record, c *corpus.Corpus, p *model.Params) (*Result, error) {
	loads, skipped, err := Prepare(recs, c, p)
	if err != nil {
		return nil, err
	}
	r := &Result{Runs: runs, Loads: loads, Skipped: skipped, FileHOL: p.Multipath.HOLDiscount,
		FileProc: Processing{PerPageMS: p.Page.ProcessingMS, PerObjectMS: p.Page.ProcessingMSPerObject}}
	if err := Predict(loads, r.FileHOL, r.FileProc); err != nil {
		return nil, err
	}
	r.Before = errorsOf(loads)
	r.FittedProc, r.ProcOnePage, r.ProcMulti = FitProcessing(loads)
	for h := 0; h <= 10; h++ {
		if err := Predict(loads, float64(h)/10, r.FittedProc); err != nil {
			return nil, err
		}
		r.Sweep = append(r.Sweep, [2]float64{float64(h) / 10, errorsOf(loads).MP})
	}
	if r.FittedHOL, _, err = FitHOL(loads, r.FittedProc, r.FileHOL); err != nil {
		return nil, err
	}
	r.After = errorsOf(loads)
	r.Rows = rows(loads)
	if r.OutOfSample, r.Folds, err = crossValidate(loads, r.FileHOL); err != nil {
		return nil, err
	}
	if err := Predict(loads, r.FittedHOL, Processing{}); err != nil {
		return nil, err
	}
	r.NetworkOnly = errorsOf(loads)
	// Leave the loads at the fitted numbers, as the rows show them.
	return r, Predict(loads, r.FittedHOL, r.FittedProc)
}

// crossValidate fits the processing constants and hol on the loads of one parity of repetition and predicts the
// loads of the other, then the other way round; it returns the MdAPE of those held-out predictions.
func crossValidate(loads []*Load, from float64) (Errors, int, error) {
	held := make(map[*Load]float64, len(loads))
	folds := 0
	for fold := range 2 {
		test := Filter(loads, func(l *Load) bool { return l.Rec.Rep%2 == fold })
		train := Filter(loads, func(l *Load) bool { return l.Rec.Rep%2 != fold })
		if len(test) == 0 || len(train) == 0 {
			continue
		}
		proc, _, _ := FitProcessing(train)
		hol, _, err := FitHOL(train, proc, from)
		if err != nil {
			return Errors{}, 0, err
		}
		if err := Predict(test, hol, proc); err != nil {
			return Errors{}, 0, err
		}
		for _, l := range test {
			held[l] = l.Predicted
		}
		folds++
	}
	out := Filter(loads, func(l *Load) bool { _, ok := held[l]; return ok })
	for _, l := range out {
		l.Predicted = held[l]
	}
	return errorsOf(out), folds, nil
}

func errorsOf(loads []*Load) Errors {
	isMP := func(l *Load) bool { return l.Rec.Mode == report.ModeMPAlways }
	return Errors{All: MdAPE(loads), MP: MdAPE(Filter(loads, isMP)),
		SP: MdAPE(Filter(loads, func(l *Load) bool { return !isMP(l) }))}
}

func class(l *Load) string {
	if l.Page.Bytes <= SmallPageBytes {
		return "small"
	}
	return "large"
}

func rows(loads []*Load) []Row {
	type key struct{ profile, class, mode, proto string }
	groups := map[key][]*Load{}
	for _, l := range loads {
		k := key{l.Rec.Profile, class(l), l.Rec.Mode, l.Rec.Proto}
		groups[k] = append(groups[k], l)
	}
	var out []Row
	for k, g := range groups {
		var pr, nw, me []float64
		for _, l := range g {
			pr = append(pr, l.Predicted)
			nw = append(nw, l.NetworkMS)
			me = append(me, l.Rec.PLTms)
		}
		out = append(out, Row{Profile: k.profile, Class: k.class, Mode: k.mode, Proto: k.proto, N: len(g),
			Predicted: median(pr), Network: median(nw), Measured: median(me), MdAPE: MdAPE(g)})
	}
	order := func(set []string, v string) int { return slices.Index(set, v) }
	slices.SortFunc(out, func(a, b Row) int {
		return cmp.Or(strings.Compare(a.Profile, b.Profile), -strings.Compare(a.Class, b.Class),
			cmp.Compare(order(Modes, a.Mode), order(Modes, b.Mode)),
			cmp.Compare(order(report.Protos, a.Proto), order(report.Protos, b.Proto)))
	})
	return out
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f %%", x)
}

// WriteMarkdown writes the report; command is how to reproduce it.
func (r *Result) WriteMarkdown(w io.Writer, command string) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Model calibration against the testbed\n\n")
	p("Generated by `%s` from `%s`: %d loads compared (modes %s), %d records skipped.\n\n",
		command, r.Runs, len(r.Loads), strings.Join(Modes, ", "), len(r.Skipped))
	p("Predicted PLT = network PLT from the model's transfer curves for the load's profile paths and page " +
		"(page model: e2e/calibrate package documentation) + browser processing per page and per object. " +
		"Errors are median absolute percentage errors (MdAPE) of predicted vs measured `plt_ms`. " +
		"Target: MdAPE ≤ 15 %%.\n\n")

	p("## Fit\n\n| number | model.json | fitted | fitted on |\n|---|---|---|---|\n")
	p("| multipath.hol_discount | %.2f | %.2f | MdAPE of %d mp-always loads, grid 0.00..1.00 step 0.01 |\n",
		r.FileHOL, r.FittedHOL, len(Filter(r.Loads, func(l *Load) bool { return l.Rec.Mode == report.ModeMPAlways })))
	p("| page.processing_ms | %.1f | %.1f | median residual of %d single-path single-object loads |\n",
		r.FileProc.PerPageMS, r.FittedProc.PerPageMS, r.ProcOnePage)
	p("| page.processing_ms_per_object | %.2f | %.2f | median per-object residual of %d single-path multi-object loads |\n\n",
		r.FileProc.PerObjectMS, r.FittedProc.PerObjectMS, r.ProcMulti)

	p("## Error\n\n| numbers | MdAPE all | MdAPE mp-always | MdAPE single path |\n|---|---|---|---|\n")
	p("| model.json (before) | %s | %s | %s |\n", pct(r.Before.All), pct(r.Before.MP), pct(r.Before.SP))
	p("| fitted (after) | %s | %s | %s |\n", pct(r.After.All), pct(r.After.MP), pct(r.After.SP))
	p("| fitted hol, network part alone (no processing) | %s | %s | %s |\n",
		pct(r.NetworkOnly.All), pct(r.NetworkOnly.MP), pct(r.NetworkOnly.SP))
	p("| out of sample: fitted on the other repetitions (%d-fold by repetition) | %s | %s | %s |\n\n",
		r.Folds, pct(r.OutOfSample.All), pct(r.OutOfSample.MP), pct(r.OutOfSample.SP))
	p("Sensitivity of the multipath MdAPE to hol (fitted processing constants):")
	for _, sw := range r.Sweep {
		p(" %.1f → %s;", sw[0], pct(sw[1]))
	}
	p("\n\n")
	verdict := "meets"
	if !(r.After.All <= 15) {
		verdict = "misses"
	}
	p("With the fitted numbers the overall MdAPE is %s: it %s the 15 %% target.\n\n", pct(r.After.All), verdict)

	p("## Per profile, page size, mode and protocol (fitted numbers)\n\n")
	p("Small pages are those of at most %d bytes. Medians in ms.\n\n", SmallPageBytes)
	p("| profile | pages | mode | proto | n | predicted | of which network | measured | MdAPE |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		p("| %s | %s | %s | %s | %d | %.0f | %.0f | %.0f | %s |\n", row.Profile, row.Class, row.Mode, row.Proto, row.N,
			row.Predicted, row.Network, row.Measured, pct(row.MdAPE))
	}
	p("\n## Per page (fitted numbers)\n\n| page | bytes | objects | mode | proto | n | predicted | measured | MdAPE |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range perPage(r.Loads) {
		p("%s", row)
	}
	if len(r.Skipped) > 0 {
		p("\n## Skipped records\n\n")
		for _, s := range r.Skipped {
			p("- %s: %s\n", s.RunID, s.Why)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func perPage(loads []*Load) []string {
	type key struct{ page, mode, proto string }
	groups := map[key][]*Load{}
	var keys []key
	for _, l := range loads {
		k := key{l.Rec.Page, l.Rec.Mode, l.Rec.Proto}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], l)
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		ga, gb := groups[a][0], groups[b][0]
		return cmp.Or(cmp.Compare(ga.Page.Bytes, gb.Page.Bytes), strings.Compare(a.page, b.page),
			cmp.Compare(slices.Index(Modes, a.mode), slices.Index(Modes, b.mode)),
			cmp.Compare(slices.Index(report.Protos, a.proto), slices.Index(report.Protos, b.proto)))
	})
	var out []string
	for _, k := range keys {
		g := groups[k]
		var pr, me []float64
		for _, l := range g {
			pr = append(pr, l.Predicted)
			me = append(me, l.Rec.PLTms)
		}
		out = append(out, fmt.Sprintf("| %s | %.0f | %d | %s | %s | %d | %.0f | %.0f | %s |\n", k.page, g[0].Page.Bytes,
			g[0].Page.Objects, k.mode, k.proto, len(g), median(pr), median(me), pct(MdAPE(g))))
	}
	return out
}
