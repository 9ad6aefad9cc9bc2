package cli

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestParseMixed(t *testing.T) {
	tests := []struct {
		args    []string
		pos     []string
		prefix  string
		json    bool
		wantErr string // "" none, "help", or the UsageError's text
	}{
		{nil, nil, "mps", false, ""},
		{[]string{"mp", "--prefix", "x"}, []string{"mp"}, "x", false, ""},
		{[]string{"--json", "a", "b", "--prefix=y"}, []string{"a", "b"}, "y", true, ""},
		{[]string{"a", "--", "--json", "-h"}, []string{"a", "--json", "-h"}, "mps", false, ""},
		{[]string{"a", "--help"}, nil, "mps", false, "help"},
		{[]string{"-h"}, nil, "mps", false, "help"},
		{[]string{"a", "--nope"}, nil, "mps", false, "flag provided but not defined: -nope"},
		{[]string{"--prefix"}, nil, "mps", false, "flag needs an argument: -prefix"},
		{[]string{"--json=maybe"}, nil, "mps", false, `invalid boolean value "maybe" for -json: parse error`},
	}
	for _, tc := range tests {
		fs := Flags("t")
		prefix := fs.String("prefix", "mps", "")
		asJSON := fs.Bool("json", false, "")
		pos, err := ParseMixed(fs, tc.args)
		var ue *UsageError
		switch {
		case tc.wantErr == "help":
			if !errors.Is(err, flag.ErrHelp) {
				t.Errorf("%q: err %v, want flag.ErrHelp", tc.args, err)
			}
		case tc.wantErr != "":
			if !errors.As(err, &ue) || ue.Msg != tc.wantErr {
				t.Errorf("%q: err %v, want usage error %q", tc.args, err, tc.wantErr)
			}
		case err != nil || !slices.Equal(pos, tc.pos) || *prefix != tc.prefix || *asJSON != tc.json:
			t.Errorf("%q: %q prefix %q json %v err %v; want %q %q %v", tc.args, pos, *prefix, *asJSON, err, tc.pos, tc.prefix, tc.json)
		}
	}
}

func TestParseNone(t *testing.T) {
	fs := Flags("t")
	fs.Bool("json", false, "")
	if err := ParseNone(fs, []string{"--json"}); err != nil {
		t.Errorf("flags only: %v", err)
	}
	var ue *UsageError
	if err := ParseNone(Flags("t"), []string{"x", "y"}); !errors.As(err, &ue) || ue.Msg != `unexpected argument "x"` {
		t.Errorf("positional: %v", err)
	}
}

func TestWantsHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"-h"}, true},
		{[]string{"--x", "--help"}, true},
		{[]string{"-help"}, true},
		{[]string{"a", "--", "--help"}, false},
		{[]string{"help"}, false},
		{[]string{"---help"}, false},
	} {
		if got := WantsHelp(tc.args); got != tc.want {
			t.Errorf("WantsHelp(%q) = %v", tc.args, got)
		}
	}
}

func TestExit(t *testing.T) {
	tests := []struct {
		err          error
		code         int
		stdout, errs string
	}{
		{nil, 0, "", ""},
		{flag.ErrHelp, 0, "usage: t [--x]\n", ""},
		{Usagef("bad\nvalue %q\n", "v"), 2, "", "t sub: bad value \"v\" (t sub --help shows usage)\n"},
		{errors.New("disk full"), 1, "", "t sub: disk full\n"},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		code := Exit(tc.err, "t sub", "usage: t [--x]\n", &out, &errb)
		if code != tc.code || out.String() != tc.stdout || errb.String() != tc.errs {
			t.Errorf("%v: %d %q %q; want %d %q %q", tc.err, code, out.String(), errb.String(), tc.code, tc.stdout, tc.errs)
		}
	}
}

func TestDescribed(t *testing.T) {
	fs := Flags("t")
	fs.Int("n", 3, "how many")
	want := "usage: t [-n N]\n  -n int\n    \thow many (default 3)\n"
	if got := Described(fs, "usage: t [-n N]\n"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var ue *UsageError
	if err := ParseNone(fs, []string{"-n", "x"}); !errors.As(err, &ue) {
		t.Errorf("after Described, a bad value: %v", err)
	}
}

// FuzzParseMixed: any argument list gives flag.ErrHelp, a one-line UsageError, or the positional arguments in
// their order.
func FuzzParseMixed(f *testing.F) {
	for _, s := range []string{"mp\x00--prefix\x00x", "--json\x00a\x00--\x00-h", "-h", "--prefix", "a\x00--nope", "--json=maybe", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		fs := Flags("t")
		fs.String("prefix", "", "")
		fs.Bool("json", false, "")
		pos, err := ParseMixed(fs, args)
		var ue *UsageError
		switch {
		case errors.Is(err, flag.ErrHelp):
		case errors.As(err, &ue):
			if strings.ContainsAny(ue.Msg, "\r\n") {
				t.Fatalf("%q: usage error of more than one line: %q", args, ue.Msg)
			}
		case err != nil:
			t.Fatalf("%q: error of type %T: %v", args, err, err)
		default:
			i := 0
			for _, a := range args {
				if i < len(pos) && a == pos[i] {
					i++
				}
			}
			if i != len(pos) {
				t.Fatalf("%q: positional %q not in order", args, pos)
			}
		}
	})
}
