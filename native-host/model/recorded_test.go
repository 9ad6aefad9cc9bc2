package model

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// The recorded decisions: a fixed set of model inputs and the decision the model made for each, kept in
// testdata/recorded-decisions.jsonl.gz. A change that means to leave every decision as it is (evaluating faster, say)
// must reproduce them: the same multipath, θ1, θ2, WiFi as backup, trial, reason and terms, and the same expected
// utility and predictions up to rounding (a sum taken in another order differs in its last bits).
//
// The inputs are inputs the testbed's hosts logged (the decisions grid's decision logs, model_input) and inputs
// drawn at random over the ranges a host meets (recordedInputs); both were recorded with the model of the commit
// that wrote the file. -record writes the file anew from the random inputs and the logged ones in the file named by
// MPSURF_RECORD_INPUTS (one model input per line); -rerecord evaluates the file's own inputs again, for a change
// that means to change decisions (say so in its commit).
var (
	record   = flag.Bool("record", false, "write testdata/recorded-decisions.jsonl.gz anew (random inputs, and those of $MPSURF_RECORD_INPUTS)")
	rerecord = flag.Bool("rerecord", false, "evaluate testdata/recorded-decisions.jsonl.gz's inputs again and write their decisions")
)

const recordedFile = "testdata/recorded-decisions.jsonl.gz"

// recordedOut is what is kept of an Output: everything but the size (the input's own).
type recordedOut struct {
	Multipath      bool    `json:"multipath"`
	Theta1         *int64  `json:"theta1"`
	Theta2         *int64  `json:"theta2"`
	DeadlineMS     int64   `json:"deadline_ms"`
	Reason         string  `json:"reason"`
	Terms          []Term  `json:"terms"`
	Protocol       string  `json:"protocol"`
	Rule           bool    `json:"rule"`
	Prior          bool    `json:"prior"`
	Trial          bool    `json:"trial"`
	PreferCellular bool    `json:"prefer_cellular"`
	Mode           string  `json:"mode"`
	Expected       float64 `json:"expected"`
	PredictedSPMS  float64 `json:"predicted_sp_ms"`
	PredictedMPMS  float64 `json:"predicted_mp_ms"`
	Err            string  `json:"err,omitempty"`
}

type recorded struct {
	Source string      `json:"source"` // "random N" or where a logged input came from
	In     Input       `json:"in"`
	Out    recordedOut `json:"out"`
}

func recordOf(out Output, err error) recordedOut {
	if err != nil {
		return recordedOut{Err: err.Error()}
	}
	return recordedOut{Multipath: out.Multipath, Theta1: out.Theta1, Theta2: out.Theta2, DeadlineMS: out.DeadlineMS, Reason: out.Reason,
		Terms: out.Terms, Protocol: out.Protocol, Rule: out.Rule, Prior: out.Prior, Trial: out.Trial, PreferCellular: out.PreferCellular,
		Mode: out.Mode, Expected: out.Expected, PredictedSPMS: out.PredictedSPMS, PredictedMPMS: out.PredictedMPMS}
}

// close says whether two recorded numbers are the same up to rounding.
func closeTo(a, b float64) bool {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-12
}

// diff says how got differs from want, "" when it does not.
func (want recordedOut) diff(got recordedOut) string {
	eq := func(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	switch {
	case want.Err != got.Err:
		return fmt.Sprintf("error %q, want %q", got.Err, want.Err)
	case want.Multipath != got.Multipath || !eq(want.Theta1, got.Theta1) || !eq(want.Theta2, got.Theta2) || want.PreferCellular != got.PreferCellular:
		return fmt.Sprintf("decision multipath %v θ1 %v θ2 %v prefer_cellular %v, want %v %v %v %v",
			got.Multipath, show(got.Theta1), show(got.Theta2), got.PreferCellular, want.Multipath, show(want.Theta1), show(want.Theta2), want.PreferCellular)
	case want.Trial != got.Trial || want.Rule != got.Rule || want.Prior != got.Prior || want.Mode != got.Mode || want.Protocol != got.Protocol || want.DeadlineMS != got.DeadlineMS:
		return fmt.Sprintf("flags %+v, want %+v", got, want)
	case want.Reason != got.Reason:
		return fmt.Sprintf("reason\n  %q\nwant\n  %q", got.Reason, want.Reason)
	case !closeTo(want.Expected, got.Expected) || !closeTo(want.PredictedSPMS, got.PredictedSPMS) || !closeTo(want.PredictedMPMS, got.PredictedMPMS):
		return fmt.Sprintf("expected %v, predicted %v / %v ms; want %v, %v / %v", got.Expected, got.PredictedSPMS, got.PredictedMPMS, want.Expected, want.PredictedSPMS, want.PredictedMPMS)
	case len(want.Terms) != len(got.Terms):
		return fmt.Sprintf("%d terms, want %d", len(got.Terms), len(want.Terms))
	}
	for i, w := range want.Terms {
		g := got.Terms[i]
		if w.Name != g.Name || w.Unit != g.Unit || w.Note != g.Note || (w.Value == nil) != (g.Value == nil) || (w.Value != nil && !closeTo(*w.Value, *g.Value)) {
			return fmt.Sprintf("term %d %+v (value %v), want %+v (value %v)", i, g, show64(g.Value), w, show64(w.Value))
		}
	}
	return ""
}

func show(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func show64(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func TestRecordedDecisions(t *testing.T) {
	p := params(t)
	if *record || *rerecord {
		var recs []recorded
		if *record {
			for i, in := range recordedInputs(400) {
				recs = append(recs, recorded{Source: fmt.Sprintf("random %d", i), In: in})
			}
			if f := os.Getenv("MPSURF_RECORD_INPUTS"); f != "" {
				logged, err := readLoggedInputs(f)
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, logged...)
			}
		} else {
			recs = readRecorded(t)
		}
		var buf bytes.Buffer
		for i := range recs {
			in := recs[i].In
			in.Params = p
			recs[i].Out = recordOf(Evaluate(in))
			b, err := json.Marshal(recs[i])
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(append(b, '\n'))
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(buf.Bytes())
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(recordedFile, gz.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %d decisions in %s", len(recs), recordedFile)
		return
	}
	recs := readRecorded(t)
	if len(recs) < 400 {
		t.Fatalf("%d recorded decisions, want at least 400", len(recs))
	}
	kinds := map[string]int{}
	for _, r := range recs {
		in := r.In
		in.Params = p
		got := recordOf(Evaluate(in))
		if d := r.Out.diff(got); d != "" {
			t.Errorf("%s (%s): %s", r.Source, in.Origin, d)
		}
		switch {
		case r.Out.Err != "":
			kinds["refused"]++
		case r.Out.PreferCellular:
			kinds["wifi as backup"]++
		case r.Out.Theta1 == nil:
			kinds["never"]++
		case *r.Out.Theta1 == 0:
			kinds["from the first byte"]++
		default:
			kinds["waits for θ1"]++
		}
	}
	// The recording exercises every kind of decision, or it would not guard them.
	for _, k := range []string{"never", "from the first byte", "waits for θ1", "wifi as backup"} {
		if kinds[k] < 10 {
			t.Errorf("only %d recorded decisions of kind %q: %v", kinds[k], k, kinds)
		}
	}
	t.Logf("%d recorded decisions: %v", len(recs), kinds)
}

func readRecorded(t *testing.T) []recorded {
	t.Helper()
	f, err := os.Open(recordedFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []recorded
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r recorded
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", recordedFile, err)
		}
		out = append(out, r)
	}
	return out
}

// readLoggedInputs reads model inputs, one JSON object per line ({"source": ..., "in": ...} or a bare input).
func readLoggedInputs(file string) ([]recorded, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []recorded
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r recorded
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.In.Origin == "" {
			r = recorded{Source: fmt.Sprintf("%s:%d", filepath.Base(file), n)}
			if err := json.Unmarshal(sc.Bytes(), &r.In); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// recordedInputs draws n model inputs over the ranges a host meets: WiFi and cellular paths measured, partly
// measured or from priors (rates 0.3-200 Mbit/s, RTTs 5-600 ms, losses, spreads, aged and bounded rates), pages
// never seen, seen a few times, with site and user history, or of exact size, every protocol, the radio's states
// sure and unsure, every preference with deadlines, quotas, batteries, learned corrections and site rules.
func recordedInputs(n int) []Input {
	r := rand.New(rand.NewPCG(32, 1))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	logU := func(lo, hi float64) float64 { return lo * math.Exp(r.Float64()*math.Log(hi/lo)) }
	path := func(kind string, rttLo, rttHi, rateLo, rateHi float64) *Path {
		if r.IntN(6) == 0 {
			return nil // from priors
		}
		p := &Path{Name: kind, Kind: kind, Up: true}
		if r.IntN(5) > 0 {
			p.RTTMS = f(math.Round(logU(rttLo, rttHi)*10) / 10)
		}
		if r.IntN(5) > 0 {
			p.DownBps = f(math.Round(logU(rateLo, rateHi) * 1e6))
			if r.IntN(3) == 0 {
				p.Spread = math.Round(r.Float64()*80) / 100
			}
			if kind == "cellular" && r.IntN(2) == 0 {
				p.DownAgeS = f(math.Round(logU(0.5, 600)))
				if r.IntN(2) == 0 {
					p.DownMeanBps, p.DownMeanN = f(math.Round(logU(rateLo, rateHi)*1e6)), int64(1+r.IntN(20))
				}
			}
			if kind == "wifi" && r.IntN(6) == 0 {
				p.DownBound = true
			}
		}
		if r.IntN(3) == 0 {
			p.Loss = f(math.Round(r.Float64()*300) / 10000)
		} else {
			p.Loss = f(0)
		}
		if kind == "cellular" && r.IntN(25) == 0 {
			p.Up = false
		}
		return p
	}
	sizes := func(k int, lo, hi float64) []int64 {
		var out []int64
		base := logU(lo, hi)
		for range k {
			out = append(out, int64(base*(0.8+0.4*r.Float64())))
		}
		return out
	}
	var out []Input
	for i := range n {
		tech := "lte"
		if r.IntN(5) == 0 {
			tech = "3g"
		}
		in := Input{Origin: fmt.Sprintf("https://site%d.example", i)}
		in.Protocol = pick(H2, H2, H2, HTTP1, HTTP1, Unknown, "", H3)
		in.Primary = path("wifi", 2, 300, 0.5, 200)
		if tech == "3g" {
			in.Secondary = path("cellular", 80, 600, 0.2, 8)
		} else {
			in.Secondary = path("cellular", 25, 300, 0.3, 100)
		}
		switch r.IntN(6) {
		case 0: // never seen, no history
		case 1: // never seen; the site's other pages and the user's elsewhere
			in.Size = Size{Known: true, Origin: sizes(1+r.IntN(20), 10e3, 5e6), Others: sizes(r.IntN(20), 10e3, 5e6)}
		case 2: // the user's pages elsewhere only
			in.Size = Size{Others: sizes(1+r.IntN(20), 10e3, 5e6)}
		case 3: // an exact size (a download)
			v := int64(logU(10e3, 50e6))
			in.Size = Size{Known: true, Exact: true, Median: &v}
		default: // seen: the path class's loads, maybe the site's others
			in.Size = Size{Known: true, Points: sizes(1+r.IntN(20), 5e3, 8e6)}
			if r.IntN(2) == 0 {
				in.Size.Origin = sizes(1+r.IntN(20), 5e3, 8e6)
			}
			if r.IntN(3) == 0 {
				in.Size.Others = sizes(1+r.IntN(20), 5e3, 8e6)
			}
		}
		if in.Size.Known && len(in.Size.Points) > 0 {
			med := int64(medianOf(in.Size.Points))
			in.Size.Median = &med
			in.Size.Objects = int64(1 + r.IntN(200))
		}
		if r.IntN(3) == 0 {
			in.Conns = int64(1 + r.IntN(8))
		}
		states := map[string][]string{"lte": {"idle", "promotion", "continuous", "inactivity", "short_drx", "long_drx"}, "3g": {"idle", "promo_idle_dch", "dch", "dch_tail", "fach"}}[tech]
		if r.IntN(8) > 0 {
			in.RRC = &RRC{Tech: tech, State: pick(states...), SinceMS: int64(logU(10, 120000))}
			if r.IntN(3) == 0 {
				k := 2 + r.IntN(2)
				left := 1.0
				for j := range k {
					share := RRCShare{State: pick(states...), SinceMS: int64(logU(10, 20000)), P: left}
					if j < k-1 {
						share.P = math.Round(left*r.Float64()*100) / 100
					}
					left -= share.P
					in.RRC.Spread = append(in.RRC.Spread, share)
				}
				in.RRC.State = "idle"
			}
		} else if r.IntN(2) == 0 {
			in.RRC = &RRC{Tech: tech}
		}
		if r.IntN(5) > 0 {
			deadlines := []int64{3000, 3000, 1000, 5000, 10000}
			pr := protocol.Prefs{Mode: pick(protocol.ModePerformance, protocol.ModeBalanced, protocol.ModeBatterySaver), DeadlineMS: deadlines[r.IntN(len(deadlines))],
				BatteryFloorPercent: 20, ChargingUnlimited: r.IntN(2) == 0}
			if r.IntN(5) == 0 {
				q := int64(logU(1e6, 50e9))
				pr.QuotaBytes = &q
				in.Usage = &Usage{UsedBytes: int64(float64(q) * r.Float64() * 1.1), DaysLeft: int64(r.IntN(31))}
			}
			in.Prefs = &pr
		}
		if r.IntN(4) == 0 {
			in.Battery = &Battery{Present: true, Percent: math.Round(r.Float64() * 100), Charging: r.IntN(2) == 0}
		}
		if r.IntN(4) == 0 {
			in.Learned = &Correction{SP: 0.5 + r.Float64(), MP: 0.5 + r.Float64(), SPLoad: int64(r.IntN(6)), MPLoad: int64(r.IntN(6))}
		}
		if r.IntN(15) == 0 {
			in.Override = pick(OverrideAlways, OverrideNever)
		}
		out = append(out, in)
	}
	return out
}
