package host

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/store"
	"github.com/mpsurf/mpsurf/native-host/wire"
)

// historyServer is a Server whose store keeps 40 loads of https://example.com, 20 of them of /gallery/7's class, as
// hostbench's serving host: links not measured (priors), the radio sure of its state.
func historyServer(b *testing.B) *Server {
	b.Helper()
	db, err := store.Open(filepath.Join(b.TempDir(), "bench.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for i := range int64(20) {
		for _, o := range []store.Observation{
			{Origin: "https://example.com", Tab: 1, Nav: fmt.Sprintf("o%d", i), PathClass: "/page/:id", Protocol: "h2", TransferBytes: 30_000 + i*40_000, PLTms: 900},
			{Origin: "https://example.com", Tab: 1, Nav: fmt.Sprintf("c%d", i), PathClass: store.PathClass("/gallery/7"), Protocol: "h2", TransferBytes: 1_900_000 + i*10_000, PLTms: 2500},
		} {
			if _, err := db.Report(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
	}
	p, src, err := model.Open("")
	if err != nil {
		b.Fatal(err)
	}
	dec := decide.New(decide.Config{Params: p, ParamsSource: src, Memory: db, Log: quietLog(),
		Links: views{decide.View{RRC: &model.RRC{Tech: "lte", State: "idle", SinceMS: 60000}}}})
	return testServer(b, Parts{Policy: policy.NewStore(policy.EmbeddedSource()), Decider: dec, Store: db})
}

const benchDecide = `{"v":1,"id":1,"type":"decide","body":{"origin":"https://example.com","tab":12,"nav":"12-1","path":"/gallery/7"}}`

// BenchmarkDecideReply times a decide as the serve loop answers it, from the request's payload to the reply's
// frame: parse, decide with the page's history, carry, encode and frame (the log row is written after, by the log
// writer, and not timed).
func BenchmarkDecideReply(b *testing.B) {
	s := historyServer(b)
	w := wire.NewWriter(discard{}, wire.MaxOut)
	b.ReportAllocs()
	for b.Loop() {
		reply, row := s.handle([]byte(benchDecide))
		if err := s.send(w, reply); err != nil || row == nil {
			b.Fatal(err, row)
		}
	}
}

// BenchmarkDecideReplyJSON times the encoding of a decide reply with the page's history.
func BenchmarkDecideReplyJSON(b *testing.B) {
	s := historyServer(b)
	reply, _ := s.handle([]byte(benchDecide))
	if !reply.OK {
		b.Fatal(reply.Error)
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		data, err := json.Marshal(reply)
		if err != nil {
			b.Fatal(err)
		}
		n = len(data)
	}
	b.ReportMetric(float64(n), "bytes/reply")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
