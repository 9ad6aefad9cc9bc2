package mph2

import (
	"reflect"
	"testing"
)

func TestRangeHeader(t *testing.T) {
	for _, c := range []struct {
		start, end int64
		want       string
	}{{0, -1, "bytes=0-"}, {0, 1, "bytes=0-0"}, {500, 1000, "bytes=500-999"}, {1 << 40, -1, "bytes=1099511627776-"}} {
		if got := RangeHeader(c.start, c.end); got != c.want {
			t.Errorf("RangeHeader(%d, %d) = %q, want %q", c.start, c.end, got, c.want)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ContentRange
		ok   bool
	}{
		{"bytes 0-499/1234", ContentRange{0, 499, 1234}, true},
		{"bytes 500-999/*", ContentRange{500, 999, -1}, true},
		{"BYTES 0-0/1", ContentRange{0, 0, 1}, true},
		{"bytes  7-7/8", ContentRange{7, 7, 8}, true},
		{"bytes */1234", ContentRange{}, false},
		{"bytes 5-4/10", ContentRange{}, false},
		{"bytes 0-10/10", ContentRange{}, false},
		{"bytes -1-5/10", ContentRange{}, false},
		{"bytes +1-5/10", ContentRange{}, false},
		{"bytes 1 -5/10", ContentRange{}, false},
		{"bytes 0-5", ContentRange{}, false},
		{"items 0-5/10", ContentRange{}, false},
		{"bytes 0-9007199254740992/9007199254740993", ContentRange{}, false},
		{"bytes 0-1/99999999999999999", ContentRange{}, false},
		{"", ContentRange{}, false},
	} {
		got, err := ParseContentRange(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseContentRange(%q) = %+v, %v; want %+v ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestSpans(t *testing.T) {
	var s Spans
	steps := []struct {
		a, b, dup int64
		want      Spans
	}{
		{10, 20, 0, Spans{{10, 20}}},
		{30, 40, 0, Spans{{10, 20}, {30, 40}}},
		{20, 30, 0, Spans{{10, 40}}},         // touching both: merged
		{0, 5, 0, Spans{{0, 5}, {10, 40}}},   // before
		{35, 50, 5, Spans{{0, 5}, {10, 50}}}, // overlapping: 5 duplicate bytes
		{3, 12, 4, Spans{{0, 50}}},
		{7, 7, 0, Spans{{0, 50}}}, // empty
	}
	for i, st := range steps {
		if dup := s.Add(st.a, st.b); dup != st.dup || !reflect.DeepEqual(s, st.want) {
			t.Fatalf("step %d: Add(%d, %d) = %d, %v; want %d, %v", i, st.a, st.b, dup, s, st.dup, st.want)
		}
	}
	if s.Total() != 50 {
		t.Errorf("Total %d", s.Total())
	}
	gaps := Spans{{10, 20}, {30, 40}}
	if got := gaps.Missing(50); !reflect.DeepEqual(got, []Span{{0, 10}, {20, 30}, {40, 50}}) {
		t.Errorf("Missing = %v", got)
	}
	if got := (Spans{{0, 50}}).Missing(50); len(got) != 0 {
		t.Errorf("Missing of a whole object = %v", got)
	}
	for _, c := range []struct {
		s  Spans
		ok bool
	}{
		{Spans{}, true}, {Spans{{0, 1}, {2, 3}}, true}, {Spans{{0, 2}, {2, 3}}, false}, {Spans{{2, 3}, {0, 1}}, false},
		{Spans{{-1, 2}}, false}, {Spans{{0, 11}}, false}, {Spans{{3, 3}}, false},
	} {
		if c.s.Valid(10) != c.ok {
			t.Errorf("%v.Valid(10) = %v", c.s, !c.ok)
		}
	}
}
