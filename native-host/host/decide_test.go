package host

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/actuate/actuatetest"
	"github.com/mpsurf/mpsurf/native-host/carry"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
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
	s := testServer(t, Parts{Policy: policy.NewStore(policy.EmbeddedSource()), Decider: dec})
	r := s.Handle([]byte(`{"v":1,"id":1,"type":"decide","body":{"origin":"https://example.com","tab":1,"nav":"1","model_input":true}}`))
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

// Every decision the host replies with has been handed to the helper first, whatever the model decided, and the
// reply says what the helper answered (inputs.actuation).
func TestDecideCarriesEveryDecision(t *testing.T) {
	sock := dryRunHelper(t)
	car := carry.New(carry.Config{Helper: sock, Hosts: carry.Hosts{"a.example": {netip.MustParseAddr("192.0.2.5")}},
		ProxyFile: filepath.Join(t.TempDir(), "proxy.json"), Log: quietLog()})
	car.Start()
	f := func(x float64) *float64 { return &x }
	measured := decide.View{
		Primary:   &model.Path{Name: "wlan0", Kind: "wifi", Up: true, RTTMS: f(50), DownBps: f(7.04e6)},
		Secondary: &model.Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: f(70), DownBps: f(9.185e6)},
		RRC:       &model.RRC{Tech: "lte", State: "idle"},
	}
	for _, g := range []decide.Given{
		{Paths: measured, Proto: "h2", Sizes: store.History{Class: []int64{4e6, 4.1e6, 3.9e6}}},
		{Paths: measured, Proto: "h2", Sizes: store.History{Class: []int64{20e3, 21e3, 19e3}}},
		{},
		{Paths: measured, Proto: "h3"},
	} {
		s := testServer(t, Parts{Policy: policy.NewStore(policy.EmbeddedSource()), Carrier: car,
			Decider: decide.New(decide.Config{Params: params(t), Links: &g, Memory: &g})})
		r := s.Handle([]byte(`{"v":1,"id":1,"type":"decide","body":{"origin":"https://a.example","tab":3,"nav":"3-1"}}`))
		if !r.OK {
			t.Fatal(r.Error)
		}
		if b := r.Body.(decide.Body); b.Inputs["actuation"] != "ok" {
			t.Errorf("body %+v", b)
		}
	}
	if n := strings.Count(helperStatus(t, sock), "map [192.0.2.5]"); n != 4 {
		t.Errorf("helper handed %d decisions, want 4", n)
	}
}

// dryRunHelper runs the real helper in this process with its dry-run backend for the test, and returns its socket.
func dryRunHelper(t *testing.T) string {
	t.Helper()
	return actuatetest.DryRun(t, 100, 100, quietLog())
}

// helperStatus is the dry-run helper's status, asked on a connection of its own: what it would have done, one
// JSON string per request.
func helperStatus(t *testing.T, sock string) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(`{"id":1,"verb":"status"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var resp actuate.Response
	if err := json.Unmarshal(line, &resp); err != nil || !resp.OK {
		t.Fatalf("status: %s (%v)", line, err)
	}
	b, _ := json.Marshal(resp.Result)
	return string(b)
}

// The reply carries the model's input only when the request asks for it; the decision log keeps it either way, for
// mpsurf-host replay.
func TestDecideModelInputOnRequest(t *testing.T) {
	s, db := storeServer(t)
	for _, tc := range []struct {
		nav, ask string
		want     bool
	}{{"1", ``, false}, {"2", `,"model_input":false`, false}, {"3", `,"model_input":true`, true}} {
		r := call(t, s, protocol.TypeDecide, `{"origin":"https://example.com","tab":1,"nav":"`+tc.nav+`"`+tc.ask+`}`)
		var b map[string]json.RawMessage
		if err := json.Unmarshal(r.Body, &b); err != nil || !r.OK {
			t.Fatalf("nav %s: %v %+v", tc.nav, err, r)
		}
		if _, got := b["model_input"]; got != tc.want {
			t.Errorf("nav %s: model_input in the reply %v, want %v: %s", tc.nav, got, tc.want, r.Body)
		}
	}
	rows := exported(t, db)
	if len(rows) != 3 {
		t.Fatalf("%d rows logged, want 3", len(rows))
	}
	for _, row := range rows {
		d, _ := row["decision"].(map[string]any)
		in, _ := d["model_input"].(map[string]any)
		if in["origin"] != "https://example.com" {
			t.Errorf("row %v: no model_input in the log", row["nav"])
		}
	}
}
