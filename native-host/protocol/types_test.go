package protocol

import (
	"encoding/json"
	"os"
	"testing"
)

func frameJSON(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../vectors/frames.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Frames []struct{ Name, JSON string }
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for _, f := range file.Frames {
		if f.Name == name {
			return f.JSON
		}
	}
	t.Fatalf("frames.json has no %q", name)
	return ""
}

// The host's own marshalling produces the vectors byte for byte.
func TestMarshalMatchesVectors(t *testing.T) {
	push := PolicyPush(Policy{
		Revision: 2, Multipath: false, Theta1: Bytes(200000), DeadlineMS: 3000, Reason: "cellular path down",
		Model: Model{ID: "baseline-seed001", Version: 1},
	})
	reply := Fail(Request{}, Errorf(CodeBadJSON, "payload is not one JSON object"))
	for name, v := range map[string]any{"policy push": push, "error reply": reply} {
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := frameJSON(t, name); string(got) != want {
			t.Errorf("%s\n got %s\nwant %s", name, got, want)
		}
	}
}

func TestFailEchoes(t *testing.T) {
	r := Fail(Request{ID: 7, Type: "decide"}, Errorf(CodeBadOrigin, "origin: x"))
	if r.ID != 7 || r.Type != "decide" || r.OK || r.Error.Name != "bad_origin" {
		t.Errorf("got %+v", r)
	}
	r = Fail(Request{ID: 7}, Errorf(CodeBadRequest, "type: missing"))
	if r.ID != 0 || r.Type != TypeError {
		t.Errorf("id without type: got %d %q", r.ID, r.Type)
	}
}

func TestPolicyValidate(t *testing.T) {
	neg := int64(-1)
	ok := Policy{Revision: 1, Multipath: true, Theta1: Bytes(200000), DeadlineMS: 3000, Reason: "r", Model: Model{"m", 1}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Policy){
		"revision 0":       func(p *Policy) { p.Revision = 0 },
		"theta1 negative":  func(p *Policy) { p.Theta1 = Bytes(-1) },
		"theta2 negative":  func(p *Policy) { p.Theta2 = &neg },
		"deadline 99":      func(p *Policy) { p.DeadlineMS = 99 },
		"deadline 60001":   func(p *Policy) { p.DeadlineMS = 60001 },
		"reason 257 bytes": func(p *Policy) { p.Reason = string(make([]byte, 257)) },
		"model id empty":   func(p *Policy) { p.Model.ID = "" },
		"theta1 over 2^53": func(p *Policy) { p.Theta1 = Bytes(1 << 53) },
	} {
		p := ok
		mutate(&p)
		if p.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPolicySameAs(t *testing.T) {
	a, b := int64(5), int64(5)
	c := int64(6)
	p := Policy{Revision: 1, Theta1: Bytes(1), Theta2: &a, DeadlineMS: 3000, Model: Model{"m", 1}}
	q := p
	q.Revision, q.Theta2 = 9, &b
	if !p.SameAs(q) {
		t.Error("same terms, other revision and pointer: not the same")
	}
	q.Theta2 = &c
	if p.SameAs(q) {
		t.Error("other theta2: the same")
	}
	q.Theta2 = nil
	if p.SameAs(q) {
		t.Error("theta2 nil vs 5: the same")
	}
	q = p
	q.Model.Version = 2
	if p.SameAs(q) {
		t.Error("other model version: the same")
	}
}

func TestDecisionValidate(t *testing.T) {
	d := Decision{Theta1: Bytes(1), DeadlineMS: 3000, Model: Model{"m", 1}, Inputs: map[string]any{"a": nil, "b": 1, "c": "s", "d": true}}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	d.Inputs["e"] = []int{1}
	if d.Validate() == nil {
		t.Error("an array input was accepted")
	}
	d.Inputs = nil
	if d.Validate() == nil {
		t.Error("nil inputs accepted")
	}
}
