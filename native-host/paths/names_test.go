package paths

import (
	"reflect"
	"testing"
)

func TestParseNames(t *testing.T) {
	cases := []struct {
		in   string
		want map[string]string
		err  bool
	}{
		{"", map[string]string{}, false},
		{"wlan0=wifi,wwan0=cellular", map[string]string{"wlan0": WiFi, "wwan0": Cellular}, false},
		{" eth0=ethernet , tun0=other ", map[string]string{"eth0": Ethernet, "tun0": Other}, false},
		{"wlan0", nil, true},
		{"wlan0=radio", nil, true},
		{"=wifi", nil, true},
		{"a=wifi,a=wifi", nil, true},
		{"averyveryverylongname=wifi", nil, true},
	}
	for _, c := range cases {
		got, err := ParseNames(c.in)
		if (err != nil) != c.err || (!c.err && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("ParseNames(%q) = %v, %v", c.in, got, err)
		}
		if !c.err && FormatNames(got) != FormatNames(c.want) {
			t.Errorf("round trip of %q", c.in)
		}
	}
}

func FuzzParseNames(f *testing.F) {
	f.Add("wlan0=wifi,wwan0=cellular")
	f.Add("=,=")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseNames(s)
		if err != nil {
			return
		}
		again, err := ParseNames(FormatNames(m))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("%q: round trip gave %v, %v", s, again, err)
		}
	})
}
