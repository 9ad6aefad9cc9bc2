package host

import (
	"context"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
)

// views is a decide.Links test double: fixed paths.
type views struct{ v decide.View }

func (f views) View() decide.View         { return f.v }
func (f views) Status() decide.LinkStatus { return decide.LinkStatus{} }
func (f views) CellRx() (int64, bool)     { return 0, false }

// With measured paths, the served decision is the model's, validates, and says so.
func TestDecideUsesModel(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	params, src, err := model.Open("")
	if err != nil {
		t.Fatal(err)
	}
	links := views{decide.View{
		Primary:   &model.Path{Name: "wlan0", Kind: "wifi", Up: true, RTTMS: f(50), DownBps: f(7.04e6)},
		Secondary: &model.Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: f(70), DownBps: f(9.185e6)},
		RRC:       &model.RRC{Tech: "lte", State: "idle"},
	}}
	dec := decide.New(decide.Config{Params: params, ParamsSource: src, Links: links})
	s := NewServer(policy.NewStore(policy.EmbeddedSource()), dec, nil, quietLog())
	r := s.Handle([]byte(`{"v":1,"id":1,"type":"decide","body":{"origin":"https://example.com","tab":1,"nav":"1"}}`))
	if !r.OK {
		t.Fatal(r.Error)
	}
	body := r.Body.(decide.Body)
	if err := body.Validate(); err != nil {
		t.Fatal(err)
	}
	if body.Model.ID != params.ID || body.Basis != decide.BasisMeasured || body.ModelInput == nil || body.ModelInput.Primary == nil {
		t.Errorf("%+v", body)
	}
	st := dec.Status(context.Background())
	if st.Model == nil || st.Model.ID != params.ID || st.Model.Source != src {
		t.Errorf("status model %+v", st.Model)
	}
}
