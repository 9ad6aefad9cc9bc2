package decide

import (
	"math"

	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// Body is a Decision as PROTOCOL.md §3 sends it: the Decision fields, then the model's explanation.
type Body struct {
	protocol.Decision
	Basis    Basis        `json:"basis"`
	Terms    []model.Term `json:"terms,omitempty"`
	Size     *model.Size  `json:"size,omitempty"`
	Protocol string       `json:"protocol,omitempty"`
	// ModelInput is the model's whole input, kept in the decision log so that mpsurf-host replay can evaluate
	// the same decision under other parameters.
	ModelInput *model.Input `json:"model_input,omitempty"`
}

// Body is the decision's wire form. Its inputs object lists, by name, every number and choice the decision used
// (PROTOCOL.md §3: numbers, strings, booleans or null); the typed fields stay the source of truth.
func (d *Decision) Body() Body {
	in := map[string]any{
		"model_id":           d.Model.ID,
		"model_version":      d.Model.Version,
		"basis":              string(d.Basis),
		"mode":               d.Mode,
		"protocol":           d.Protocol,
		"theta1_bytes":       nil,
		"deadline_ms":        d.DeadlineMS,
		"multipath_allowed":  d.Theta1 != nil,
		"multipath_expected": d.Multipath,
		"theta2_bytes":       nil,
	}
	if d.Theta1 != nil {
		in["theta1_bytes"] = *d.Theta1
	}
	if d.PredictedSPMS > 0 {
		in["predicted_plt_sp_ms"], in["predicted_plt_mp_ms"] = round1(d.PredictedSPMS), round1(d.PredictedMPMS)
	}
	if d.Theta2 != nil {
		in["theta2_bytes"] = *d.Theta2
	}
	if d.PreferCellular {
		in["prefer_cellular"] = true
	}
	if d.Size.Known && d.Size.Median != nil {
		in["predicted_size_bytes"] = *d.Size.Median
	}
	if d.Size.Source != "" {
		in["size_source"] = d.Size.Source
	}
	if d.PathClass != "" {
		in["path_class"] = d.PathClass
	}
	if d.Refused != "" {
		in["measurement_refused"] = d.Refused
	}
	if d.Paused != "" {
		in["paused"] = d.Paused
	}
	if d.Actuation != "" {
		in["actuation"] = d.Actuation
	}
	if d.ActuationAddrs != "" {
		in["actuation_addrs"] = d.ActuationAddrs
	}
	b := Body{
		Decision: protocol.Decision{
			Multipath: d.Multipath, Theta1: d.Theta1, Theta2: d.Theta2, DeadlineMS: d.DeadlineMS, Reason: d.Reason,
			Model: d.Model, Origin: d.Origin, Tab: d.Tab, Nav: d.Nav, Inputs: in,
		},
		Basis: d.Basis, Terms: d.Terms, Protocol: d.Protocol,
	}
	if d.Fixed {
		in["fixed_policy"] = true
		return b
	}
	size := d.Size
	b.Size = &size
	input := d.Input
	b.ModelInput = &input
	return b
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
