package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// A download the model does not find worth both links is declined with its reason and logged; the browser's
// own download then goes on.
func TestDownloadOfferDeclined(t *testing.T) {
	p, _, err := model.Open("")
	if err != nil {
		t.Fatal(err)
	}
	g := &decide.Given{}
	srv := testServer(t, Parts{Decider: decide.New(decide.Config{Params: p, Links: g, Memory: g})})
	for _, c := range []struct {
		name string
		size int64
		want string
	}{
		{"too small to be worth it", 4096, "single path"},
		{"worth it, but no cellular interface", 64 << 20, "does not see both"},
	} {
		body, _ := json.Marshal(map[string]any{"id": "c1" + c.name[:3], "url": "https://files.example/a.bin", "origin": "https://files.example",
			"size": c.size, "file": t.TempDir() + "/a.bin"})
		rep := srv.Handle(mustRequest(t, protocol.TypeDownloadOffer, body))
		if !rep.OK {
			t.Fatalf("%s: %+v", c.name, rep.Error)
		}
		st := rep.Body.(protocol.DownloadState)
		if st.State != protocol.DownloadDeclined || !strings.Contains(st.Reason, c.want) {
			t.Errorf("%s: %+v", c.name, st)
		}
	}
	rep := srv.Handle(mustRequest(t, protocol.TypeDownloadControl, []byte(`{"id":"nope","action":"pause"}`)))
	if rep.OK || rep.Error.Code != protocol.CodeBadRequest {
		t.Errorf("control of an unknown download: %+v", rep)
	}
	rep = srv.Handle(mustRequest(t, protocol.TypeDownloadList, nil))
	if !rep.OK || len(rep.Body.(protocol.DownloadList).Downloads) != 0 {
		t.Errorf("list: %+v", rep)
	}
}

func mustRequest(t *testing.T, typ string, body []byte) []byte {
	t.Helper()
	m := map[string]any{"v": 1, "id": 5, "type": typ}
	if body != nil {
		m["body"] = json.RawMessage(body)
	}
	b, _ := json.Marshal(m)
	return b
}

// The transfer's decision goes into the decision log with the origin and size, and nothing of the URL's path,
// query or the request's cookies.
func TestDownloadDecisionLogged(t *testing.T) {
	s, db := storeServer(t)
	body := `{"id":"c5","url":"https://files.example/secret/path.bin?token=hunter2","origin":"https://files.example","size":50000000,` +
		`"file":"` + t.TempDir() + `/path.bin","headers":{"cookie":"sid=topsecret"}}`
	if r := call(t, s, protocol.TypeDownloadOffer, body); !r.OK {
		t.Fatalf("offer: %+v", r.Error)
	}
	var out strings.Builder
	n, err := db.Export(context.Background(), &out, "jsonl", 0, store.PathsRaw)
	if err != nil || n != 1 {
		t.Fatalf("export: %d rows, %v", n, err)
	}
	line := out.String()
	if !strings.Contains(line, "https://files.example") || !strings.Contains(line, "50000000") || !strings.Contains(line, "download-c5") {
		t.Errorf("the log lacks the transfer: %s", line)
	}
	for _, secret := range []string{"hunter2", "topsecret", "secret/path"} {
		if strings.Contains(line, secret) {
			t.Errorf("the log holds %q: %s", secret, line)
		}
	}
}
