package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// MaxFileSize caps a policy file; the real one is about 1 KB.
const MaxFileSize = 64 << 10

// File is a parsed, checked policy model file.
type File struct {
	ID          string
	Version     int64
	Description string
	Multipath   bool
	Theta1Bytes int64
	Theta2Bytes *int64 // nil: no cap on cellular bytes
	DeadlineMS  int64
	// Sources maps each model value to where it comes from (a paper, a measurement or a user preference).
	Sources map[string]string
}

// modelValues are the fields that feed a decision; each needs a source. id, version, description and $schema
// describe the file rather than the world, so they need none.
var modelValues = []string{"multipath", "theta1_bytes", "theta2_bytes", "deadline_ms"}

var knownFields = []string{"$schema", "id", "version", "description", "multipath", "theta1_bytes",
	"theta2_bytes", "deadline_ms", "sources"}

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

// Parse checks data as a policy file; name is how errors refer to it.
func Parse(name string, data []byte) (File, error) {
	fail := func(field, format string, args ...any) (File, error) {
		return File{}, &FieldError{File: name, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxFileSize {
		return fail("", "larger than %d bytes", MaxFileSize)
	}
	var obj map[string]json.RawMessage
	if !json.Valid(data) || !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) {
		return fail("", "not one JSON object")
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return fail("", "not one JSON object")
	}
	// Sorted so that the first unknown field reported does not depend on map order.
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(knownFields, k) {
			return fail(k, "unknown field")
		}
	}

	var f File
	var err error
	str := func(field string, required bool, max int) (string, error) {
		raw, ok := obj[field]
		if !ok {
			if required {
				return "", &FieldError{name, field, "missing"}
			}
			return "", nil
		}
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return "", &FieldError{name, field, "must be a string"}
		}
		if len(s) > max {
			return "", &FieldError{name, field, fmt.Sprintf("must be at most %d bytes", max)}
		}
		return s, nil
	}
	integer := func(field string, lo, hi int64) (int64, error) {
		raw, ok := obj[field]
		if !ok {
			return 0, &FieldError{name, field, "missing"}
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			if strings.Trim(string(raw), "-0123456789") == "" && len(raw) > 0 {
				// All digits but does not fit in 64 bits.
				if raw[0] == '-' {
					return 0, &FieldError{name, field, fmt.Sprintf("must be >= %d", lo)}
				}
				return 0, &FieldError{name, field, fmt.Sprintf("must be <= %d", hi)}
			}
			return 0, &FieldError{name, field, "must be an integer"}
		}
		if n < lo {
			return 0, &FieldError{name, field, fmt.Sprintf("must be >= %d", lo)}
		}
		if n > hi {
			return 0, &FieldError{name, field, fmt.Sprintf("must be <= %d", hi)}
		}
		return n, nil
	}

	if _, err = str("$schema", false, 1024); err != nil {
		return File{}, err
	}
	if f.ID, err = str("id", true, 64); err != nil {
		return File{}, err
	}
	if f.ID == "" || strings.Trim(f.ID, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
		return fail("id", "must be 1 to 64 of A-Z a-z 0-9 . _ -")
	}
	if f.Version, err = integer("version", 1, protocol.MaxSafeInt); err != nil {
		return File{}, err
	}
	if f.Description, err = str("description", false, 4096); err != nil {
		return File{}, err
	}
	switch raw := string(obj["multipath"]); raw {
	case "true", "false":
		f.Multipath = raw == "true"
	case "":
		return fail("multipath", "missing")
	default:
		return fail("multipath", "must be true or false")
	}
	if f.Theta1Bytes, err = integer("theta1_bytes", 0, protocol.MaxSafeInt); err != nil {
		return File{}, err
	}
	if raw, ok := obj["theta2_bytes"]; !ok {
		return fail("theta2_bytes", "missing (null means no cap)")
	} else if string(raw) != "null" {
		n, err := integer("theta2_bytes", 0, protocol.MaxSafeInt)
		if err != nil {
			return File{}, err
		}
		f.Theta2Bytes = &n
	}
	if f.DeadlineMS, err = integer("deadline_ms", protocol.MinDeadlineMS, protocol.MaxDeadlineMS); err != nil {
		return File{}, err
	}

	raw, ok := obj["sources"]
	if !ok {
		return fail("sources", "missing")
	}
	var sources map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &sources) != nil {
		return fail("sources", "must be an object")
	}
	f.Sources = make(map[string]string, len(sources))
	for k, v := range sources {
		if !slices.Contains(modelValues, k) {
			return fail("sources."+k, "names no model value of this file")
		}
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) == "" {
			return fail("sources."+k, "must be a non-empty string")
		}
		f.Sources[k] = s
	}
	for _, k := range modelValues {
		if _, ok := f.Sources[k]; !ok {
			return fail(k, "has no entry in sources")
		}
	}
	return f, nil
}
