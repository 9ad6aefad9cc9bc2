package origin

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/dunglas/httpsfv"
)

func TestParsePolicy(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	b := func(v bool) *bool { return &v }
	cases := []struct {
		raw  string
		want PolicyLog
	}{
		{"v=1, mp=?1, t1=256, dl=3", PolicyLog{Dict: true, OK: true, V: i(1), MP: b(true), T1: i(256), DL: i(3)}},
		{"v=1, mp=?0, t1=0, t2=0, dl=5, future=\"x\"", PolicyLog{Dict: true, OK: true, V: i(1), MP: b(false), T1: i(0), T2: i(0), DL: i(5)}},
		{"v=1, mp=1", PolicyLog{Dict: true, V: i(1), Error: "mp is not a Boolean"}},
		{"v=2, mp=?1", PolicyLog{Dict: true, V: i(2), MP: b(true), Error: "unknown version 2"}},
		{"mp=?1", PolicyLog{Dict: true, MP: b(true), Error: "no version key v"}},
		{"v=1, t1=2.5", PolicyLog{Dict: true, V: i(1), Error: "t1 is not an Integer"}},
		{"v=1; mp=?1", PolicyLog{Dict: true, OK: true, V: i(1)}}, // mp is a parameter of v here
		{"garbage here", PolicyLog{Error: "structured field: invalid dictionary format: character 8"}},
		{"v=1, mp=(?1)", PolicyLog{Dict: true, V: i(1), Error: "mp is not a Boolean"}},
		{"v=1, t1=(1)", PolicyLog{Dict: true, V: i(1), Error: "t1 is not an Integer"}},
	}
	for _, c := range cases {
		c.want.Present, c.want.Raw = true, c.raw
		if got := ParsePolicy(c.raw); !reflect.DeepEqual(got, c.want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(c.want)
			t.Errorf("%q:\n got %s\nwant %s", c.raw, g, w)
		}
	}
	if got := ReadPolicy(map[string][]string{}); got.Present {
		t.Errorf("absent header read as %+v", got)
	}
	two := ReadPolicy(map[string][]string{"Multipath-Policy": {"v=1", "mp=?1"}})
	if two.Raw != "v=1, mp=?1" || !two.OK || two.MP == nil || !*two.MP {
		t.Errorf("two field lines read as %+v", two)
	}
}

// TestPolicyVectors reads the shared header vectors (native-host/vectors/header.json):
// every header the extension can send must parse and keep its values. The vectors write
// a true mp as "mp=?1", which parses; RFC 9651's canonical form is "mp", so only the
// parsed values, not the strings, survive a round trip.
func TestPolicyVectors(t *testing.T) {
	data, err := os.ReadFile("../../native-host/vectors/header.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []struct {
			Name   string `json:"name"`
			Header string `json:"header"`
			Policy struct {
				Theta1 *int64 `json:"theta1"` // null: never, so mp=?0
			} `json:"policy"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) == 0 {
		t.Fatal("no header vectors")
	}
	for _, c := range f.Cases {
		l := ParsePolicy(c.Header)
		if !l.OK || l.MP == nil || *l.MP != (c.Policy.Theta1 != nil) || l.T1 == nil || l.DL == nil {
			t.Errorf("%s: %q read as %+v", c.Name, c.Header, l)
		}
		d, err := httpsfv.UnmarshalDictionary([]string{c.Header})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		out, err := httpsfv.Marshal(d)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if again := ParsePolicy(out); !reflect.DeepEqual(again.MP, l.MP) || *again.T1 != *l.T1 || *again.DL != *l.DL {
			t.Errorf("%s: %q re-serialised as %q reads %+v", c.Name, c.Header, out, again)
		}
	}
}

// FuzzParsePolicy: any header reads without a panic, and a Dictionary that reads serialises (httpsfv) to one
// that reads the same values again.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{
		"v=1, mp=?1, t1=256, dl=3", "v=1, mp=?0, t1=0, t2=0, dl=5", `a=(1 "x";p=:AA==:);q=@5, b=%"%c3%a9", c=-1.25`,
		"a, b;c", "*=tok/x:y", "a=(", `s="\"`, "a=1.", "  x=1 ,\ty", "k=:/+A=:", "v=1, mp", "v=1;mp=?1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := ParsePolicy(s)
		if !l.Dict {
			if l.OK || l.Error == "" {
				t.Fatalf("%q: not a Dictionary, yet %+v", s, l)
			}
			return
		}
		d, err := httpsfv.UnmarshalDictionary([]string{s})
		if err != nil {
			t.Fatalf("%q read as a Dictionary, but httpsfv refuses it: %v", s, err)
		}
		out, err := httpsfv.Marshal(d)
		if err != nil {
			return // a value httpsfv parses but cannot write (the suite has none); nothing to compare
		}
		again := ParsePolicy(out)
		again.Raw = l.Raw
		if !reflect.DeepEqual(again, l) {
			t.Fatalf("%q read as %+v; serialised as %q it reads %+v", s, l, out, again)
		}
		if strings.ContainsAny(out, "\r\n\t") {
			t.Fatalf("serialised %q holds whitespace other than SP", out)
		}
	})
}
