package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	models "github.com/mpsurf/mpsurf/policy-models"
)

// decideCmd evaluates one decision offline with the same code as the native decide message:
//
//	mpsurf-host decide --origin URL [--proto h2] [--size BYTES] [--paths FILE] [--rrc STATE] [--rrc-tech lte]
//	  [--rrc-since-ms N] [--prefs FILE] [--json]
//
// --paths FILE is a JSON array of Path objects (status --json prints them); the first wifi path is the primary,
// the first cellular one the secondary.
func decideCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("decide")
	origin := fs.String("origin", "", "")
	proto := fs.String("proto", "unknown", "")
	size := fs.String("size", "", "")
	pathsFile := fs.String("paths", "", "")
	rrcState := fs.String("rrc", "", "")
	rrcTech := fs.String("rrc-tech", "lte", "")
	rrcSince := fs.Int64("rrc-since-ms", 0, "")
	prefsFile := fs.String("prefs", "", "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return badUsage(stderr, "decide: bad arguments %q", args)
	}
	norm, err := protocol.NormalizeOrigin(*origin)
	if err != nil {
		return badUsage(stderr, "decide: --origin: %v", err)
	}
	params, err := model.Load(models.FS, models.Dir)
	if err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: decide: %v\n", err)
		return exitFailed
	}
	in := model.Input{Origin: norm, Protocol: *proto, Params: params, Size: model.Size{Source: "none"}}
	if *size != "" {
		n, err := strconv.ParseInt(*size, 10, 64)
		if err != nil || n < 0 || n > protocol.MaxSafeInt {
			return badUsage(stderr, "decide: --size: not a byte count: %q", *size)
		}
		in.Size = model.Size{Known: true, Median: &n, P90: &n, Samples: 0, Source: "command line"}
	}
	if *pathsFile != "" {
		var paths []model.Path
		if err := readJSON(*pathsFile, &paths); err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: decide: --paths: %v\n", err)
			return exitFailed
		}
		for i := range paths {
			switch {
			case paths[i].Kind == "wifi" && in.Primary == nil:
				in.Primary = &paths[i]
			case paths[i].Kind == "cellular" && in.Secondary == nil:
				in.Secondary = &paths[i]
			}
		}
	}
	if *rrcState != "" {
		in.RRC = &model.RRC{Tech: *rrcTech, State: *rrcState, SinceMS: *rrcSince, Source: "command line"}
	}
	if *prefsFile != "" {
		var p model.Prefs
		if err := readJSON(*prefsFile, &p); err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: decide: --prefs: %v\n", err)
			return exitFailed
		}
		in.Prefs = &p
	}
	snap, err := policy.NewStore(policy.EmbeddedSource()).Snapshot()
	if err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: decide: %v\n", err)
		return exitFailed
	}
	base := policy.Decide(policy.Input{Origin: norm, Model: snap.File, Source: snap.Source, Revision: snap.Policy.Revision})
	body := host.Apply(host.DecisionBody{Decision: base.Decision(norm, -1, "offline")}, model.Evaluate(in), params)
	if *asJSON {
		data, _ := json.MarshalIndent(body, "", "  ")
		fmt.Fprintf(stdout, "%s\n", data)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s: multipath %v, theta1 %d bytes, deadline %d ms\nreason: %s\n",
		body.Origin, body.Multipath, body.Theta1, body.DeadlineMS, body.Reason)
	for _, t := range body.Terms {
		v := "-"
		if t.Value != nil {
			v = strconv.FormatFloat(*t.Value, 'g', 6, 64)
		}
		fmt.Fprintf(stdout, "  %-24s %12s %-5s %s\n", t.Name, v, t.Unit, t.Note)
	}
	return exitOK
}

func readJSON(name string, v any) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, 1<<20))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
