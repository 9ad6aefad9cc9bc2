package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"testing"
)

// FuzzReadFrame feeds arbitrary byte streams to a Reader: it must never panic, never return more than the cap, and
// whatever it reads must encode back to the bytes it came from.
func FuzzReadFrame(f *testing.F) {
	for _, v := range loadFrames(f) {
		raw, _ := hex.DecodeString(v.Hex)
		f.Add(raw)
	}
	for _, v := range loadBadInput(f) {
		raw, _ := hex.DecodeString(v.InputHex)
		f.Add(raw)
	}
	const max = 1 << 10 // a small cap so that the fuzzer reaches it
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in), max)
		consumed := 0
		for {
			p, err := r.Read()
			switch {
			case err == nil:
				if len(p) == 0 || len(p) > max {
					t.Fatalf("payload of %d bytes, cap %d", len(p), max)
				}
				frame := Append(nil, p)
				if !bytes.Equal(frame, in[consumed:consumed+len(frame)]) {
					t.Fatal("frame does not re-encode to its input bytes")
				}
				consumed += len(frame)
				continue
			case errors.Is(err, ErrEmpty):
				consumed += HeaderSize
				continue
			case err == io.EOF:
				if consumed != len(in) {
					t.Fatalf("EOF after %d of %d bytes", consumed, len(in))
				}
			case errors.Is(err, ErrTruncated):
				if len(in)-consumed >= HeaderSize &&
					int(binary.NativeEndian.Uint32(in[consumed:])) <= len(in)-consumed-HeaderSize {
					t.Fatal("truncated, but the whole frame was there")
				}
			case errors.Is(err, ErrTooLarge):
				if binary.NativeEndian.Uint32(in[consumed:]) <= max {
					t.Fatal("too large, but the length is within the cap")
				}
			default:
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
	})
}
