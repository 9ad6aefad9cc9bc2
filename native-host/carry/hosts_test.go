package carry

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseHosts(t *testing.T) {
	a := netip.MustParseAddr
	tests := []struct {
		in   string
		want map[string][]netip.Addr
		err  string
	}{
		{"", map[string][]netip.Addr{}, ""},
		{"origin.test=10.200.3.2", map[string][]netip.Addr{"origin.test": {a("10.200.3.2")}}, ""},
		{" Origin.Test. = 10.200.3.2 ,sp.origin.test=10.200.3.3|2001:db8::1", map[string][]netip.Addr{
			"origin.test": {a("10.200.3.2")}, "sp.origin.test": {a("10.200.3.3"), a("2001:db8::1")}}, ""},
		{"x=::ffff:10.0.0.1,x=10.0.0.2", map[string][]netip.Addr{"x": {a("10.0.0.1"), a("10.0.0.2")}}, ""},
		{"origin.test", nil, "not name=address"},
		{"=10.0.0.1", nil, "not name=address"},
		{"a/b=10.0.0.1", nil, "not name=address"},
		{"origin.test=example.com", nil, "not an IP address"},
		{"origin.test=fe80::1%eth0", nil, "not an IP address"},
	}
	for _, tt := range tests {
		got, err := ParseHosts(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseHosts(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Errorf("ParseHosts(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			continue
		}
		for k, v := range tt.want {
			if !slices.Equal(got[k], v) {
				t.Errorf("ParseHosts(%q)[%s] = %v, want %v", tt.in, k, got[k], v)
			}
		}
	}
}

func FuzzParseHosts(f *testing.F) {
	for _, s := range []string{"", "a=1.2.3.4", "a=1.2.3.4|::1,b=5.6.7.8", "=", ",,", "a==b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseHosts(s)
		if err != nil {
			return
		}
		for name, addrs := range m {
			if name == "" || len(addrs) == 0 {
				t.Fatalf("ParseHosts(%q) gave an empty entry %q=%v", s, name, addrs)
			}
			for _, a := range addrs {
				if !a.IsValid() || a.Is4In6() {
					t.Fatalf("ParseHosts(%q) gave address %v", s, a)
				}
			}
		}
	})
}
