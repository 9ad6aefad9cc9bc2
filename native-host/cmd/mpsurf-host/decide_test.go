package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecideCmd(t *testing.T) {
	dir := t.TempDir()
	paths := filepath.Join(dir, "paths.json")
	os.WriteFile(paths, []byte(`[{"name":"wlan0","kind":"wifi","up":true,"rtt_ms":50,"down_bps":7040000,"up_bps":2020000,"loss":0},
 {"name":"wwan0","kind":"cellular","up":true,"rtt_ms":70,"down_bps":9185000,"up_bps":2286000,"loss":0}]`), 0o600)
	tests := []struct {
		args []string
		mp   bool
		has  string
	}{
		{[]string{"--origin", "https://a.example", "--proto", "h2", "--size", "2000000", "--paths", paths, "--rrc", "idle"}, true, "multipath"},
		{[]string{"--origin", "https://a.example", "--proto", "h2", "--size", "50000,52000", "--paths", paths, "--rrc", "idle"}, false, "single path"},
		{[]string{"--origin", "https://a.example", "--proto", "h3", "--size", "2000000", "--paths", paths}, false, "QUIC"},
		// A 610 kB page: not worth a promotion and a whole tail, worth it with the radio as likely in long DRX.
		{[]string{"--origin", "https://a.example", "--proto", "h2", "--size", "609600,609600", "--paths", paths, "--rrc", "idle", "--rrc-since-ms", "8000"}, false, "single path"},
		{[]string{"--origin", "https://a.example", "--proto", "h2", "--size", "609600,609600", "--paths", paths, "--rrc-spread", "idle:0.5,long_drx:0.5"}, true, "multipath"},
		{[]string{"--origin", "https://a.example"}, false, "priors"},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		if code := run(append([]string{"decide", "--json"}, tc.args...), nil, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errb.String())
		}
		var body struct {
			Multipath bool   `json:"multipath"`
			Reason    string `json:"reason"`
			Terms     []any  `json:"terms"`
		}
		if err := json.Unmarshal(out.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if body.Multipath != tc.mp || !strings.Contains(body.Reason, tc.has) || len(body.Terms) == 0 {
			t.Errorf("%v: %+v", tc.args, body)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"decide", "--origin", "ftp://x"}, nil, &out, &errb); code != exitUsage {
		t.Errorf("bad origin: exit %d", code)
	}
	if code := run([]string{"decide", "--origin", "https://x", "--paths", filepath.Join(dir, "none")}, nil, &out, &errb); code != exitUsage {
		t.Errorf("missing paths file: exit %d", code)
	}
	for _, bad := range []string{"idle", "idle:x", ":0.5"} {
		errb.Reset()
		if code := run([]string{"decide", "--origin", "https://x", "--rrc-spread", bad}, nil, &out, &errb); code != exitUsage {
			t.Errorf("--rrc-spread %s: exit %d", bad, code)
		}
	}
	errb.Reset()
	if code := run([]string{"decide", "--origin", "https://x", "--rrc-spread", "idle:0.5,long_drx:0.2"}, nil, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "rrc.spread.p") {
		t.Errorf("a spread not summing to 1: exit %d: %s", code, errb.String())
	}
	// Numbers no link has are refused with the field named, not decided from: a bad value, exit 2 like a bad flag.
	absurd := filepath.Join(dir, "absurd.json")
	os.WriteFile(absurd, []byte(`[{"name":"wlan0","kind":"wifi","up":true,"rtt_ms":50,"down_bps":1e12,"loss":5}]`), 0o600)
	errb.Reset()
	if code := run([]string{"decide", "--origin", "https://x", "--paths", absurd}, nil, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "primary.down_bps") {
		t.Errorf("absurd paths: exit %d: %s", code, errb.String())
	}
}
