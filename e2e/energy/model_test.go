package energy

import (
	"path/filepath"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

const modelsDir = "../../policy-models"

func loadModel(t *testing.T, tech string) *radio.Model {
	t.Helper()
	m, err := radio.Load(filepath.Join(modelsDir, "power-"+tech+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Technology != tech {
		t.Fatalf("power-%s.json says technology %q", tech, m.Technology)
	}
	return m
}
