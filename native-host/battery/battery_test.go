package battery

import (
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		root string
		want State
	}{
		{"laptop-discharging", State{Present: true, Percent: 42}},
		{"laptop-charging", State{Present: true, Percent: 87, Charging: true}},
		// Weighted by energy_full: (100·20 + 0·60) / 80 = 25 %; one battery Full counts as charging.
		{"two-batteries", State{Present: true, Percent: 25, Charging: true}},
		{"desktop", State{}},
		{"none", State{}},
		{"no-such-dir", State{}},
		// A capacity outside 0 … 100 is not believed: no usable battery.
		{"broken", State{}},
	} {
		t.Run(tc.root, func(t *testing.T) {
			got, err := Read(filepath.Join("testdata", tc.root))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Read = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReadLiveSystem(t *testing.T) {
	// Whatever this machine has, reading it must not fail and must be in range.
	st, err := Read("")
	if err != nil {
		t.Fatal(err)
	}
	if st.Present && (st.Percent < 0 || st.Percent > 100) {
		t.Errorf("percent %v out of range", st.Percent)
	}
}

func FuzzParsePercent(f *testing.F) {
	for _, s := range []string{"42\n", "100", "0", "-1", "101", "", "4 2", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePercent(s)
		if err == nil && (p < 0 || p > 100) {
			t.Fatalf("ParsePercent(%q) = %v without error", s, p)
		}
	})
}
