package profiles

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/e2e/linkem"
)

//go:embed *.json traces
var builtin embed.FS

// builtinTraceDir is where built-in profiles' traces live inside builtin: a built-in profile names them as
// "traces/<file>", as a profile file names its traces relative to itself.
const builtinTraceDir = "traces"

// Interfaces are the client interfaces every profile describes.
var Interfaces = []string{"wlan0", "wwan0"}

// Profile is one set of link conditions for the two paths.
type Profile struct {
	ID          string            `json:"id"`
	Description string            `json:"description"`
	Source      string            `json:"source"`
	Links       map[string]*Link  `json:"links"`
	Sources     map[string]string `json:"sources"`
}

// Link describes one client interface's emulated link.
type Link struct {
	Tech       string     `json:"tech"` // wifi, lte or 3g
	Down       *Direction `json:"down"`
	Up         *Direction `json:"up"`
	QueueBytes int        `json:"queue_bytes"` // drop-tail limit, each direction
}

// Direction is one direction of a link. Exactly one of RateMbit and Trace is
// set.
type Direction struct {
	RateMbit *float64 `json:"rate_mbit,omitempty"`
	Trace    string   `json:"trace,omitempty"` // Mahimahi trace, relative to the profile file
	DelayMs  *float64 `json:"delay_ms"`        // one-way
	Loss     *float64 `json:"loss,omitempty"`  // probability, default 0

	trace *linkem.Trace
}

var techs = []string{"wifi", "lte", "3g"}

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.+_-]{0,63}$`)

// Names lists the built-in profiles.
func Names() []string {
	ents, _ := fs.ReadDir(builtin, ".")
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, strings.TrimSuffix(e.Name(), ".json"))
		}
	}
	sort.Strings(names)
	return names
}

// Load returns a built-in profile by id, or reads the JSON file at nameOrPath
// when it contains a path separator or ends in ".json".
func Load(nameOrPath string) (*Profile, error) {
	if strings.ContainsRune(nameOrPath, '/') || strings.HasSuffix(nameOrPath, ".json") {
		b, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, err
		}
		p, err := Parse(bytes.NewReader(b), filepath.Dir(nameOrPath))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", nameOrPath, err)
		}
		return p, nil
	}
	b, err := builtin.ReadFile(nameOrPath + ".json")
	if err != nil {
		return nil, fmt.Errorf("no built-in profile %q (have %s)", nameOrPath, strings.Join(Names(), ", "))
	}
	p, err := parse(bytes.NewReader(b), builtinTrace)
	if err != nil {
		return nil, fmt.Errorf("built-in profile %s: %w", nameOrPath, err)
	}
	return p, nil
}

// Parse reads and validates a profile. Trace paths are resolved against dir;
// an empty dir forbids traces.
func Parse(r io.Reader, dir string) (*Profile, error) {
	var open traceOpener
	if dir != "" {
		open = func(name string) (*linkem.Trace, error) {
			if !filepath.IsAbs(name) {
				name = filepath.Join(dir, name)
			}
			return linkem.LoadTrace(name)
		}
	}
	return parse(r, open)
}

// traceOpener reads the trace a profile names; nil forbids traces.
type traceOpener func(name string) (*linkem.Trace, error)

// builtinTrace reads a built-in profile's trace from the files built into the binary.
func builtinTrace(name string) (*linkem.Trace, error) {
	clean := path.Clean(name)
	if path.Dir(clean) != builtinTraceDir {
		return nil, fmt.Errorf("a built-in profile's trace must be %s/<file>, not %q", builtinTraceDir, name)
	}
	f, err := builtin.Open(clean)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := linkem.ParseTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

func parse(r io.Reader, open traceOpener) (*Profile, error) {
	dec := json.NewDecoder(io.LimitReader(r, 1<<20))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("profile JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("profile JSON: data after the profile object")
	}
	if err := p.validate(open); err != nil {
		return nil, err
	}
	return &p, nil
}

// HasTrace reports whether a direction of a link follows a trace rather than a fixed rate.
func (p *Profile) HasTrace() bool {
	for _, l := range p.Links {
		if l.Down.Trace != "" || l.Up.Trace != "" {
			return true
		}
	}
	return false
}

func (p *Profile) validate(open traceOpener) error {
	if !idRE.MatchString(p.ID) {
		return fmt.Errorf("id: %q must be 1-64 of a-z 0-9 . + _ - starting with a letter or digit", p.ID)
	}
	if strings.TrimSpace(p.Description) == "" {
		return errors.New("description: missing")
	}
	if strings.TrimSpace(p.Source) == "" {
		return errors.New("source: missing")
	}
	for name := range p.Links {
		if !slices.Contains(Interfaces, name) {
			return fmt.Errorf("links.%s: unknown interface (want %s)", name, strings.Join(Interfaces, ", "))
		}
	}
	var numbers []string // field paths that need a source
	for _, name := range Interfaces {
		l := p.Links[name]
		at := "links." + name
		if l == nil {
			return fmt.Errorf("%s: missing", at)
		}
		if !slices.Contains(techs, l.Tech) {
			return fmt.Errorf("%s.tech: %q, want one of %s", at, l.Tech, strings.Join(techs, ", "))
		}
		if l.QueueBytes < linkem.MTU || l.QueueBytes > 1<<30 {
			return fmt.Errorf("%s.queue_bytes: %d, want %d..%d", at, l.QueueBytes, linkem.MTU, 1<<30)
		}
		numbers = append(numbers, at+".queue_bytes")
		for _, d := range []struct {
			name string
			dir  *Direction
		}{{"down", l.Down}, {"up", l.Up}} {
			at := at + "." + d.name
			if d.dir == nil {
				return fmt.Errorf("%s: missing", at)
			}
			fields, err := d.dir.validate(at, open)
			if err != nil {
				return err
			}
			numbers = append(numbers, fields...)
		}
	}
	for key, src := range p.Sources {
		if strings.TrimSpace(src) == "" {
			return fmt.Errorf("sources[%q]: empty", key)
		}
		if !slices.ContainsFunc(numbers, func(f string) bool { return covers(key, f) }) {
			return fmt.Errorf("sources[%q]: names no field of this profile", key)
		}
	}
	for _, f := range numbers {
		found := false
		for key := range p.Sources {
			if covers(key, f) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%s: no entry in sources (key %q or a prefix of it)", f, f)
		}
	}
	return nil
}

// covers reports whether the sources key names field f or a parent of it.
func covers(key, f string) bool {
	return key == f || strings.HasPrefix(f, key+".")
}

func (d *Direction) validate(at string, open traceOpener) (numbers []string, err error) {
	switch {
	case d.RateMbit != nil && d.Trace != "":
		return nil, fmt.Errorf("%s: set rate_mbit or trace, not both", at)
	case d.RateMbit == nil && d.Trace == "":
		return nil, fmt.Errorf("%s.rate_mbit: missing (or give a trace)", at)
	case d.RateMbit != nil:
		if r := *d.RateMbit; !(r >= 0.001 && r <= 10000) {
			return nil, fmt.Errorf("%s.rate_mbit: %v, want 0.001..10000", at, r)
		}
		numbers = append(numbers, at+".rate_mbit")
	default:
		if open == nil {
			return nil, fmt.Errorf("%s.trace: a profile read without a directory cannot refer to a trace file", at)
		}
		tr, err := open(d.Trace)
		if err != nil {
			return nil, fmt.Errorf("%s.trace: %w", at, err)
		}
		d.trace = tr
		numbers = append(numbers, at+".trace")
	}
	if d.DelayMs == nil {
		return nil, fmt.Errorf("%s.delay_ms: missing", at)
	}
	if v := *d.DelayMs; !(v >= 0 && v <= 60000) {
		return nil, fmt.Errorf("%s.delay_ms: %v, want 0..60000 (one-way)", at, v)
	}
	numbers = append(numbers, at+".delay_ms")
	if d.Loss != nil {
		if v := *d.Loss; !(v >= 0 && v < 1) {
			return nil, fmt.Errorf("%s.loss: %v, want a probability in [0, 1)", at, v)
		}
		numbers = append(numbers, at+".loss")
	}
	return numbers, nil
}

// Params converts a direction to emulator parameters.
func (l *Link) Params(d *Direction) linkem.Params {
	p := linkem.Params{
		Delay:      time.Duration(math.Round(*d.DelayMs * float64(time.Millisecond))),
		QueueBytes: l.QueueBytes,
		Trace:      d.trace,
	}
	if d.RateMbit != nil {
		p.RateBps = *d.RateMbit * 1e6
	}
	if d.Loss != nil {
		p.Loss = *d.Loss
	}
	return p
}

// RTTMs returns the link's configured round-trip time: the two one-way
// delays, without serialization or queueing.
func (l *Link) RTTMs() float64 { return *l.Down.DelayMs + *l.Up.DelayMs }
