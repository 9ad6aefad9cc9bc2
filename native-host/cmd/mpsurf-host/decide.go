package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// decideCmd evaluates one decision offline with the same code as the native decide message (decideUsage).
func decideCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("decide")
	origin := fs.String("origin", "", "")
	proto := fs.String("proto", "unknown", "")
	size := fs.String("size", "", "")
	pathsFile := fs.String("paths", "", "")
	rrcState := fs.String("rrc", "", "")
	rrcTech := fs.String("rrc-tech", "lte", "")
	rrcSince := fs.Int64("rrc-since-ms", 0, "")
	rrcSpread := fs.String("rrc-spread", "", "")
	prefsFile := fs.String("prefs", "", "")
	modelsDir := fs.String("models", "", "")
	path := fs.String("path", "/", "")
	asJSON := fs.Bool("json", false, "")
	if err := cli.ParseNone(fs, args); err != nil {
		return badUsage(stderr, "decide: %v", err)
	}
	norm, err := protocol.NormalizeOrigin(*origin)
	if err != nil {
		return badUsage(stderr, "decide: --origin: %v", err)
	}
	for _, f := range []struct {
		flag, path string
		dir        bool
	}{{"--models", *modelsDir, true}, {"--paths", *pathsFile, false}, {"--prefs", *prefsFile, false}} {
		if err := needPath(f.flag, f.path, f.dir); err != nil {
			return badUsage(stderr, "decide: %v", err)
		}
	}
	e, _ := readEnv(os.Getenv) // decide reads no value that could be unusable
	params, src, err := model.Open(e.modelsDir(*modelsDir))
	if err != nil {
		if *modelsDir != "" {
			// The directory the user named holds no usable model: a bad argument, like a missing one.
			return badUsage(stderr, "decide: --models: %v", err)
		}
		fmt.Fprintf(stderr, "mpsurf-host: decide: %v\n", err)
		return exitFailed
	}
	if *rrcState != "" || *rrcSpread != "" {
		states, ok := params.RRCStates(*rrcTech)
		if !ok {
			return badUsage(stderr, "decide: --rrc-tech %q: want lte or 3g", *rrcTech)
		}
		if *rrcState != "" && !slices.Contains(states, *rrcState) {
			return badUsage(stderr, "decide: --rrc %q: not a state of the %s radio model; want one of %s", *rrcState, strings.ToUpper(*rrcTech), strings.Join(states, ", "))
		}
	}
	if *rrcSince < 0 {
		return badUsage(stderr, "decide: --rrc-since-ms %d: want 0 or more", *rrcSince)
	}
	given := &decide.Given{Proto: *proto}
	// --size is one observed load of the page (repeated: several); the model still weighs its size prior.
	for _, f := range strings.Split(*size, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || n < 0 || n > model.MaxSizeByte {
			return badUsage(stderr, "decide: --size: not a byte count: %q", f)
		}
		given.Sizes.Class = append(given.Sizes.Class, n)
	}
	if *pathsFile != "" {
		var paths []model.Path
		if err := readJSON(*pathsFile, &paths); err != nil {
			return badUsage(stderr, "decide: --paths: %v", err)
		}
		for i := range paths {
			switch {
			case paths[i].Kind == "wifi" && given.Paths.Primary == nil:
				given.Paths.Primary = &paths[i]
			case paths[i].Kind == "cellular" && given.Paths.Secondary == nil:
				given.Paths.Secondary = &paths[i]
			}
		}
	}
	if *rrcState != "" {
		given.Paths.RRC = &model.RRC{Tech: *rrcTech, State: *rrcState, SinceMS: *rrcSince, Source: "command line"}
	}
	if *rrcSpread != "" {
		spread, err := parseSpread(*rrcSpread)
		if err != nil {
			return badUsage(stderr, "decide: --rrc-spread: %v", err)
		}
		states, _ := params.RRCStates(*rrcTech)
		for _, sh := range spread {
			if !slices.Contains(states, sh.State) {
				return badUsage(stderr, "decide: --rrc-spread: %q is not a state of the %s radio model; want one of %s", sh.State, strings.ToUpper(*rrcTech), strings.Join(states, ", "))
			}
		}
		if given.Paths.RRC == nil {
			// The least awake state stands first in a host's spread; here the first given.
			given.Paths.RRC = &model.RRC{Tech: *rrcTech, State: spread[0].State, SinceMS: *rrcSince, Source: "command line"}
		}
		given.Paths.RRC.Spread = spread
	}
	if *prefsFile != "" {
		var p protocol.Prefs
		if err := readJSON(*prefsFile, &p); err != nil {
			return badUsage(stderr, "decide: --prefs: %v", err)
		}
		given.Settings = &p
	}
	// The serving host sets refused measurements aside for priors; here they came from the user: say what is wrong.
	check := model.Input{Params: params, Primary: given.Paths.Primary, Secondary: given.Paths.Secondary, RRC: given.Paths.RRC}
	if err := check.Validate(); err != nil {
		// Paths, RRC and spread all came from the command line: a value out of range is a bad argument.
		return badUsage(stderr, "decide: %v", err)
	}
	dec := decide.New(decide.Config{Params: params, ParamsSource: src, Links: given, Memory: given})
	d, err := dec.Decide(context.Background(), decide.Request{Origin: norm, Path: *path, Tab: -1, Nav: "offline"})
	if err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: decide: %v\n", err)
		return exitFailed
	}
	body := d.Body()
	if *asJSON {
		data, _ := json.MarshalIndent(body, "", "  ")
		fmt.Fprintf(stdout, "%s\n", data)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s: multipath %v, theta1 %s, theta2 %s, deadline %s, basis %s\nreason: %s\n",
		body.Origin, body.Multipath, theta1Text(body.Theta1), theta2Text(body.Theta2), msText(body.DeadlineMS), body.Basis, body.Reason)
	for _, t := range body.Terms {
		fmt.Fprintf(stdout, "  %-24s %14s  %s\n", t.Name, termText(t), t.Note)
	}
	return exitOK
}

// termText is a model term's value for a person: sizes in kB/MB, rates in Mbit/s, energy in J or mJ, a few
// significant digits otherwise, never a float's exponent.
func termText(t model.Term) string {
	if t.Value == nil {
		return "-"
	}
	v := *t.Value
	switch t.Unit {
	case "B":
		return model.HumanBytes(v)
	case "bit/s":
		return model.HumanBits(v)
	case "J":
		if math.Abs(v) < 1 && v != 0 {
			return strconv.FormatFloat(v*1000, 'f', 1, 64) + " mJ"
		}
	}
	text := strconv.FormatFloat(v, 'f', -1, 64)
	if math.Abs(v) >= 1e-3 || v == 0 {
		text = strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
	}
	if t.Unit == "" {
		return text
	}
	return text + " " + t.Unit
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

// parseSpread reads --rrc-spread: STATE:P pairs, comma-separated; the model checks that the P sum to 1.
func parseSpread(v string) ([]model.RRCShare, error) {
	var out []model.RRCShare
	for _, f := range strings.Split(v, ",") {
		state, p, ok := strings.Cut(strings.TrimSpace(f), ":")
		x, err := strconv.ParseFloat(p, 64)
		if !ok || state == "" || err != nil {
			return nil, fmt.Errorf("%q is not STATE:PROBABILITY", f)
		}
		out = append(out, model.RRCShare{State: state, P: x})
	}
	return out, nil
}
