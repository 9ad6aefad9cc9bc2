package mph2

import (
	"net/http"
	"testing"
	"time"
)

// FuzzContentRange: whatever a server sends, the parser never panics, accepts only consistent ranges, and what it
// accepts writes back to an equivalent header.
func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-499/1234", "bytes 500-999/*", "bytes */10", "BYTES 1-1/2", "bytes 0-0/0", "bytes 01-2/3", "bytes 9-8/7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cr, err := ParseContentRange(s)
		if err != nil {
			return
		}
		if cr.First < 0 || cr.Last < cr.First || (cr.Complete >= 0 && cr.Last >= cr.Complete) || cr.Complete >= maxObject {
			t.Fatalf("%q parsed to inconsistent %+v", s, cr)
		}
		again, err := ParseContentRange(cr.String())
		if err != nil || again != cr {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, cr, cr.String(), again, err)
		}
	})
}

// FuzzSpans: any sequence of additions keeps the set valid and its total equal to the bytes added minus the
// duplicates reported.
func FuzzSpans(f *testing.F) {
	f.Add([]byte{0, 10, 5, 20, 30, 40, 15, 35})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var s Spans
		var added int64
		for i := 0; i+1 < len(ops); i += 2 {
			a, b := int64(ops[i]), int64(ops[i+1])
			if b < a {
				a, b = b, a
			}
			dup := s.Add(a, b)
			added += b - a - dup
			if !s.Valid(256) {
				t.Fatalf("invalid after Add(%d, %d): %v", a, b, s)
			}
		}
		if s.Total() != added {
			t.Fatalf("total %d, added %d", s.Total(), added)
		}
		var miss int64
		for _, m := range s.Missing(256) {
			miss += m.Len()
		}
		if miss+s.Total() != 256 {
			t.Fatalf("missing %d + total %d != 256", miss, s.Total())
		}
	})
}

// FuzzDigest: the digest headers of any response never panic the reader, and a digest it accepts has the length
// of its algorithm.
func FuzzDigest(f *testing.F) {
	f.Add("sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:", "SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "1B2M2Y8AsgTpgAmY7PhCfg==")
	f.Fuzz(func(t *testing.T, repr, digest, md5 string) {
		h := http.Header{}
		for k, v := range map[string]string{"Repr-Digest": repr, "Digest": digest, "Content-Md5": md5} {
			if v != "" {
				h.Set(k, v)
			}
		}
		d, err := digestOf(h, true)
		if err == nil && d != nil && len(d.want) != newHash(d.alg).Size() {
			t.Fatalf("%s digest of %d bytes", d.alg, len(d.want))
		}
	})
}

// FuzzStartSplit: whatever the estimates, the known-size start's split lies in the object, leaves the primary at
// least MinChunk, gives the secondary either nothing or at least MinChunk, and never more than its cap.
func FuzzStartSplit(f *testing.F) {
	f.Add(int64(8_000_000), 880_000.0, 1_148_125.0, int64(50_000_000), int64(70_000_000), int64(-1))
	f.Add(int64(131072), 0.0, 0.0, int64(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, size int64, bwP, bwS float64, rttP, rttS, cap int64) {
		if size <= 0 || size >= maxObject {
			return
		}
		p := PathView{BW: bwP, RTT: time.Duration(rttP), Cap: -1}
		s := PathView{BW: bwS, RTT: time.Duration(rttS), Cap: cap}
		split := StartSplit(size, p, s, MinChunk)
		if split < min(MinChunk, size) || split > size {
			t.Fatalf("split %d of %d", split, size)
		}
		if share := size - split; share > 0 && (share < MinChunk || (cap >= 0 && share > cap)) {
			t.Fatalf("secondary share %d of %d (cap %d)", share, size, cap)
		}
	})
}
