package host

import (
	"testing"

	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// With paths supplied through SetInputs, the decision is the model's, not the baseline's.
func TestDecideUsesModel(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	median := int64(2_000_000)
	SetInputs(func(origin string) model.Input {
		return model.Input{Protocol: model.H2, Size: model.Size{Known: true, Median: &median, Samples: 3, Source: "test"},
			Primary:   &model.Path{Name: "wlan0", Kind: "wifi", Up: true, RTTMS: f(50), DownBps: f(7.04e6)},
			Secondary: &model.Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: f(70), DownBps: f(9.185e6)},
			RRC:       &model.RRC{Tech: "lte", State: "idle"}}
	})
	defer SetInputs(nil)
	params, err := modelParams()
	if err != nil {
		t.Fatal(err)
	}
	var in model.Input
	in = (*inputs.Load())("https://example.com")
	in.Params = params
	body := Apply(DecisionBody{Decision: protocol.Decision{Theta1: 1, DeadlineMS: 3000, Reason: "x",
		Model: protocol.Model{ID: "b", Version: 1}, Inputs: map[string]any{}}}, model.Evaluate(in), params)
	if err := body.Validate(); err != nil {
		t.Fatal(err)
	}
	if !body.Multipath || body.Model.ID != params.ID || body.Protocol != "h2" || !body.Size.Known ||
		body.Inputs["predicted_size_bytes"] != median {
		t.Errorf("%+v", body)
	}
}
