package mph2

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Span is the half-open byte interval [Start, End) of the object.
type Span struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Len is the span's length in bytes.
func (s Span) Len() int64 { return s.End - s.Start }

// RangeHeader is the Range request header for [start, end) (RFC 9110 §14.1.2; end inclusive on the wire); end < 0
// asks for everything from start on.
func RangeHeader(start, end int64) string {
	if end < 0 {
		return "bytes=" + strconv.FormatInt(start, 10) + "-"
	}
	return "bytes=" + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(end-1, 10)
}

// ContentRange is a parsed Content-Range response header of a 206 (RFC 9110 §14.4): the bytes [First, Last] of a
// representation of Complete bytes, Complete = -1 when the server says "*".
type ContentRange struct {
	First, Last, Complete int64
}

// maxObject bounds the sizes the parser accepts (2^53, so that they survive a trip through JSON numbers).
const maxObject = 1 << 53

// ParseContentRange reads "bytes FIRST-LAST/COMPLETE" (COMPLETE may be "*"). The unsatisfied form "bytes */N"
// that a 416 carries is not a range and is an error, as are whitespace inside numbers, signs, LAST < FIRST,
// LAST ≥ COMPLETE and numbers of 2^53 or more.
func ParseContentRange(s string) (ContentRange, error) {
	unit, rest, ok := strings.Cut(s, " ")
	if !ok || !strings.EqualFold(unit, "bytes") {
		return ContentRange{}, fmt.Errorf("content-range %q: not a bytes range", trunc(s))
	}
	rest = strings.TrimLeft(rest, " ")
	rng, complete, ok := strings.Cut(rest, "/")
	if !ok {
		return ContentRange{}, fmt.Errorf("content-range %q: no complete length", trunc(s))
	}
	first, last, ok := strings.Cut(rng, "-")
	if !ok {
		return ContentRange{}, fmt.Errorf("content-range %q: not FIRST-LAST", trunc(s))
	}
	var cr ContentRange
	var err error
	if cr.First, err = parseLen(first); err != nil {
		return ContentRange{}, fmt.Errorf("content-range %q: first: %w", trunc(s), err)
	}
	if cr.Last, err = parseLen(last); err != nil {
		return ContentRange{}, fmt.Errorf("content-range %q: last: %w", trunc(s), err)
	}
	if cr.Last < cr.First {
		return ContentRange{}, fmt.Errorf("content-range %q: last before first", trunc(s))
	}
	if complete == "*" {
		cr.Complete = -1
		return cr, nil
	}
	if cr.Complete, err = parseLen(complete); err != nil {
		return ContentRange{}, fmt.Errorf("content-range %q: complete length: %w", trunc(s), err)
	}
	if cr.Last >= cr.Complete {
		return ContentRange{}, fmt.Errorf("content-range %q: last byte beyond the complete length", trunc(s))
	}
	return cr, nil
}

// String writes the header back in canonical form.
func (c ContentRange) String() string {
	total := "*"
	if c.Complete >= 0 {
		total = strconv.FormatInt(c.Complete, 10)
	}
	return "bytes " + strconv.FormatInt(c.First, 10) + "-" + strconv.FormatInt(c.Last, 10) + "/" + total
}

// parseLen reads a non-negative decimal of at most 16 digits (below 2^53), digits only.
func parseLen(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	if len(s) > 16 {
		return 0, errors.New("too long")
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a digit", c)
		}
		n = n*10 + int64(c-'0')
	}
	if n >= maxObject {
		return 0, errors.New("too large")
	}
	return n, nil
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Spans is a set of byte intervals kept sorted and merged: the parts of the object that are on disk.
type Spans []Span

// Add puts [start, end) in the set and returns how many of its bytes were there already.
func (s *Spans) Add(start, end int64) (dup int64) {
	if end <= start {
		return 0
	}
	dup = s.Overlap(start, end)
	out := make(Spans, 0, len(*s)+1)
	cur := Span{start, end}
	placed := false
	for _, x := range *s {
		switch {
		case x.End < cur.Start:
			out = append(out, x)
		case cur.End < x.Start:
			if !placed {
				out = append(out, cur)
				placed = true
			}
			out = append(out, x)
		default: // touching or overlapping: merge into cur
			cur.Start = min(cur.Start, x.Start)
			cur.End = max(cur.End, x.End)
		}
	}
	if !placed {
		out = append(out, cur)
	}
	*s = out
	return dup
}

// Overlap is the number of bytes of [start, end) already in the set.
func (s Spans) Overlap(start, end int64) int64 {
	var n int64
	for _, x := range s {
		a, b := max(x.Start, start), min(x.End, end)
		if b > a {
			n += b - a
		}
	}
	return n
}

// Total is the number of bytes in the set.
func (s Spans) Total() int64 {
	var n int64
	for _, x := range s {
		n += x.Len()
	}
	return n
}

// Missing lists the intervals of [0, size) not in the set, in order.
func (s Spans) Missing(size int64) []Span {
	var out []Span
	pos := int64(0)
	for _, x := range s {
		if x.Start >= size {
			break
		}
		if x.Start > pos {
			out = append(out, Span{pos, x.Start})
		}
		pos = max(pos, x.End)
	}
	if pos < size {
		out = append(out, Span{pos, size})
	}
	return out
}

// Valid says whether the set is sorted, merged, non-empty per span and inside [0, size): what a sidecar read from
// disk must be before it is trusted.
func (s Spans) Valid(size int64) bool {
	if !sort.SliceIsSorted(s, func(i, j int) bool { return s[i].Start < s[j].Start }) {
		return false
	}
	for i, x := range s {
		if x.Start < 0 || x.End <= x.Start || x.End > size {
			return false
		}
		if i > 0 && s[i-1].End >= x.Start {
			return false
		}
	}
	return true
}
