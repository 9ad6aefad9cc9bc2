package store

import (
	"encoding/json"
	"slices"
	"testing"
)

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

// What the log keeps of any request body is a JSON object of the known fields only (or null), each a scalar: no
// path, no field it does not name, whatever the body held.
func FuzzKeptRequest(f *testing.F) {
	for _, s := range []string{`{"origin":"https://a.test","tab":1,"nav":"1-1","path":"/x/secret"}`, `null`, `[1,2]`, `{"nav":{"path":"/x"}}`,
		`{"origin":"https://a.test","origin":"/dup"}`, `"path"`, `{"kind":"download","size":12,"protocol":"h2","url":"https://a.test/f"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := keptRequest(json.RawMessage(s))
		if string(out) == "null" {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("keptRequest(%q) = %q: not an object: %v", s, out, err)
		}
		for k, v := range m {
			if !slices.Contains(requestKeys, k) {
				t.Fatalf("keptRequest(%q) kept %q", s, k)
			}
			if len(v) == 0 || v[0] == '{' || v[0] == '[' {
				t.Fatalf("keptRequest(%q) kept %s = %s, not a scalar", s, k, v)
			}
		}
	})
}
