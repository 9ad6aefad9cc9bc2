package origin

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseDictionary(t *testing.T) {
	cases := []struct {
		in, canon string // canon "" means parsing must fail
	}{
		{"v=1, mp=?1, t1=256, dl=3", "v=1, mp, t1=256, dl=3"}, // RFC 9651 §4.1.2 drops "=?1"
		{"v=1,mp=?0,t1=0,t2=0,dl=5", "v=1, mp=?0, t1=0, t2=0, dl=5"},
		{"  a=1 ,\tb=2  ", "a=1, b=2"},
		{"a, b;x=1;y", "a, b;x=1;y"},
		{"a=?1", "a"},
		{"a=?1;p=?1", "a;p"},
		{"a=1, b=2, a=3", "a=3, b=2"}, // a repeated key keeps its place, takes the last value
		{`s="he said \"hi\" \\ ok"`, `s="he said \"hi\" \\ ok"`},
		{"d=1.50, e=-0.001, f=123456789012.5", "d=1.5, e=-0.001, f=123456789012.5"},
		{"i=-999999999999999, j=999999999999999", "i=-999999999999999, j=999999999999999"},
		{"t=foo/bar:baz, u=*x", "t=foo/bar:baz, u=*x"},
		{"b=:aGVsbG8=:, c=:aGVsbG8:", "b=:aGVsbG8=:, c=:aGVsbG8=:"},
		{"l=(1 2;p \"x\"), e=();q", `l=(1 2;p "x"), e=();q`},
		{"l=(  a   b )", "l=(a b)"},
		{"w=@1659578233", "w=@1659578233"},
		{`ds=%"caf%c3%a9 %22%25"`, `ds=%"caf%c3%a9 %22%25"`},
		{"", ""},
		{"*k=1, a.b-c_d*=2", "*k=1, a.b-c_d*=2"},
		// Failures.
		{"v=1,", ""},
		{"V=1", ""},
		{"1a=1", ""},
		{"a=1;", ""},
		{"a=1 b=2", ""},
		{"a=1000000000000000", ""},
		{"a=1.", ""},
		{"a=1.1234", ""},
		{"a=1234567890123.1", ""},
		{"a=-", ""},
		{`a="unterminated`, ""},
		{`a="bad \n escape"`, ""},
		{"a=\"tab\there\"", ""},
		{"a=?2", ""},
		{"a=:not base64!:", ""},
		{"a=:abc", ""},
		{"a=@1.5", ""},
		{`a=%"caf%C3%A9"`, ""},
		{`a=%"%ff"`, ""},
		{"a=(1 2", ""},
		{"a=(1,2)", ""},
		{"a=1,,b=2", ""},
		{"a=\u00e9", ""},
		{" , a=1", ""},
	}
	for _, c := range cases {
		d, err := ParseDictionary(c.in)
		if c.canon == "" && c.in != "" {
			if err == nil {
				t.Errorf("%q parsed as %q, want an error", c.in, d)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := d.String(); got != c.canon {
			t.Errorf("%q serialises as %q, want %q", c.in, got, c.canon)
		}
	}
}

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
		{"garbage here", PolicyLog{Error: "structured field: expected ',' at byte 8"}},
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
				Multipath bool `json:"multipath"`
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
		if !l.OK || l.MP == nil || *l.MP != c.Policy.Multipath || l.T1 == nil || l.DL == nil {
			t.Errorf("%s: %q read as %+v", c.Name, c.Header, l)
		}
		d, _ := ParseDictionary(c.Header)
		if again := ParsePolicy(d.String()); !reflect.DeepEqual(again.MP, l.MP) || *again.T1 != *l.T1 || *again.DL != *l.DL {
			t.Errorf("%s: %q re-serialised as %q reads %+v", c.Name, c.Header, d.String(), again)
		}
	}
}

func FuzzParseDictionary(f *testing.F) {
	for _, s := range []string{
		"v=1, mp=?1, t1=256, dl=3", "v=1, mp=?0, t1=0, t2=0, dl=5", `a=(1 "x";p=:AA==:);q=@5, b=%"%c3%a9", c=-1.25`,
		"a, b;c", "*=tok/x:y", "a=(", `s="\"`, "a=1.", "  x=1 ,\ty", "k=:/+A=:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDictionary(s)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("%q: error of type %T", s, err)
			}
			return
		}
		out := d.String()
		d2, err := ParseDictionary(out)
		if err != nil {
			t.Fatalf("%q serialised to %q, which does not parse: %v", s, out, err)
		}
		if !reflect.DeepEqual(normalise(d), normalise(d2)) {
			t.Fatalf("%q -> %q changed meaning:\n%#v\n%#v", s, out, d, d2)
		}
		if d2.String() != out {
			t.Fatalf("serialising is not stable: %q then %q", out, d2.String())
		}
		if strings.ContainsAny(out, "\r\n\t") {
			t.Fatalf("serialised %q holds whitespace other than SP", out)
		}
		ParsePolicy(s) // must not panic
	})
}

// normalise makes nil and empty slices compare equal.
func normalise(d Dictionary) Dictionary {
	out := make(Dictionary, len(d))
	for i, m := range d {
		m.Params = normParams(m.Params)
		m.Item = normItem(m.Item)
		for j := range m.List {
			m.List[j] = normItem(m.List[j])
		}
		out[i] = m
	}
	return out
}

func normItem(it Item) Item {
	it.Params = normParams(it.Params)
	if it.Value.Kind == KindBytes && it.Value.Bytes == nil {
		it.Value.Bytes = []byte{}
	}
	return it
}

func normParams(ps []Param) []Param {
	if len(ps) == 0 {
		return nil
	}
	for i := range ps {
		if ps[i].Value.Kind == KindBytes && ps[i].Value.Bytes == nil {
			ps[i].Value.Bytes = []byte{}
		}
	}
	return ps
}
