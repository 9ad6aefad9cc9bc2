package models

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Every data file of this directory names its JSON schema in "$schema" and is valid against it (a maintained
// draft 2020-12 validator, not the loaders' own checks, which native-host/model and native-host/policy test).
func TestFilesMatchTheirSchemas(t *testing.T) {
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	checked := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, ".schema.json") {
			continue
		}
		data, err := FS.ReadFile(f)
		if err != nil {
			t.Fatalf("%s is not in the embedded copy: %v", f, err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		obj, _ := inst.(map[string]any)
		ref, _ := obj["$schema"].(string)
		if !strings.HasPrefix(ref, "./") || !strings.HasSuffix(ref, ".schema.json") {
			t.Errorf("%s: $schema %q, want ./NAME.schema.json beside it", f, ref)
			continue
		}
		schemaFile, _ := filepath.Abs(strings.TrimPrefix(ref, "./"))
		sch, err := c.Compile(schemaFile)
		if err != nil {
			t.Fatalf("%s: schema %s: %v", f, ref, err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s against %s: %v", f, ref, err)
		}
		// The schema can fail: an unknown field and a missing sources object are refused.
		for name, mutate := range map[string]func(map[string]any){
			"unknown field":   func(m map[string]any) { m["no_such_field"] = 1 },
			"missing sources": func(m map[string]any) { delete(m, "sources") },
		} {
			var m map[string]any
			json.Unmarshal(data, &m)
			mutate(m)
			b, _ := json.Marshal(m)
			bad, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if sch.Validate(bad) == nil {
				t.Errorf("%s with a %s passes %s", f, name, ref)
			}
		}
		checked[f] = true
	}
	for _, f := range []string{"baseline.json", "model.json", "power-lte.json", "power-3g.json", "power-wifi.json"} {
		if !checked[f] {
			t.Errorf("%s was not checked", f)
		}
	}
}
