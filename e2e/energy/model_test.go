package energy

import (
	"path/filepath"
	"testing"
)

const modelsDir = "../../policy-models"

func loadModel(t *testing.T, tech string) *Model {
	t.Helper()
	m, err := Load(filepath.Join(modelsDir, "power-"+tech+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Technology != tech {
		t.Fatalf("power-%s.json says technology %q", tech, m.Technology)
	}
	return m
}
