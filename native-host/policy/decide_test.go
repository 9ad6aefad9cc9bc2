package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

func loadEmbedded(t testing.TB) File {
	t.Helper()
	f, err := EmbeddedSource().Load()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDecideBaseline(t *testing.T) {
	out := Decide(Input{Origin: "https://example.com", Model: loadEmbedded(t), Source: EmbeddedSource(), Revision: 1})
	d := out.Decision("https://example.com", 12, "12-1")
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if !d.Multipath || *d.Theta1 != 200000 || d.Theta2 != nil || d.DeadlineMS != 3000 ||
		d.Model != (protocol.Model{ID: "baseline-seed001", Version: 1}) {
		t.Errorf("decision %+v", d)
	}
	if want := "seed 001 §4.2: multipath only for transfers of at least 200 kB, no cellular cap, page-load tolerance 3 s"; d.Reason != want {
		t.Errorf("reason %q\nwant %q", d.Reason, want)
	}
	got, _ := json.Marshal(d.Inputs)
	want := `{"deadline_ms":3000,"model_id":"baseline-seed001","model_version":1,"multipath_allowed":true,` +
		`"policy_file":"embedded:policy-models/baseline.json","policy_revision":1,"predicted_size_bytes":null,` +
		`"theta1_bytes":200000,"theta2_bytes":null}`
	if string(got) != want {
		t.Errorf("inputs\n got %s\nwant %s", got, want)
	}
	p := out.Policy(4)
	if err := p.Validate(); err != nil || p.Revision != 4 || p.Reason != d.Reason {
		t.Errorf("policy %+v, %v", p, err)
	}
}

func TestDecideReasons(t *testing.T) {
	cap5 := int64(5000000)
	size := int64(123)
	tests := []struct {
		f    File
		in   Input
		want string
	}{
		{File{ID: "m", Version: 2, Multipath: false, DeadlineMS: 3000}, Input{},
			"multipath off in m v2 (seed 001 §4.2 policy)"},
		{File{ID: "m", Version: 1, Multipath: true, Theta1Bytes: 1500000, Theta2Bytes: &cap5, DeadlineMS: 2500}, Input{},
			"seed 001 §4.2: multipath only for transfers of at least 1.5 MB, cellular capped at 5 MB, page-load tolerance 2.5 s"},
		{File{ID: "m", Version: 1, Multipath: true, Theta1Bytes: 999, DeadlineMS: 100}, Input{PredictedSizeBytes: &size},
			"seed 001 §4.2: multipath only for transfers of at least 999 B, no cellular cap, page-load tolerance 0.1 s"},
	}
	for _, tc := range tests {
		tc.in.Model = tc.f
		out := Decide(tc.in)
		if out.Reason != tc.want {
			t.Errorf("reason %q\nwant %q", out.Reason, tc.want)
		}
		if tc.in.PredictedSizeBytes != nil && out.Inputs["predicted_size_bytes"] != *tc.in.PredictedSizeBytes {
			t.Errorf("predicted size input %v", out.Inputs["predicted_size_bytes"])
		}
	}
}

// The longest reason a valid file can produce fits the protocol's 256 bytes.
func TestReasonLength(t *testing.T) {
	big := int64(protocol.MaxSafeInt)
	for _, mp := range []bool{true, false} {
		f := File{ID: strings.Repeat("x", 64), Version: protocol.MaxSafeInt, Multipath: mp, Theta1Bytes: 987654321987654,
			Theta2Bytes: &big, DeadlineMS: 59999}
		if r := reason(f); len(r) > protocol.MaxReasonLen {
			t.Errorf("%d bytes: %q", len(r), r)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 999: "999 B", 1000: "1 kB", 200000: "200 kB", 181000: "181 kB", 1500000: "1.5 MB",
		3221225472: "3.2 GB", protocol.MaxSafeInt: "9 PB",
	} {
		if got := humanBytes(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}
