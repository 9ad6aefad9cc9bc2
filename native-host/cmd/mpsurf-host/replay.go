package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

const replayUsage = `mpsurf-host replay [--models DIR] [--db PATH] [--since WHEN] [--json]
        evaluate every logged decision again, from the model input the log kept, under the model in DIR (a
        policy-models directory: model.json with the power and baseline files it names; default: MPSURF_MODELS,
        else the models built into this binary), and report how the decisions, the predicted time saved,
        cellular bytes and radio energy would change; WHEN is a date (2026-11-01), an RFC 3339 time or unix
        milliseconds; --model DIR, the older name of --models, still works
`

// replayDecision is one logged decision and its re-evaluation.
type replayDecision struct {
	Origin   string `json:"origin"`
	TimeMS   int64  `json:"time_ms"`
	Logged   side   `json:"logged"`
	Replayed side   `json:"replayed"`
	Changed  bool   `json:"changed"`
	Reason   string `json:"reason"`
}

// side is what one model said of a decision.
type side struct {
	Multipath bool   `json:"multipath"`
	Theta1    *int64 `json:"theta1"` // nil: never
	Theta2    *int64 `json:"theta2"`
	// Benefit and costs of this decision: the model's terms when multipath was chosen, zero otherwise.
	TimeSavedS    float64 `json:"time_saved_s"`
	CellularBytes float64 `json:"cellular_bytes"`
	CellularJ     float64 `json:"cellular_energy_j"`
	// MultipathCount, in totals only, counts the multipath decisions.
	MultipathCount int `json:"multipath_decisions,omitempty"`
}

// replayReport sums a replay up.
type replayReport struct {
	Model       string           `json:"model"`
	Rows        int              `json:"rows"`
	Replayed    int              `json:"replayed"`
	Skipped     int              `json:"skipped"` // rows logged without a model input, or with one this model refuses
	Changed     int              `json:"changed"`
	ToMultipath int              `json:"to_multipath"`
	ToSingle    int              `json:"to_single"`
	Theta1Ratio float64          `json:"theta1_median_ratio"` // median replayed θ1 / logged θ1, over rows with both > 0
	Logged      side             `json:"logged_total"`
	Replayed2   side             `json:"replayed_total"`
	Decisions   []replayDecision `json:"decisions,omitempty"`
}

func replayCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("replay")
	dir := fs.String("models", "", "")
	// --model was replay's own name for the directory every other command calls --models: kept so that scripts
	// written for it go on working.
	fs.StringVar(dir, "model", "", "")
	dbPath := fs.String("db", "", "")
	since := fs.String("since", "", "")
	asJSON := fs.Bool("json", false, "")
	if err := cli.ParseNone(fs, args); err != nil {
		return badUsage(stderr, "replay: %v", err)
	}
	if err := needPath("--models", *dir, true); err != nil {
		return badUsage(stderr, "replay: %v", err)
	}
	e, _ := readEnv(os.Getenv) // replay reads no value that could be unusable
	params, name, err := model.Open(e.modelsDir(*dir))
	if err != nil {
		if *dir != "" {
			return badUsage(stderr, "replay: --models: %v", err)
		}
		fmt.Fprintf(stderr, "mpsurf-host: replay: %v\n", err)
		return exitFailed
	}
	var sinceMS int64
	if *since != "" {
		if sinceMS, err = store.ParseSince(*since); err != nil {
			return badUsage(stderr, "replay: --since: %v", err)
		}
	}
	db, _, err := openLog(*dbPath, false)
	if err != nil {
		return logOpenFailed(stderr, "replay", err)
	}
	defer db.Close()
	dec := decide.New(decide.Config{Params: params, ParamsSource: name})
	rep, err := replay(context.Background(), db, dec, sinceMS)
	if err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: replay: %v\n", err)
		return exitFailed
	}
	rep.Model = name
	if *asJSON {
		data, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(stdout, "%s\n", data)
		return exitOK
	}
	printReplay(stdout, rep)
	return exitOK
}

// replay re-evaluates every decision logged since sinceMS with dec.
func replay(ctx context.Context, db *store.Store, dec *decide.Decider, sinceMS int64) (replayReport, error) {
	var buf bytes.Buffer
	if _, err := db.Export(ctx, &buf, "jsonl", sinceMS, store.PathsRaw); err != nil {
		return replayReport{}, err
	}
	var rep replayReport
	var ratios []float64
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var row struct {
			TimeMS   int64           `json:"time_ms"`
			Origin   string          `json:"origin"`
			Decision json.RawMessage `json:"decision"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return rep, fmt.Errorf("export row: %w", err)
		}
		rep.Rows++
		var logged struct {
			Multipath  bool         `json:"multipath"`
			Theta1     *int64       `json:"theta1"`
			Theta2     *int64       `json:"theta2"`
			Terms      []model.Term `json:"terms"`
			ModelInput *model.Input `json:"model_input"`
		}
		if err := json.Unmarshal(row.Decision, &logged); err != nil || logged.ModelInput == nil {
			rep.Skipped++
			continue
		}
		out, err := dec.Evaluate(decide.Request{Origin: row.Origin}, *logged.ModelInput)
		if err != nil {
			// A logged input this model refuses (an older host logged what this one would not evaluate).
			rep.Skipped++
			continue
		}
		d := replayDecision{
			Origin: row.Origin, TimeMS: row.TimeMS,
			Logged:   sideOf(logged.Multipath, logged.Theta1, logged.Theta2, logged.Terms),
			Replayed: sideOf(out.Multipath, out.Theta1, out.Theta2, out.Terms),
			Reason:   out.Reason,
		}
		d.Changed = d.Logged.Multipath != d.Replayed.Multipath || !protocol.SameBytes(d.Logged.Theta1, d.Replayed.Theta1) ||
			!protocol.SameBytes(d.Logged.Theta2, d.Replayed.Theta2)
		rep.Replayed++
		if d.Changed {
			rep.Changed++
		}
		switch {
		case !d.Logged.Multipath && d.Replayed.Multipath:
			rep.ToMultipath++
		case d.Logged.Multipath && !d.Replayed.Multipath:
			rep.ToSingle++
		}
		if l, r := d.Logged.Theta1, d.Replayed.Theta1; l != nil && r != nil && *l > 0 && *r > 0 {
			ratios = append(ratios, float64(*r)/float64(*l))
		}
		rep.Logged.add(d.Logged)
		rep.Replayed2.add(d.Replayed)
		rep.Decisions = append(rep.Decisions, d)
	}
	if err := sc.Err(); err != nil {
		return rep, err
	}
	if len(ratios) > 0 {
		sort.Float64s(ratios)
		rep.Theta1Ratio = ratios[len(ratios)/2]
	}
	return rep, nil
}

func sideOf(mp bool, theta1 *int64, theta2 *int64, terms []model.Term) side {
	s := side{Multipath: mp, Theta1: theta1, Theta2: theta2}
	if !mp {
		return s
	}
	for _, t := range terms {
		if t.Value == nil || math.IsNaN(*t.Value) || math.IsInf(*t.Value, 0) {
			continue
		}
		switch t.Name {
		case "time_saved":
			s.TimeSavedS = *t.Value
		case "cellular_bytes":
			s.CellularBytes = *t.Value
		case "cellular_energy":
			s.CellularJ = *t.Value
		}
	}
	return s
}

func (s *side) add(o side) {
	if o.Multipath {
		s.MultipathCount++
	}
	s.TimeSavedS += o.TimeSavedS
	s.CellularBytes += o.CellularBytes
	s.CellularJ += o.CellularJ
}

func printReplay(w io.Writer, r replayReport) {
	fmt.Fprintf(w, "replayed %d of %d logged decisions under %s (%d logged without a model input)\n",
		r.Replayed, r.Rows, r.Model, r.Skipped)
	fmt.Fprintf(w, "changed: %d (single path -> multipath %d, multipath -> single path %d); median θ1 ratio %.3g\n",
		r.Changed, r.ToMultipath, r.ToSingle, r.Theta1Ratio)
	fmt.Fprintf(w, "%-10s %12s %16s %16s %16s\n", "", "multipath", "time saved (s)", "cellular (MB)", "cellular (J)")
	for _, x := range []struct {
		name string
		s    side
	}{{"logged", r.Logged}, {"replayed", r.Replayed2}} {
		fmt.Fprintf(w, "%-10s %12d %16.2f %16.2f %16.1f\n", x.name, x.s.MultipathCount, x.s.TimeSavedS, x.s.CellularBytes/1e6, x.s.CellularJ)
	}
}
