package energy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

func TestParseTrace(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []radio.Packet
		err  string
	}{
		{"header and records", "t_unix_ns,dir,bytes\n10,d,1500\n20,u,40\n", []radio.Packet{{T: 10, Up: false, Bytes: 1500}, {T: 20, Up: true, Bytes: 40}}, ""},
		{"no header, CRLF, blank lines", "\n10,d,1500\r\n\r\n5,u,52\r\n", []radio.Packet{{T: 5, Up: true, Bytes: 52}, {T: 10, Up: false, Bytes: 1500}}, ""},
		{"stable order for equal times", "7,u,1\n7,d,2\n", []radio.Packet{{T: 7, Up: true, Bytes: 1}, {T: 7, Up: false, Bytes: 2}}, ""},
		{"empty", "", nil, ""},
		{"header only", TraceHeader + "\n", nil, ""},
		{"header later", "1,d,1\n" + TraceHeader + "\n", nil, "line 2"},
		{"bad dir", "1,x,1\n", nil, `dir "x"`},
		{"zero bytes", "1,d,0\n", nil, "bytes"},
		{"huge bytes", "1,d,70000\n", nil, "bytes"},
		{"negative time", "-1,d,1\n", nil, "t_unix_ns"},
		{"extra field", "1,d,1,9\n", nil, "3 comma-separated"},
		{"spaces", "1, d,1\n", nil, "dir"},
		{"long line", strings.Repeat("9", 300) + ",d,1\n", nil, "longer than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseTrace(strings.NewReader(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, %v; want error containing %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestReadTraceFile(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadTraceFile(filepath.Join(dir, "wwan0.csv"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v, want os.ErrNotExist", err)
	}
	p := filepath.Join(dir, "wlan0.csv")
	if err := os.WriteFile(p, []byte("1,d,q\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTraceFile(p); err == nil || !strings.Contains(err.Error(), "wlan0.csv") {
		t.Fatalf("bad file: %v, want an error naming the file", err)
	}
}

func FuzzParseTrace(f *testing.F) {
	f.Add("t_unix_ns,dir,bytes\n10,d,1500\n20,u,40\n")
	f.Add("5,u,1\r\n\r\n3,d,65536\n")
	f.Add("1,d,1,1\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		pkts, err := ParseTrace(strings.NewReader(in))
		if err != nil {
			return
		}
		for i, p := range pkts {
			if p.T <= 0 || p.Bytes <= 0 || p.Bytes > MaxPacketBytes {
				t.Fatalf("accepted invalid packet %+v", p)
			}
			if i > 0 && p.T < pkts[i-1].T {
				t.Fatalf("not sorted at %d", i)
			}
		}
		var buf bytes.Buffer
		if err := WriteTrace(&buf, pkts); err != nil {
			t.Fatal(err)
		}
		again, err := ParseTrace(&buf)
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		if len(again) != len(pkts) || (len(pkts) > 0 && !reflect.DeepEqual(again, pkts)) {
			t.Fatalf("round trip changed %+v into %+v", pkts, again)
		}
	})
}
