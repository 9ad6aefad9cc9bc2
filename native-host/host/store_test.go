package host

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/store"
)

func storeServer(t *testing.T) (*Server, *store.Store) {
	t.Helper()
	src, err := policy.Resolve("", "")
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "m.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return testServer(t, Parts{Policy: policy.NewStore(src), Store: db}), db
}

type replyView struct {
	OK    bool            `json:"ok"`
	Body  json.RawMessage `json:"body"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func call(t *testing.T, s *Server, typ, body string) replyView {
	t.Helper()
	msg := fmt.Sprintf(`{"v":1,"id":1,"type":%q`, typ)
	if body != "" {
		msg += `,"body":` + body
	}
	data, _ := json.Marshal(s.Handle([]byte(msg + "}")))
	var r replyView
	json.Unmarshal(data, &r)
	return r
}

const goodPrefs = `{"mode":"balanced","deadline_ms":3000,"battery_floor_percent":20,"charging_unlimited":true,
	"quota_bytes":null,"billing_day":1,"header_scope":"opt_in","overrides":%s}`

func TestPrefsValidation(t *testing.T) {
	s, db := storeServer(t)
	for _, tc := range []struct {
		name, body string
		code       int
		msg        string
	}{
		{"ok, IDN and case normalised", fmt.Sprintf(goodPrefs, `[{"host":"Bücher.Example","rule":"always"},{"host":"[::1]","rule":"never"}]`), 0, ""},
		{"bad mode", strings.Replace(fmt.Sprintf(goodPrefs, `[]`), "balanced", "turbo", 1), 8, "mode"},
		{"deadline too small", strings.Replace(fmt.Sprintf(goodPrefs, `[]`), "3000", "999", 1), 8, "deadline_ms"},
		{"quota float", strings.Replace(fmt.Sprintf(goodPrefs, `[]`), `"quota_bytes":null`, `"quota_bytes":1.5`, 1), 8, "quota_bytes"},
		{"missing billing_day", strings.Replace(fmt.Sprintf(goodPrefs, `[]`), `"billing_day":1,`, ``, 1), 8, "billing_day: missing"},
		{"host with port", fmt.Sprintf(goodPrefs, `[{"host":"a.example:8080","rule":"always"}]`), 8, "overrides[0].host"},
		{"host with path", fmt.Sprintf(goodPrefs, `[{"host":"a.example/x","rule":"always"}]`), 8, "overrides[0].host"},
		{"invalid host", fmt.Sprintf(goodPrefs, `[{"host":"a b","rule":"always"}]`), 8, "overrides[0].host"},
		{"duplicate after normalising", fmt.Sprintf(goodPrefs, `[{"host":"a.example","rule":"always"},{"host":"A.EXAMPLE","rule":"never"}]`), 8, "overrides[1].host"},
		{"bad rule", fmt.Sprintf(goodPrefs, `[{"host":"a.example","rule":"sometimes"}]`), 8, "overrides[0].rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, s, protocol.TypePrefs, tc.body)
			if tc.code == 0 {
				var out protocol.PrefsReply
				json.Unmarshal(r.Body, &out)
				if !r.OK || out.Prefs.Overrides[0].Host != "xn--bcher-kva.example" || out.Prefs.Overrides[1].Host != "[::1]" {
					t.Fatalf("reply %+v %s", r, r.Body)
				}
				stored, _ := db.Prefs(ctx())
				var back protocol.PrefsReply
				json.Unmarshal(r.Body, &back)
				got, _ := json.Marshal(stored)
				want, _ := json.Marshal(back.Prefs)
				if string(got) != string(want) {
					t.Errorf("stored %s, replied %s", got, want)
				}
				return
			}
			if r.OK || r.Error.Code != tc.code || !strings.Contains(r.Error.Message, tc.msg) {
				t.Errorf("got %+v, want code %d naming %q", r.Error, tc.code, tc.msg)
			}
		})
	}
}

func TestReportAndExportThroughHandlers(t *testing.T) {
	s, _ := storeServer(t)
	if r := call(t, s, "decide", `{"origin":"HTTPS://A.example:443","tab":3,"nav":"3-1"}`); !r.OK {
		t.Fatalf("decide: %s", r.Body)
	}
	for _, tc := range []struct {
		name, body string
		code       int
	}{
		{"ok", `{"origin":"https://a.example","tab":3,"nav":"3-1","protocol":"h2","transfer_bytes":1234,"plt_ms":812.5,"multipath":true}`, 0},
		{"null multipath", `{"origin":"https://a.example","tab":3,"nav":"3-2","protocol":"","transfer_bytes":0,"plt_ms":0,"multipath":null}`, 0},
		{"url not origin", `{"origin":"https://a.example/page","tab":3,"nav":"3-1","protocol":"h2","transfer_bytes":1,"plt_ms":1,"multipath":true}`, 9},
		{"bytes too large", `{"origin":"https://a.example","tab":3,"nav":"3-1","protocol":"h2","transfer_bytes":1099511627777,"plt_ms":1,"multipath":true}`, 8},
		{"plt negative", `{"origin":"https://a.example","tab":3,"nav":"3-1","protocol":"h2","transfer_bytes":1,"plt_ms":-1,"multipath":true}`, 8},
		{"protocol too long", `{"origin":"https://a.example","tab":3,"nav":"3-1","protocol":"aaaaaaaaaaaaaaaaa","transfer_bytes":1,"plt_ms":1,"multipath":true}`, 8},
		{"multipath missing", `{"origin":"https://a.example","tab":3,"nav":"3-1","protocol":"h2","transfer_bytes":1,"plt_ms":1}`, 8},
	} {
		r := call(t, s, protocol.TypeReport, tc.body)
		if (tc.code == 0) != r.OK || (tc.code != 0 && r.Error.Code != tc.code) {
			t.Errorf("%s: %+v %s", tc.name, r.Error, r.Body)
		}
	}
	r := call(t, s, protocol.TypeLogExport, `{"format":"jsonl"}`)
	var ex protocol.LogExportReply
	json.Unmarshal(r.Body, &ex)
	if !r.OK || ex.Rows != 1 || ex.Cursor != nil || !strings.Contains(ex.Data, `"plt_ms":812.5`) ||
		!strings.Contains(ex.Data, `"origin":"https://a.example"`) {
		t.Errorf("export %+v", ex)
	}
	for _, bad := range []string{`{"format":"xml"}`, `{"format":"csv","cursor":"nope"}`, `{"format":"csv","since_ms":-1}`,
		`{"format":"jsonl","cursor":"` + store.Cursor{Format: "csv"}.Encode() + `"}`} {
		if r := call(t, s, protocol.TypeLogExport, bad); r.OK || r.Error.Code != 8 {
			t.Errorf("%s: %+v", bad, r.Error)
		}
	}
	if r := call(t, s, protocol.TypeLogDelete, ""); !r.OK || string(r.Body) != `{"deleted":true}` {
		t.Errorf("delete: %+v %s", r.Error, r.Body)
	}
	r = call(t, s, protocol.TypeLogExport, `{"format":"jsonl"}`)
	json.Unmarshal(r.Body, &ex)
	if ex.Rows != 0 || ex.Data != "" {
		t.Errorf("after delete: %+v", ex)
	}
}

func TestStoreUnavailableReplies(t *testing.T) {
	src, err := policy.Resolve("", "")
	if err != nil {
		t.Fatal(err)
	}
	s := testServer(t, Parts{Policy: policy.NewStore(src), StoreErr: fmt.Errorf("store: /nowhere/m.db: permission denied")})
	if r := call(t, s, "decide", `{"origin":"https://a.example","tab":1,"nav":"1"}`); !r.OK {
		t.Errorf("decide without a store: %+v", r.Error)
	}
	for _, typ := range []string{protocol.TypeLogDelete, protocol.TypeLogExport, protocol.TypePrefs, protocol.TypeReport} {
		body := map[string]string{protocol.TypeLogExport: `{"format":"csv"}`, protocol.TypePrefs: fmt.Sprintf(goodPrefs, `[]`),
			protocol.TypeReport: `{"origin":"https://a.example","tab":1,"nav":"1","protocol":"h2","transfer_bytes":1,"plt_ms":1,"multipath":null}`}[typ]
		if r := call(t, s, typ, body); r.OK || r.Error.Code != 11 || !strings.Contains(r.Error.Message, "/nowhere") {
			t.Errorf("%s: %+v", typ, r.Error)
		}
	}
}

func ctx() context.Context { return context.Background() }

// counted is a decide.Links whose cellular counter moves: what a load received over cellular.
type counted struct {
	views
	rx int64
}

func (c *counted) CellRx() (int64, bool) { return c.rx, true }

// A page decided with its path, reported with its measured time and size: the decision row keeps the prediction
// beside the measurement and the cellular bytes, the next page of the same path class is decided from that size,
// and what the origin's loads taught goes into its next decisions.
func TestDecideReportLearn(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	s, db := storeServer(t)
	params, _, err := model.Open("")
	if err != nil {
		t.Fatal(err)
	}
	links := &counted{views: views{decide.View{
		Primary:   &model.Path{Name: "wlan0", Kind: "wifi", Up: true, RTTMS: f(50), DownBps: f(7.04e6)},
		Secondary: &model.Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: f(70), DownBps: f(9.185e6)},
		RRC:       &model.RRC{Tech: "lte", State: "idle"},
	}}, rx: 1000}
	s.dec = decide.New(decide.Config{Params: params, Links: links, Memory: db})
	for i, page := range []struct{ path, nav string }{{"/gallery/1", "3-1"}, {"/gallery/2", "3-2"}} {
		r := call(t, s, "decide", fmt.Sprintf(`{"origin":"https://a.example","tab":3,"nav":%q,"path":%q}`, page.nav, page.path))
		if !r.OK {
			t.Fatalf("decide: %+v", r.Error)
		}
		var d decide.Body
		json.Unmarshal(r.Body, &d)
		if d.Inputs["path_class"] != "/gallery/:id" {
			t.Errorf("path class %v", d.Inputs["path_class"])
		}
		if i == 1 && (!d.Size.Known || d.Size.Median == nil || *d.Size.Median != 3_000_000 || !d.Multipath) {
			t.Errorf("second gallery page decided without the first's size: %+v %s", d.Size, d.Reason)
		}
		links.rx += 1_200_000 // the load's cellular bytes
		if r := call(t, s, protocol.TypeReport, fmt.Sprintf(`{"origin":"https://a.example","tab":3,"nav":%q,"protocol":"h2",`+
			`"transfer_bytes":3000000,"plt_ms":2500,"multipath":true,"path":%q,"objects":40,"conns":1}`, page.nav, page.path)); !r.OK {
			t.Fatalf("report: %+v", r.Error)
		}
	}
	r := call(t, s, protocol.TypeLogExport, `{"format":"jsonl"}`)
	var ex protocol.LogExportReply
	json.Unmarshal(r.Body, &ex)
	for _, want := range []string{`"path_class":"/gallery/:id"`, `"cell_bytes":1200000`, `"mp_used":true`, `"predicted_mp_ms":`, `"plt_ms":2500`} {
		if !strings.Contains(ex.Data, want) {
			t.Errorf("export lacks %s:\n%s", want, ex.Data)
		}
	}
	ms, err := db.Measurements(context.Background(), "https://a.example", "/gallery/:id", 20)
	if err != nil || len(ms) != 2 || !ms[0].MPUsed || ms[0].PredictedMS <= 0 {
		t.Fatalf("measurements %+v %v", ms, err)
	}
	in := s.dec.Input(context.Background(), "https://a.example", "/gallery/:id")
	if in.Learned == nil || in.Learned.MPLoad != 2 || in.Learned.MP <= 0 {
		t.Errorf("learned %+v", in.Learned)
	}
}
