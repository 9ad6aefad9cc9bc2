package report

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/mpsurf/mpsurf/native-host/model"
)

// LoadWeights reads the weights of the mode a fresh install decides with from the model in modelsDir (defaults.mode,
// then modes.<mode>): the user the grid's mp-adaptive loads stand for when they name no preference.
func LoadWeights(modelsDir string) (Weights, error) {
	all, def, err := LoadModeWeights(modelsDir)
	if err != nil {
		return Weights{}, err
	}
	return all[def], nil
}

// LoadModeWeights reads every preference's weights (modes.*, each a documented user preference) and the one a fresh
// install decides with (defaults.mode) from the model in modelsDir, as the host reads it (model.LoadDir). Their
// bytes_per_mb (a MB delivered within the deadline) is left out: a measured page load time already counts what
// arrived in time.
func LoadModeWeights(modelsDir string) (map[string]Weights, string, error) {
	p, err := model.LoadDir(modelsDir)
	if err != nil {
		return nil, "", err
	}
	file := filepath.Join(modelsDir, model.FileName)
	def := p.Defaults.Mode
	if _, ok := p.Modes[def]; !ok {
		return nil, "", fmt.Errorf("%s: modes.%s: missing", file, def)
	}
	out := make(map[string]Weights, len(p.Modes))
	for mode, mw := range p.Modes {
		w := Weights{TimePerS: mw.TimePerS, EnergyPerJ: mw.EnergyPerJ, CellPerMB: mw.CellPerMB}
		for name, v := range map[string]float64{"time_per_s": w.TimePerS, "energy_per_j": w.EnergyPerJ, "cell_per_mb": w.CellPerMB} {
			if !(v >= 0) || math.IsInf(v, 0) {
				return nil, "", fmt.Errorf("%s: modes.%s.%s: %v, want a number >= 0", file, mode, name, v)
			}
		}
		if w.TimePerS <= 0 {
			return nil, "", fmt.Errorf("%s: modes.%s.time_per_s: %v, want > 0", file, mode, w.TimePerS)
		}
		w.Mode = mode
		w.Source = file + " modes." + mode
		out[mode] = w
	}
	return out, def, nil
}
