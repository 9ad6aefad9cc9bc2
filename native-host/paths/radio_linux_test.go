package paths

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/radio"
	"github.com/mpsurf/mpsurf/native-host/rrc"
)

// TestRadioMarkAcrossSamplers: one sampler's RRC mark, handed to the next (ResumeRadio), applies at the next one's
// first sample of the cellular interface and only then: the LTE radio a page left 2 s ago is still in its tail for
// the next host, where a host without the mark would start it idle.
func TestRadioMarkAcrossSamplers(t *testing.T) {
	lte, err := radio.Load(filepath.Join("../../policy-models", "power-lte.json"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	newSampler := func() *Sampler {
		m, err := rrc.New(lte, "wwan0", t0)
		if err != nil {
			t.Fatal(err)
		}
		return &Sampler{cellIf: "wwan0", cell: m}
	}
	first := newSampler()
	if _, _, ok := first.RadioMark(); ok {
		t.Error("a mark before any sample")
	}
	c := rrc.Counters{}
	for at := time.Duration(0); at <= time.Second; at += 50 * time.Millisecond {
		c.RxPackets, c.TxPackets = c.RxPackets+20, c.TxPackets+10
		first.observeCell(t0.Add(at), c)
	}
	iface, mark, ok := first.RadioMark()
	if !ok || iface != "wwan0" {
		t.Fatalf("mark %v %q", ok, iface)
	}

	later := t0.Add(3 * time.Second)
	cases := []struct {
		name   string
		resume bool
		want   string
	}{
		{"with the mark", true, "long_drx"},
		{"without it", false, "idle"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := newSampler()
			if tc.resume {
				next.ResumeRadio("wwan0", mark)
			}
			next.observeCell(later, c)
			if s := next.cell.State(later).State; s != tc.want {
				t.Errorf("state %s, want %s", s, tc.want)
			}
			if len(next.marks) != 0 {
				t.Errorf("the mark stays after the first sample: %v", next.marks)
			}
		})
	}
}
