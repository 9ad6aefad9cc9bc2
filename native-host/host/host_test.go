package host

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/carry"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/wire"
)

type exchange struct {
	Name    string          `json:"name"`
	Request json.RawMessage `json:"request"`
	Reply   any             `json:"reply"`
}

func loadExchanges(t *testing.T) []exchange {
	t.Helper()
	data, err := os.ReadFile("../vectors/exchanges.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Exchanges []exchange `json:"exchanges"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Exchanges) == 0 {
		t.Fatal("no exchanges")
	}
	return file.Exchanges
}

// subset reports where got differs from want under the rule of exchanges.json: every key of a want object must be in
// the got object with an equal value (recursively); arrays and scalars compare exactly.
func subset(want, got any, path string) string {
	if wm, ok := want.(map[string]any); ok {
		gm, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %v, want an object", path, got)
		}
		for k, wv := range wm {
			gv, ok := gm[k]
			if !ok {
				return fmt.Sprintf("%s.%s: missing", path, k)
			}
			if d := subset(wv, gv, path+"."+k); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Sprintf("%s: got %v, want %v", path, got, want)
	}
	return ""
}

func toAny(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func embeddedServer(t *testing.T) *Server {
	t.Helper()
	store := policy.NewStore(policy.EmbeddedSource())
	if _, err := store.Snapshot(); err != nil {
		t.Fatal(err)
	}
	return testServer(t, Parts{Policy: store})
}

// testServer builds a Server for a test as cmd/mpsurf-host does, with what p leaves out filled in: the model built
// into the binary with nothing measured or remembered, and a started Carrier with no helper and no proxy set.
func testServer(t testing.TB, p Parts) *Server {
	t.Helper()
	if p.Decider == nil {
		params, src, err := model.Open("")
		p.Decider = decide.New(decide.Config{Params: params, ParamsSource: src, ParamsErr: err})
	}
	if p.Carrier == nil {
		p.Carrier = carry.New(carry.Config{ProxyFile: filepath.Join(t.TempDir(), "proxy.json"), Store: p.Store, Tunnel: p.Decider.Tunnel})
		p.Carrier.Start()
	}
	if p.Log == nil {
		p.Log = quietLog()
	}
	s := NewServer(p)
	t.Cleanup(s.Close)
	return s
}

func TestExchanges(t *testing.T) {
	s := embeddedServer(t)
	for _, ex := range loadExchanges(t) {
		t.Run(ex.Name, func(t *testing.T) {
			got := toAny(t, s.Handle(ex.Request))
			if d := subset(ex.Reply, got, "reply"); d != "" {
				t.Errorf("%s\nfull reply: %v", d, got)
			}
		})
	}
}

// Every successful reply is valid by the protocol's own rules, beyond what the vectors pin down.
func TestRepliesValidate(t *testing.T) {
	s := embeddedServer(t)
	for _, ex := range loadExchanges(t) {
		r := s.Handle(ex.Request)
		if !r.OK {
			if r.Error == nil || r.Error.Name != r.Error.Code.Name() || r.Error.Message == "" {
				t.Errorf("%s: error %+v", ex.Name, r.Error)
			}
			continue
		}
		var err error
		switch b := r.Body.(type) {
		case decide.Body:
			err = b.Validate()
			if b.Protocol != "unknown" || b.Size == nil || b.Size.Known || len(b.Terms) == 0 || b.Basis != decide.BasisPrior {
				t.Errorf("%s: model explanation %+v", ex.Name, b)
			}
			if b.Inputs["basis"] != "prior" || b.Inputs["predicted_size_bytes"] != nil {
				t.Errorf("%s: inputs %v", ex.Name, b.Inputs)
			}
		case protocol.HelloReply:
			err = b.Policy.Validate()
		case StatusBody:
			err = b.Policy.Validate()
			if b.PID != os.Getpid() || b.Version != Version {
				t.Errorf("%s: %+v", ex.Name, b)
			}
		case protocol.PeersReply:
			if b.Addrs < 1 || b.Actuation == "" {
				t.Errorf("%s: %+v", ex.Name, b)
			}
		case protocol.AnnounceReply:
			if b.Joined || b.Why == "" || b.Actuation == "" {
				t.Errorf("%s: %+v", ex.Name, b)
			}
		case protocol.PauseReply:
			if b.Paused == (b.Why == "none") {
				t.Errorf("%s: %+v", ex.Name, b)
			}
		default:
			t.Errorf("%s: body %T", ex.Name, r.Body)
		}
		if err != nil {
			t.Errorf("%s: %v", ex.Name, err)
		}
	}
}

func TestStatusCountsDecisions(t *testing.T) {
	s := embeddedServer(t)
	decide := []byte(`{"v":1,"id":1,"type":"decide","body":{"origin":"https://example.com","tab":1,"nav":"1"}}`)
	bad := []byte(`{"v":1,"id":2,"type":"decide","body":{"origin":"ftp://example.com","tab":1,"nav":"1"}}`)
	for range 3 {
		s.Handle(decide)
	}
	s.Handle(bad)
	r := s.Handle([]byte(`{"v":1,"id":3,"type":"status"}`))
	if st := r.Body.(StatusBody); st.Decisions != 3 || st.UptimeMS < 0 {
		t.Errorf("status %+v, want 3 decisions", st)
	}
}

func TestPolicyUnavailable(t *testing.T) {
	dir := t.TempDir()
	src, _ := policy.Resolve(dir, "")
	s := testServer(t, Parts{Policy: policy.NewStore(src)})
	for _, req := range []string{
		`{"v":1,"id":1,"type":"hello","body":{"client":"c","version":"1","protocols":[1]}}`,
		`{"v":1,"id":2,"type":"decide","body":{"origin":"https://example.com","tab":1,"nav":"1"}}`,
		`{"v":1,"id":3,"type":"status"}`,
	} {
		r := s.Handle([]byte(req))
		if r.OK || r.Error.Code != protocol.CodePolicyUnavailable ||
			!strings.Contains(r.Error.Message, filepath.Join(dir, "baseline.json")) {
			t.Errorf("%s: %+v", req, r.Error)
		}
	}
	// A request that is bad anyway says so, rather than blaming the policy.
	r := s.Handle([]byte(`{"v":1,"id":4,"type":"decide","body":{"origin":"ftp://x","tab":1,"nav":"1"}}`))
	if r.Error.Code != protocol.CodeBadOrigin {
		t.Errorf("bad origin without a policy: %+v", r.Error)
	}
}

// pipeHost runs Serve over in-memory pipes. The returned client writes frames to the host and reads its replies.
type pipeHost struct {
	toHost   *io.PipeWriter
	fromHost *wire.Reader
	done     chan error
}

func startPipeHost(t *testing.T, s *Server, cfg Config) *pipeHost {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	cfg.In, cfg.Out = inR, outW
	h := &pipeHost{toHost: inW, fromHost: wire.NewReader(outR, wire.MaxOut), done: make(chan error, 1)}
	go func() {
		err := s.Serve(context.Background(), cfg)
		outW.Close()
		inR.Close()
		h.done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return h
}

func (h *pipeHost) send(t *testing.T, raw []byte) {
	t.Helper()
	if _, err := h.toHost.Write(raw); err != nil {
		t.Fatal(err)
	}
}

func (h *pipeHost) next(t *testing.T) map[string]any {
	t.Helper()
	type result struct {
		p   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() { p, err := h.fromHost.Read(); ch <- result{p, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("reading from the host: %v", r.err)
		}
		var m map[string]any
		if err := json.Unmarshal(r.p, &m); err != nil {
			t.Fatalf("host wrote %q: %v", r.p, err)
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no frame from the host within 5 s")
	}
	return nil
}

func (h *pipeHost) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5 s")
	}
	return nil
}

// The exchanges again, this time framed and through the serve loop, in one session.
func TestServeExchanges(t *testing.T) {
	h := startPipeHost(t, embeddedServer(t), Config{Log: quietLog()})
	exs := loadExchanges(t)
	go func() {
		for _, ex := range exs {
			h.toHost.Write(wire.Append(nil, ex.Request))
		}
		h.toHost.Close()
	}()
	for _, ex := range exs {
		if d := subset(ex.Reply, h.next(t), "reply"); d != "" {
			t.Errorf("%s: %s", ex.Name, d)
		}
	}
	if err := h.wait(t); err != nil {
		t.Fatalf("Serve after EOF: %v", err)
	}
}

type badInput struct {
	Name     string `json:"name"`
	InputHex string `json:"input_hex"`
	Replies  []int  `json:"replies"`
}

func loadBadInput(t *testing.T) []badInput {
	t.Helper()
	data, err := os.ReadFile("../vectors/bad_input.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []badInput `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	return file.Cases
}

// replyCodes reads every frame in out and returns each reply's error code, 0 for an ok reply.
func replyCodes(t *testing.T, out []byte) []int {
	t.Helper()
	codes := []int{}
	r := wire.NewReader(bytes.NewReader(out), wire.MaxOut)
	for {
		p, err := r.Read()
		if err == io.EOF {
			return codes
		}
		if err != nil {
			t.Fatalf("host output is not whole frames: %v", err)
		}
		var reply protocol.Reply
		var e struct {
			Error *protocol.Error `json:"error"`
		}
		if err := json.Unmarshal(p, &reply); err != nil {
			t.Fatalf("reply %q: %v", p, err)
		}
		json.Unmarshal(p, &e)
		if reply.OK {
			codes = append(codes, 0)
		} else if e.Error != nil {
			codes = append(codes, int(e.Error.Code))
		} else {
			t.Fatalf("failed reply without an error: %s", p)
		}
	}
}

// bad_input.json in-process; cmd/mpsurf-host runs the same vectors against the built binary.
func TestServeBadInput(t *testing.T) {
	for _, c := range loadBadInput(t) {
		t.Run(c.Name, func(t *testing.T) {
			raw, err := hex.DecodeString(c.InputHex)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = embeddedServer(t).Serve(context.Background(), Config{
				In: bytes.NewReader(raw), Out: &out, Log: quietLog(),
			})
			if err != nil {
				t.Fatalf("Serve: %v", err)
			}
			if got := replyCodes(t, out.Bytes()); !reflect.DeepEqual(got, c.Replies) {
				t.Errorf("replies %v, want %v", got, c.Replies)
			}
		})
	}
}

// A policy file rewritten while the port is open reaches the extension as a push with the next revision.
func TestServePushesPolicy(t *testing.T) {
	dir := t.TempDir()
	base, err := os.ReadFile("../../policy-models/baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "baseline.json")
	if err := os.WriteFile(file, base, 0o644); err != nil {
		t.Fatal(err)
	}
	src, _ := policy.Resolve(dir, "")
	h := startPipeHost(t, testServer(t, Parts{Policy: policy.NewStore(src)}), Config{Log: quietLog(), PollInterval: 10 * time.Millisecond})

	h.send(t, wire.Append(nil, []byte(`{"v":1,"id":1,"type":"status"}`)))
	if r := h.next(t); r["ok"] != true {
		t.Fatalf("status: %v", r)
	}
	changed := bytes.Replace(base, []byte(`"theta1_bytes": 200000`), []byte(`"theta1_bytes": 300000`), 1)
	if bytes.Equal(changed, base) {
		t.Fatal("could not change theta1 in the test copy")
	}
	if err := os.WriteFile(file+".tmp", changed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		t.Fatal(err)
	}
	push := h.next(t)
	want := map[string]any{"v": 1.0, "type": "policy", "push": true,
		"body": map[string]any{"revision": 2.0, "theta1": 300000.0, "multipath": true}}
	if d := subset(want, push, "push"); d != "" {
		t.Fatalf("%s\n%v", d, push)
	}
	if _, ok := push["id"]; ok {
		t.Error("a push carries an id")
	}
	// Later replies carry the new revision.
	h.send(t, wire.Append(nil, []byte(`{"v":1,"id":2,"type":"status"}`)))
	if d := subset(map[string]any{"id": 2.0, "body": map[string]any{"policy": map[string]any{"revision": 2.0}}},
		h.next(t), "status"); d != "" {
		t.Error(d)
	}
	h.toHost.Close()
	if err := h.wait(t); err != nil {
		t.Fatal(err)
	}
}

type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// A port that cannot be written ends Serve with an error instead of a silent death or a hang.
func TestServeWriteError(t *testing.T) {
	in := bytes.NewReader(wire.Append(nil, []byte(`{"v":1,"id":1,"type":"status"}`)))
	err := embeddedServer(t).Serve(context.Background(), Config{In: in, Out: brokenWriter{}, Log: quietLog()})
	if err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("got %v", err)
	}
}

func TestServeContext(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- embeddedServer(t).Serve(ctx, Config{In: inR, Out: io.Discard, Log: quietLog()}) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve ignored its context")
	}
	inR.Close()
}

// A reply too large for Chrome still answers its request: as an internal error.
func TestSendOversizeReply(t *testing.T) {
	var out bytes.Buffer
	s := embeddedServer(t)
	big := protocol.OK(protocol.Request{ID: 9, Type: "status"}, strings.Repeat("a", wire.MaxOut))
	if err := s.send(wire.NewWriter(&out, wire.MaxOut), big); err != nil {
		t.Fatal(err)
	}
	p, err := wire.NewReader(&out, wire.MaxOut).Read()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": 9.0, "type": "status", "ok": false, "error": map[string]any{"code": 1.0, "name": "internal"}}
	var got map[string]any
	json.Unmarshal(p, &got)
	if d := subset(want, got, "reply"); d != "" {
		t.Error(d)
	}
}
