package linkem

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseTrace(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantLen int
		period  int64
		wantErr string
	}{
		{name: "one per ms", in: "1\n2\n3\n4\n", wantLen: 4, period: 4},
		{name: "repeats and spaces", in: " 0\n0\n\n5 \n5\n10\n", wantLen: 5, period: 10},
		{name: "no final newline", in: "3\n7", wantLen: 2, period: 7},
		{name: "empty", in: "", wantErr: "no delivery opportunities"},
		{name: "blank only", in: "\n \n", wantErr: "no delivery opportunities"},
		{name: "all zero", in: "0\n0\n", wantErr: "last timestamp must be > 0"},
		{name: "decreasing", in: "1\n5\n4\n", wantErr: "line 3: timestamp 4 is before the previous one (5)"},
		{name: "negative", in: "-1\n", wantErr: "line 1"},
		{name: "float", in: "1\n2.5\n", wantErr: `line 2: "2.5" is not a timestamp`},
		{name: "word", in: "abc\n", wantErr: "line 1"},
		{name: "huge", in: "99999999999999999999\n", wantErr: "line 1"},
		{name: "long line", in: strings.Repeat(" ", 300) + "1\n", wantErr: "line too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := ParseTrace(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseTrace(%q) error = %v, want containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTrace(%q): %v", tt.in, err)
			}
			if tr.Len() != tt.wantLen || tr.PeriodMs() != tt.period {
				t.Errorf("got len %d period %d, want %d and %d", tr.Len(), tr.PeriodMs(), tt.wantLen, tt.period)
			}
		})
	}
}

func TestTraceMeanRate(t *testing.T) {
	// One 1500-byte opportunity per ms is 12 Mbit/s (Mahimahi's 12 Mbps trace).
	var b strings.Builder
	for i := 1; i <= 1000; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	tr, err := ParseTrace(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.MeanRateBps(); got != 12e6 {
		t.Errorf("MeanRateBps = %v, want 12e6", got)
	}
}

func TestTraceOpportunityIndex(t *testing.T) {
	tr, err := ParseTrace(strings.NewReader("2\n2\n5\n10\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		relMs int64
		want  int64 // index
		atMs  int64
	}{
		{0, 0, 2}, {2, 0, 2}, {3, 2, 5}, {5, 2, 5}, {6, 3, 10}, {10, 3, 10}, // the last entry is the loop boundary
		{11, 4, 12}, // next loop: entry 0 at 10+2
		{13, 6, 15},
		{25, 10, 25}, // 2*10+5: loop 2, entry 2
	}
	for _, tt := range tests {
		j := tr.firstAtOrAfter(tt.relMs * 1e6)
		if j != tt.want || tr.at(j) != tt.atMs*1e6 {
			t.Errorf("firstAtOrAfter(%d ms) = %d at %d ns, want %d at %d ms", tt.relMs, j, tr.at(j), tt.want, tt.atMs)
		}
	}
}

func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{"1\n2\n3\n", "0\n0\n7\n", "", "5\n4\n", "x", " 12 \n\n13"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := ParseTrace(strings.NewReader(in))
		if err != nil {
			return
		}
		if tr.Len() == 0 || tr.PeriodMs() <= 0 {
			t.Fatalf("accepted trace with len %d period %d", tr.Len(), tr.PeriodMs())
		}
		for i := 1; i < tr.Len(); i++ {
			if tr.ms[i] < tr.ms[i-1] {
				t.Fatalf("accepted decreasing trace %v", tr.ms)
			}
		}
		// Opportunity search must land at or after the asked time.
		for _, rel := range []int64{0, 1, tr.PeriodMs() * 1e6, 3*tr.PeriodMs()*1e6 + 1} {
			j := tr.firstAtOrAfter(rel)
			if tr.at(j) < rel {
				t.Fatalf("firstAtOrAfter(%d) = %d at %d, before the asked time", rel, j, tr.at(j))
			}
			if j > 0 && tr.at(j-1) >= rel {
				t.Fatalf("firstAtOrAfter(%d) = %d skipped opportunity %d at %d", rel, j, j-1, tr.at(j-1))
			}
		}
	})
}
