package policy

import (
	"fmt"
	"slices"
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
	// The protocol's field errors start with the field's name; a FieldError carries it apart.
	bad := func(e *protocol.Error) (File, error) {
		field, problem := e.Field()
		return File{}, &FieldError{File: name, Field: field, Problem: problem}
	}
	if len(data) > MaxFileSize {
		return fail("", "larger than %d bytes", MaxFileSize)
	}
	obj, perr := protocol.AsObject(data, "")
	if perr != nil {
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
	if obj.Has("$schema") {
		if _, perr := obj.String("$schema", 1024); perr != nil {
			return bad(perr)
		}
	}
	if f.ID, perr = obj.String("id", 64); perr != nil {
		return bad(perr)
	}
	if f.ID == "" || strings.Trim(f.ID, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
		return fail("id", "must be 1 to 64 of A-Z a-z 0-9 . _ -")
	}
	if f.Version, perr = obj.Int("version", 1, protocol.MaxSafeInt); perr != nil {
		return bad(perr)
	}
	if obj.Has("description") {
		if f.Description, perr = obj.String("description", 4096); perr != nil {
			return bad(perr)
		}
	}
	if f.Multipath, perr = obj.Bool("multipath"); perr != nil {
		return bad(perr)
	}
	if f.Theta1Bytes, perr = obj.Int("theta1_bytes", 0, protocol.MaxSafeInt); perr != nil {
		return bad(perr)
	}
	if !obj.Has("theta2_bytes") {
		return fail("theta2_bytes", "missing (null means no cap)")
	}
	if f.Theta2Bytes, perr = obj.IntOrNull("theta2_bytes", 0, protocol.MaxSafeInt); perr != nil {
		return bad(perr)
	}
	if f.DeadlineMS, perr = obj.Int("deadline_ms", protocol.MinDeadlineMS, protocol.MaxDeadlineMS); perr != nil {
		return bad(perr)
	}

	if !obj.Has("sources") {
		return fail("sources", "missing")
	}
	sources, perr := protocol.AsObject(obj["sources"], "sources")
	if perr != nil {
		return bad(perr)
	}
	f.Sources = make(map[string]string, len(sources))
	for k := range sources {
		if !slices.Contains(modelValues, k) {
			return fail("sources."+k, "names no model value of this file")
		}
		s, perr := sources.String(k, -1)
		if perr != nil || strings.TrimSpace(s) == "" {
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
