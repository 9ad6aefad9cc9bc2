package decide

import (
	"context"
	"errors"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/store"
)

func params(t testing.TB) *model.Params {
	t.Helper()
	p, _, err := model.Open("")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func f64(x float64) *float64 { return &x }
func i64(x int64) *int64     { return &x }

func measured() View {
	return View{
		Primary:   &model.Path{Name: "wlan0", Kind: "wifi", Up: true, RTTMS: f64(50), DownBps: f64(7.04e6)},
		Secondary: &model.Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: f64(70), DownBps: f64(9.185e6)},
		RRC:       &model.RRC{Tech: "lte", State: "idle"},
	}
}

// The model's decision, with the numbers the helper enforces at run time. That each is then carried out is the
// host's (native-host/host TestDecideCarriesEveryDecision).
func TestDecideGivesTheModelsDecision(t *testing.T) {
	for _, tc := range []struct {
		name    string
		given   Given
		basis   Basis
		runtime func(d Decision) bool
	}{
		{"large page on measured links: the subflow may open at once", Given{Paths: measured(), Proto: "h2",
			Sizes: store.History{Class: []int64{4e6, 4.1e6, 3.9e6}}}, BasisMeasured,
			func(d Decision) bool { return d.Multipath && d.Theta1 != nil && *d.Theta1 == 0 }},
		{"small page on measured links: θ1 above its size, enforced at run time", Given{Paths: measured(), Proto: "h2",
			Sizes: store.History{Class: []int64{20e3, 21e3, 19e3}}}, BasisMeasured,
			func(d Decision) bool { return !d.Multipath && (d.Theta1 == nil || *d.Theta1 > 21e3) }},
		{"nothing measured", Given{}, BasisPrior, func(d Decision) bool { return d.Theta1 != nil }},
		{"h3 is a rule", Given{Paths: measured(), Proto: "h3"}, BasisRule, func(d Decision) bool { return !d.Multipath && d.Theta1 == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.given
			dec := New(Config{Params: params(t), Links: &g, Memory: &g})
			d, err := dec.Decide(context.Background(), Request{Origin: "https://a.example", Tab: 3, Nav: "3-1"})
			if err != nil {
				t.Fatal(err)
			}
			if d.Basis != tc.basis || !tc.runtime(d) || d.Input.Params != nil {
				t.Errorf("%+v", d)
			}
			b := d.Body()
			if err := b.Validate(); err != nil {
				t.Error(err)
			}
			if b.Inputs["basis"] != string(tc.basis) || b.ModelInput == nil {
				t.Errorf("body %+v", b)
			}
		})
	}
}

func TestDecideWithoutModel(t *testing.T) {
	why := errors.New("model.json: transport.mss_bytes: missing")
	dec := New(Config{ParamsErr: why})
	if _, err := dec.Decide(context.Background(), Request{Origin: "https://a.example"}); err != why {
		t.Errorf("error %v, want %v", err, why)
	}
	if st := dec.Status(context.Background()); st.Model == nil || st.Model.Error != why.Error() {
		t.Errorf("status %+v", st.Model)
	}
}

func TestFixedPolicyDecides(t *testing.T) {
	pol := policy.NewStore(policy.EmbeddedSource())
	g := Given{Paths: measured()}
	dec := New(Config{Params: params(t), Fixed: pol, Links: &g, Memory: &g})
	d, err := dec.Decide(context.Background(), Request{Origin: "https://a.example", Tab: 1, Nav: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Fixed || d.Basis != BasisRule || d.Theta1 == nil || *d.Theta1 != 200000 || d.Model.ID != "baseline-seed001" {
		t.Errorf("%+v", d)
	}
	if b := d.Body(); b.ModelInput != nil || b.Inputs["fixed_policy"] != true {
		t.Errorf("body %+v", b)
	}
}
