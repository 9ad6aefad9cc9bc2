package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/radio"
	models "github.com/mpsurf/mpsurf/policy-models"
)

// FileName is the model file inside a policy-models directory.
const FileName = "model.json"

// MaxFileSize caps model.json; the real one is about 7 KB.
const MaxFileSize = 64 << 10

// Mode names (PROTOCOL.md Prefs.mode).
const (
	Performance  = protocol.ModePerformance
	Balanced     = protocol.ModeBalanced
	BatterySaver = protocol.ModeBatterySaver
)

var modeNames = []string{Performance, Balanced, BatterySaver}

// priorKinds are the technologies model.json gives priors for: the primary's (WiFi, wired) and the secondary's.
var priorKinds = []string{"wifi", "ethernet", radio.LTE, radio.ThreeG}

// FieldError is a problem with one field of one file.
type FieldError struct {
	File, Field, Problem string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Problem
	}
	return e.File + ": " + e.Field + ": " + e.Problem
}

// Load reads model.json from fsys (a policy-models directory or its embedded copy) and the radio and baseline
// files it names.
func Load(fsys fs.FS, dir string) (*Params, error) {
	name := path.Join(dir, FileName)
	data, err := fs.ReadFile(fsys, FileName)
	if err != nil {
		return nil, &FieldError{File: name, Problem: err.Error()}
	}
	f, err := Parse(name, data)
	if err != nil {
		return nil, err
	}
	p := f.Params
	p.Radios = make(map[string]*radio.Model, len(f.RadioFiles))
	for tech, file := range f.RadioFiles {
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, &FieldError{File: name, Field: "radio_files." + tech, Problem: err.Error()}
		}
		m, err := radio.Parse(b)
		if err != nil {
			return nil, &FieldError{File: path.Join(dir, file), Problem: err.Error()}
		}
		if m.Technology != tech {
			return nil, &FieldError{File: name, Field: "radio_files." + tech,
				Problem: fmt.Sprintf("%s describes %q", file, m.Technology)}
		}
		p.Radios[tech] = m
	}
	b, err := fs.ReadFile(fsys, f.BaselineFile)
	if err != nil {
		return nil, &FieldError{File: name, Field: "baseline_file", Problem: err.Error()}
	}
	base, err := policy.Parse(path.Join(dir, f.BaselineFile), b)
	if err != nil {
		return nil, err
	}
	p.BaselineID, p.BaselineVersion = base.ID, base.Version
	p.BaselineMultipath, p.BaselineTheta1 = base.Multipath, float64(base.Theta1Bytes)
	return &p, nil
}

// File is model.json parsed: the numbers, and the names of the files it relies on.
type File struct {
	Params       Params
	RadioFiles   map[string]string
	BaselineFile string
}

// Parse checks data as model.json; name is how errors refer to it. Every field must be present, known and in
// range, and every number must have a source (an entry for its path or for a prefix of it).
func Parse(name string, data []byte) (File, error) {
	if len(data) > MaxFileSize {
		return File{}, &FieldError{File: name, Problem: fmt.Sprintf("larger than %d bytes", MaxFileSize)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil || root == nil || dec.More() {
		return File{}, &FieldError{File: name, Problem: "not one JSON object"}
	}
	r := &reader{name: name, root: root, seen: map[string]bool{"$schema": true, "description": true, "sources": true}}
	var f File
	p := &f.Params

	p.ID = r.str("id", 64)
	if r.err == nil && (p.ID == "" || strings.Trim(p.ID, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "") {
		r.fail("id", "must be 1 to 64 of A-Z a-z 0-9 . _ -")
	}
	p.Version = int64(r.num("version", 1, 1<<53-1, true, false))
	f.BaselineFile = r.file("baseline_file")
	f.RadioFiles = map[string]string{}
	for _, tech := range []string{radio.LTE, radio.ThreeG, radio.WiFi} {
		f.RadioFiles[tech] = r.file("radio_files." + tech)
	}

	t := &p.Transport
	t.MSSBytes = r.num("transport.mss_bytes", 500, 9000, true, true)
	t.InitialWindow = r.num("transport.initial_window_segments", 1, 100, true, true)
	t.HandshakeRTTs = r.num("transport.handshake_rtts", 0, 10, false, true)
	t.TLSRTTs = r.num("transport.tls_rtts", 0, 10, false, true)
	t.RequestRTTs = r.num("transport.request_rtts", 0, 10, false, true)
	t.MathisC = r.num("transport.mathis_c", 0.1, 10, false, true)
	t.JoinRTTs = r.num("transport.join_rtts", 0, 10, false, true)
	t.EstablishedRTTs = r.num("transport.established_rtts", 0, 10, false, true)
	t.MaxSlowStartRs = int(r.num("transport.max_slow_start_rounds", 1, 60, true, true))
	p.Multipath.HOLDiscount = r.num("multipath.hol_discount", 0, 1, false, true)
	p.Multipath.HOLDiscount3G = r.num("multipath.hol_discount_3g", 0, 1, false, true)
	p.Multipath.HOLRateRatio = r.num("multipath.hol_rate_ratio", 0.001, 1000, false, true)
	p.Multipath.HOLDiscountFast = r.num("multipath.hol_discount_fast", 0, 1, false, true)
	p.Multipath.HOLFastRateRatio = r.num("multipath.hol_fast_rate_ratio", 0.001, 1000, false, true)
	if r.err == nil && !(p.Multipath.HOLFastRateRatio > p.Multipath.HOLRateRatio) {
		r.fail("multipath.hol_fast_rate_ratio", "must be above multipath.hol_rate_ratio")
	}
	p.Multipath.ReactMS = r.num("multipath.react_ms", 0, 10000, false, true)

	p.Modes = make(map[string]Weights, len(modeNames))
	for _, m := range modeNames {
		k := "modes." + m + "."
		p.Modes[m] = Weights{
			TimePerS:   r.num(k+"time_per_s", 0, 1e6, false, true),
			LatePerS:   r.num(k+"late_per_s", 0, 1e6, false, true),
			EnergyPerJ: r.num(k+"energy_per_j", 0, 1e6, false, true),
			CellPerMB:  r.num(k+"cell_per_mb", 0, 1e6, false, true),
		}
	}
	d := &p.Defaults
	d.Mode = r.str("defaults.mode", 32)
	if r.err == nil && !slices.Contains(modeNames, d.Mode) {
		r.fail("defaults.mode", "must be one of "+strings.Join(modeNames, ", "))
	}
	d.DeadlineMS = int64(r.num("defaults.deadline_ms", 1000, 60000, true, true))
	d.BatteryFloorPercent = int64(r.num("defaults.battery_floor_percent", 0, 100, true, true))
	d.ChargingUnlimited = r.boolean("defaults.charging_unlimited")

	q := &p.Quota
	q.PagesPerDay = r.num("quota.pages_per_day", 1, 1e6, false, true)
	q.ScarcityMax = r.num("quota.scarcity_max", 1, 1e6, false, true)
	q.BatterySaverCapBytes = int64(r.num("quota.battery_saver_cap_bytes", 0, 1<<53-1, true, true))
	p.HTTP1.Connections = r.num("http1.connections", 1, 64, true, true)
	p.Page.ProcessingMS = r.num("page.processing_ms", 0, 60000, false, true)
	p.Page.ProcessingMSPerObject = r.num("page.processing_ms_per_object", 0, 10000, false, true)

	th := &p.Theta
	th.MinBytes = r.num("theta.min_bytes", 1, 1e15, true, true)
	th.MaxBytes = r.num("theta.max_bytes", 1, 1<<53-1, true, true)
	th.GridRatio = r.num("theta.grid_ratio", 1.01, 100, false, true)
	th.SizeMargin = r.num("theta.size_margin", 0, 10, false, true)
	th.OverheadBytes = r.num("theta.overhead_bytes", 0, 1e6, true, true)
	th.IndifferenceS = r.num("theta.indifference_s", 0, 100, false, true)
	th.SmallPageBytes = r.num("theta.small_page_bytes", 0, 1e9, true, true)
	if r.err == nil && th.MaxBytes <= th.MinBytes {
		r.fail("theta.max_bytes", "must be > theta.min_bytes")
	}
	sz := &p.Sizes
	sz.PriorP10 = r.num("sizes.prior_p10_bytes", 1, 1<<40, true, true)
	sz.PriorP50 = r.num("sizes.prior_p50_bytes", 1, 1<<40, true, true)
	sz.PriorP90 = r.num("sizes.prior_p90_bytes", 1, 1<<40, true, true)
	sz.PseudoCount = r.num("sizes.pseudo_count", 0.01, 1000, false, true)
	sz.PriorPoints = int(r.num("sizes.prior_points", 1, 100, true, true))
	sz.OthersPseudoCount = r.num("sizes.others_pseudo_count", 0.01, 1000, false, true)
	sz.ClassPseudoCount = r.num("sizes.class_pseudo_count", 0.01, 1000, false, true)
	sz.WarmShare = r.num("sizes.warm_share", 0, 1, false, true)
	sz.WarmP50 = r.num("sizes.warm_p50_bytes", 1, 1<<40, true, true)
	if r.err == nil && !(sz.PriorP10 <= sz.PriorP50 && sz.PriorP50 <= sz.PriorP90) {
		r.fail("sizes.prior_p50_bytes", "must lie between sizes.prior_p10_bytes and sizes.prior_p90_bytes")
	}
	p.Priors = make(map[string]LinkPrior, len(priorKinds))
	for _, kind := range priorKinds {
		k := "priors." + kind + "."
		p.Priors[kind] = LinkPrior{
			DownMbit: r.num(k+"down_mbit", 0.001, 1e5, false, true),
			Spread:   r.num(k+"spread", 0, 5, false, true),
			RTTMS:    r.num(k+"rtt_ms", 0.1, 60000, false, true),
			Loss:     r.num(k+"loss", 0, 0.5, false, true),
		}
	}
	rm := &p.RateMemory
	rm.FastS = r.num("rate_memory.fast_s", 0.001, 1e6, false, true)
	rm.SlowS = r.num("rate_memory.slow_s", 0.001, 1e6, false, true)
	rm.SlowShare = r.num("rate_memory.slow_share", 0, 1, false, true)
	rm.MeanPseudoCount = r.num("rate_memory.mean_pseudo_count", 0.01, 1000, false, true)
	l := &p.Learning
	l.HalfLifeLoads = r.num("learning.half_life_loads", 0.1, 1000, false, true)
	l.MaxFactor = r.num("learning.max_factor", 1, 100, false, true)
	l.MinLoads = r.num("learning.min_loads", 0, 1000, true, true)
	l.TrialError = r.num("learning.trial_error", 0, 1, false, true)
	l.GainTrialMinRatio = r.num("learning.gain_trial_min_rate_ratio", 0, 1000, false, true)
	if r.err != nil {
		return File{}, r.err
	}
	if err := r.unknown("", root); err != nil {
		return File{}, err
	}
	if err := r.sources(p); err != nil {
		return File{}, err
	}
	return f, nil
}

// reader reads fields by dotted path and keeps the first error.
type reader struct {
	name   string
	root   map[string]any
	err    error
	seen   map[string]bool // paths read
	valued []string        // paths that need a source
}

func (r *reader) fail(field, problem string) {
	if r.err == nil {
		r.err = &FieldError{File: r.name, Field: field, Problem: problem}
	}
}

func (r *reader) get(p string) (any, bool) {
	var cur any = r.root
	for _, k := range strings.Split(p, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[k]; !ok {
			return nil, false
		}
	}
	r.seen[p] = true
	return cur, true
}

func (r *reader) num(p string, lo, hi float64, integer, sourced bool) float64 {
	if r.err != nil {
		return 0
	}
	v, ok := r.get(p)
	if !ok {
		r.fail(p, "missing")
		return 0
	}
	n, ok := v.(json.Number)
	if !ok {
		r.fail(p, "must be a number")
		return 0
	}
	x, err := n.Float64()
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		r.fail(p, "must be a finite number")
		return 0
	}
	if integer && x != math.Trunc(x) {
		r.fail(p, "must be an integer")
		return 0
	}
	if x < lo {
		r.fail(p, fmt.Sprintf("must be >= %g", lo))
		return 0
	}
	if x > hi {
		r.fail(p, fmt.Sprintf("must be <= %g", hi))
		return 0
	}
	if sourced {
		r.valued = append(r.valued, p)
	}
	return x
}

func (r *reader) str(p string, max int) string {
	if r.err != nil {
		return ""
	}
	v, ok := r.get(p)
	if !ok {
		r.fail(p, "missing")
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.fail(p, "must be a string")
		return ""
	}
	if len(s) > max {
		r.fail(p, fmt.Sprintf("must be at most %d bytes", max))
	}
	return s
}

// file reads a file name in the same directory: no separators, ends in .json.
func (r *reader) file(p string) string {
	s := r.str(p, 128)
	if r.err == nil && (strings.ContainsAny(s, `/\`) || !strings.HasSuffix(s, ".json") || s == FileName) {
		r.fail(p, "must name another .json file in the same directory")
	}
	return s
}

func (r *reader) boolean(p string) bool {
	if r.err != nil {
		return false
	}
	v, ok := r.get(p)
	if !ok {
		r.fail(p, "missing")
		return false
	}
	b, ok := v.(bool)
	if !ok {
		r.fail(p, "must be true or false")
	}
	r.valued = append(r.valued, p)
	return b
}

// unknown reports the first field (in sorted order) that no reader call asked for.
func (r *reader) unknown(prefix string, obj map[string]any) error {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if r.seen[p] {
			continue
		}
		sub, ok := obj[k].(map[string]any)
		if !ok {
			return &FieldError{File: r.name, Field: p, Problem: "unknown field"}
		}
		if err := r.unknown(p, sub); err != nil {
			return err
		}
	}
	return nil
}

// sources checks that every value has a source and that every source names a value.
func (r *reader) sources(p *Params) error {
	raw, ok := r.root["sources"].(map[string]any)
	if !ok {
		if _, present := r.root["sources"]; !present {
			return &FieldError{File: r.name, Field: "sources", Problem: "missing"}
		}
		return &FieldError{File: r.name, Field: "sources", Problem: "must be an object"}
	}
	p.Sources = make(map[string]string, len(raw))
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s, ok := raw[k].(string)
		if !ok || strings.TrimSpace(s) == "" {
			return &FieldError{File: r.name, Field: "sources." + k, Problem: "must be a non-empty string"}
		}
		if !slices.ContainsFunc(r.valued, func(v string) bool { return covers(k, v) }) {
			return &FieldError{File: r.name, Field: "sources." + k, Problem: "names no model value of this file"}
		}
		p.Sources[k] = s
	}
	for _, v := range r.valued {
		if !slices.ContainsFunc(keys, func(k string) bool { return covers(k, v) }) {
			return &FieldError{File: r.name, Field: v, Problem: "has no entry in sources"}
		}
	}
	return nil
}

// covers says whether a source key applies to a value path: the same path or a dotted prefix of it.
func covers(key, value string) bool {
	return key == value || strings.HasPrefix(value, key+".")
}

// LoadDir reads the model files from a policy-models directory on disk, for tools and experiments that try
// other numbers than the embedded ones.
func LoadDir(dir string) (*Params, error) {
	return Load(os.DirFS(dir), dir)
}

// Open is the one way every command loads the model: from dir when it is given (a command's --models, else
// MPSURF_MODELS, as cmd/mpsurf-host reads them), else from the copy of policy-models/ built into the binary.
// Source says which, for logs and status.
func Open(dir string) (p *Params, source string, err error) {
	if dir == "" {
		p, err = Load(models.FS, models.Dir)
		return p, "embedded:" + models.Dir, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, dir, err
	}
	p, err = LoadDir(abs)
	return p, abs, err
}
