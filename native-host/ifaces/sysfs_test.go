package ifaces

import (
	"reflect"
	"strconv"
	"testing"
)

func TestDiscover(t *testing.T) {
	cases := []struct {
		root  string
		names map[string]string
		want  []Iface
	}{
		{"testdata/host", nil, []Iface{
			{"enp3s0", Ethernet, false}, // admin up, no carrier
			{"tun0", Other, true},
			{"veth0", Other, true},
			{"wlan1", WiFi, true},       // phy80211
			{"wlp2s0", WiFi, true},      // wireless/ and DEVTYPE=wlan
			{"wwan0", Cellular, true},   // DEVTYPE=wwan
			{"wwp0s20", Cellular, true}, // qmi_wwan driver
		}},
		{"testdata/host", map[string]string{"tun0": Cellular, "wlp2s0": Other}, []Iface{
			{"enp3s0", Ethernet, false}, {"tun0", Cellular, true}, {"veth0", Other, true}, {"wlan1", WiFi, true},
			{"wlp2s0", Other, true}, {"wwan0", Cellular, true}, {"wwp0s20", Cellular, true},
		}},
		// The testbed's links are TUN devices: without the override they are "other".
		{"testdata/testbed", nil, []Iface{{"wlan0", Other, true}, {"wwan0", Other, true}}},
		{"testdata/testbed", map[string]string{"wlan0": WiFi, "wwan0": Cellular}, []Iface{{"wlan0", WiFi, true}, {"wwan0", Cellular, true}}},
	}
	for _, c := range cases {
		got, err := Discover(c.root, c.names)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %v:\n got %v\nwant %v", c.root, c.names, got, c.want)
		}
	}
	if _, err := Discover("testdata/nonexistent", nil); err == nil {
		t.Error("a missing sysfs gave no error")
	}
}

func TestParseUint(t *testing.T) {
	for in, want := range map[string]uint64{"0x1003\n": 0x1003, "772\n": 772, "0": 0} {
		if got, err := ParseUint(in); err != nil || got != want {
			t.Errorf("ParseUint(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0x", "-1", "abc", "0xzz"} {
		if _, err := ParseUint(in); err == nil {
			t.Errorf("ParseUint(%q) gave no error", in)
		}
	}
}

func FuzzParseUevent(f *testing.F) {
	f.Add([]byte("DEVTYPE=wwan\nINTERFACE=wwan0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for k := range ParseUevent(b) {
			if k == "" {
				t.Fatal("empty key")
			}
		}
	})
}

func FuzzParseUint(f *testing.F) {
	f.Add("0x1003")
	f.Add("772")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseUint(s)
		if err != nil {
			return
		}
		if again, err := ParseUint(strconv.FormatUint(v, 10)); err != nil || again != v {
			t.Fatalf("%q -> %d -> %d, %v", s, v, again, err)
		}
	})
}
