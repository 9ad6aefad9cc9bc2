package corpus

import (
	"encoding/binary"
	"hash/fnv"
	"math"
)

// rng is splitmix64: tiny, fast and fully specified, so a seed gives the same corpus with
// any Go release (math/rand/v2 only promises that for its generators' raw output).
type rng struct{ s uint64 }

func newRNG(seed uint64, parts ...string) *rng {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return &rng{s: h.Sum64()}
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float returns a uniform value in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// exp returns an exponential draw with mean 1.
func (r *rng) exp() float64 { return -math.Log(1 - r.float()) }

func (r *rng) bytes(b []byte) {
	for i := 0; i < len(b); i += 8 {
		v := r.next()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}

// fillAlphabet holds 64 characters that can never close an HTML comment ("-->") or a
// JavaScript/CSS comment ("*/"), so padding stays inside its comment.
const fillAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

func (r *rng) text(b []byte) {
	for i := 0; i < len(b); i += 10 {
		v := r.next()
		for j := 0; j < 10 && i+j < len(b); j++ {
			b[i+j] = fillAlphabet[v&63]
			v >>= 6
		}
	}
}
