package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Modes, in report order.
const (
	ModeSPWiFi     = "sp-wifi"
	ModeSPCell     = "sp-cell"
	ModeMPAlways   = "mp-always"
	ModeMPRule     = "mp-rule"
	ModeMPAdaptive = "mp-adaptive"
)

// Modes lists every mode in report order; MPModes the multipath ones the seed comparison charts (mp-rule, seed 001
// §4.2's rule carried out by MPSurf's host and helper, is compared in the Decisions section). ProxyModes (the proxy
// grid's: every origin through the MPTCP proxy, the rule's or MPSurf's decisions through it) are read and kept,
// and summarised by the grid itself (e2e/testbed/proxyreport.mjs), not charted here.
var (
	Modes      = []string{ModeSPWiFi, ModeSPCell, ModeMPAlways, ModeMPRule, ModeMPAdaptive}
	MPModes    = []string{ModeMPAlways, ModeMPAdaptive}
	ProxyModes = []string{"proxy-always", "proxy-rule", "proxy-adaptive"}
)

// Protocols in report order.
const (
	ProtoH2    = "h2"
	ProtoHTTP1 = "http/1.1"
)

// Protos lists the protocols in report order.
var Protos = []string{ProtoH2, ProtoHTTP1}

// Cellular technologies.
const (
	CellLTE = "lte"
	Cell3G  = "3g"
)

// Interfaces of the client namespace.
const (
	IfWiFi = "wlan0"
	IfCell = "wwan0"
)

// RxTx is an interface's byte counters.
type RxTx struct {
	Rx int64 `json:"rx"`
	Tx int64 `json:"tx"`
}

// Decision is the native host's multipath decision for the load.
type Decision struct {
	Multipath bool   `json:"multipath"`
	Theta1    int64  `json:"theta1"`
	Theta2    *int64 `json:"theta2"`
	Reason    string `json:"reason"`
	// Basis is what the decision rested on (Bases: measured, prior, rule), "" when the host gave none.
	Basis string `json:"basis,omitempty"`
}

// Record is one line of runs.jsonl (see the package documentation).
type Record struct {
	RunID           string           `json:"run_id"`
	Mode            string           `json:"mode"`
	Profile         string           `json:"profile"`
	CellTech        string           `json:"cell_tech"`
	Page            string           `json:"page"`
	PageBytes       int64            `json:"page_bytes"`
	Objects         int              `json:"objects"`
	Proto           string           `json:"proto"`
	Rep             int              `json:"rep"`
	StartUnixNS     int64            `json:"start_unix_ns"`
	EndUnixNS       int64            `json:"end_unix_ns"`
	PLTms           float64          `json:"plt_ms"`
	OK              bool             `json:"ok"`
	Error           string           `json:"error,omitempty"`
	LinkBytes       map[string]RxTx  `json:"link_bytes"`
	ServerPathBytes map[string]int64 `json:"server_path_bytes"`
	Decision        *Decision        `json:"decision"`
	HeaderSeen      bool             `json:"header_seen"`
	TimelineDir     string           `json:"timeline_dir"`
	// History is what an mp-adaptive load's host remembered ("session" or "none"); optional.
	History string `json:"history,omitempty"`
	// Preference is the user's preference an adaptive load's host decided under (Preferences), set on the
	// extension's options page; "" (or null) for the modes that do not depend on it and in older runs.
	Preference string `json:"preference,omitempty"`
}

var requiredKeys = []string{
	"run_id", "mode", "profile", "cell_tech", "page", "page_bytes", "objects", "proto", "rep",
	"start_unix_ns", "end_unix_ns", "plt_ms", "ok", "link_bytes", "server_path_bytes", "decision",
	"header_seen", "timeline_dir",
}

// maxRecordLine bounds one JSON line.
const maxRecordLine = 1 << 20

// ReadRuns reads a runs.jsonl file.
func ReadRuns(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := ParseRuns(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// PoolRuns reads several runs.jsonl files of one grid, run in turn (more repetitions of the same pages, modes
// and profiles), as one set of records: each file's repetitions are numbered after the previous files' (a
// repetition's modes stay paired, as the testbed ran them, and the resampled intervals draw the files'
// repetitions alike), and a relative timeline_dir is resolved against its own file's directory. A run_id in two
// files is an error: the same file given twice would count its loads twice.
func PoolRuns(paths []string) ([]Record, error) {
	var out []Record
	seen := map[string]string{}
	next := 0
	for _, path := range paths {
		recs, err := ReadRuns(path)
		if err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(filepath.Dir(path))
		if err != nil {
			return nil, err
		}
		top := -1
		for i := range recs {
			r := &recs[i]
			if prev, dup := seen[r.RunID]; dup {
				return nil, fmt.Errorf("%s: run_id %q is in %s too", path, r.RunID, prev)
			}
			seen[r.RunID] = path
			top = max(top, r.Rep)
			r.Rep += next
			if r.TimelineDir != "" && !filepath.IsAbs(r.TimelineDir) {
				r.TimelineDir = filepath.Join(abs, r.TimelineDir)
			}
		}
		next += top + 1
		out = append(out, recs...)
	}
	return out, nil
}

// ParseRuns reads run records, one JSON object per line; blank lines are skipped. Any malformed record is an
// error naming its line: a report built on silently dropped lines would mislead.
func ParseRuns(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxRecordLine)
	var out []Record
	ids := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		rec, err := parseRecord(b)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if prev, dup := ids[rec.RunID]; dup {
			return nil, fmt.Errorf("line %d: run_id %q already used on line %d", line, rec.RunID, prev)
		}
		ids[rec.RunID] = line
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes", line+1, maxRecordLine)
		}
		return nil, err
	}
	return out, nil
}

func parseRecord(b []byte) (Record, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return Record{}, fmt.Errorf("not a JSON object: %w", err)
	}
	for _, k := range requiredKeys {
		if _, ok := keys[k]; !ok {
			return Record{}, fmt.Errorf("key %q is missing", k)
		}
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, err
	}
	return rec, rec.validate()
}

func oneOf(v string, set ...string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

func (r Record) validate() error {
	switch {
	case r.RunID == "":
		return fmt.Errorf("run_id is empty")
	case !oneOf(r.Mode, Modes...) && !oneOf(r.Mode, ProxyModes...):
		return fmt.Errorf("run %s: mode %q: want one of %v or %v", r.RunID, r.Mode, Modes, ProxyModes)
	case !oneOf(r.CellTech, CellLTE, Cell3G):
		return fmt.Errorf("run %s: cell_tech %q: want %q or %q", r.RunID, r.CellTech, CellLTE, Cell3G)
	case !oneOf(r.Proto, Protos...):
		return fmt.Errorf("run %s: proto %q: want %q or %q", r.RunID, r.Proto, ProtoH2, ProtoHTTP1)
	case r.Profile == "":
		return fmt.Errorf("run %s: profile is empty", r.RunID)
	case r.Page == "":
		return fmt.Errorf("run %s: page is empty", r.RunID)
	case r.PageBytes < 0 || r.Objects < 0 || r.Rep < 0:
		return fmt.Errorf("run %s: page_bytes, objects and rep must be >= 0", r.RunID)
	case r.Preference != "" && !oneOf(r.Preference, Preferences...):
		return fmt.Errorf("run %s: preference %q: want one of %v", r.RunID, r.Preference, Preferences)
	}
	if !r.OK {
		// A failed load may have stopped anywhere; its numbers are not used.
		return nil
	}
	switch {
	case r.StartUnixNS <= 0 || r.EndUnixNS < r.StartUnixNS:
		return fmt.Errorf("run %s: start_unix_ns %d, end_unix_ns %d: want 0 < start <= end", r.RunID, r.StartUnixNS, r.EndUnixNS)
	case !(r.PLTms > 0) || math.IsInf(r.PLTms, 0):
		return fmt.Errorf("run %s: plt_ms %v: want > 0 for an ok load", r.RunID, r.PLTms)
	case r.TimelineDir == "":
		return fmt.Errorf("run %s: timeline_dir is empty", r.RunID)
	}
	return nil
}
