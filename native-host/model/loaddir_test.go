package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadDir(t *testing.T) {
	p, err := LoadDir("../../policy-models")
	if err != nil {
		t.Fatal(err)
	}
	if want := params(t); p.Multipath != want.Multipath || p.Page != want.Page {
		t.Errorf("disk copy %+v %+v, embedded %+v %+v", p.Multipath, p.Page, want.Multipath, want.Page)
	}
	// A copy without the page section is rejected, naming the field.
	dir := t.TempDir()
	ents, err := os.ReadDir("../../policy-models")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("../../policy-models", e.Name()))
		if err != nil || e.IsDir() {
			continue
		}
		if e.Name() == FileName {
			b = []byte(strings.Replace(string(b), `"processing_ms_per_object"`, `"per_object"`, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "page.processing_ms_per_object") {
		t.Errorf("error %v, want one naming page.processing_ms_per_object", err)
	}
	if _, err := LoadDir(filepath.Join(dir, "absent")); err == nil {
		t.Error("missing directory accepted")
	}
}
