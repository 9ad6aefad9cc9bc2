package store

import "testing"

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"2026-11-01", "2026-11-01T10:00:00Z", "1793491200000", "", "-1", "2026-02-30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseSince(s)
		if err == nil && (ms < 0 || ms > maxSinceMS) {
			t.Fatalf("ParseSince(%q) = %d out of range", s, ms)
		}
	})
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(Cursor{Format: FormatCSV, SinceMS: 1, After: 2, Upto: 3}.Encode())
	f.Add(Cursor{Format: FormatJSONL}.Encode())
	f.Add("c1.")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeCursor(s)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same text: one cursor, one spelling.
		if again := c.Encode(); again != s {
			t.Fatalf("DecodeCursor(%q) = %+v, which encodes as %q", s, c, again)
		}
	})
}
