package wire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

type frameVector struct {
	Name string `json:"name"`
	JSON string `json:"json"`
	Hex  string `json:"hex"`
}

func loadFrames(tb testing.TB) []frameVector {
	tb.Helper()
	data, err := os.ReadFile("../vectors/frames.json")
	if err != nil {
		tb.Fatal(err)
	}
	var file struct {
		Frames []frameVector `json:"frames"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		tb.Fatal(err)
	}
	if len(file.Frames) == 0 {
		tb.Fatal("frames.json has no frames")
	}
	return file.Frames
}

type badInputVector struct {
	Name     string `json:"name"`
	InputHex string `json:"input_hex"`
}

func loadBadInput(tb testing.TB) []badInputVector {
	tb.Helper()
	data, err := os.ReadFile("../vectors/bad_input.json")
	if err != nil {
		tb.Fatal(err)
	}
	var file struct {
		Cases []badInputVector `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		tb.Fatal(err)
	}
	return file.Cases
}

func TestVectorsEncode(t *testing.T) {
	for _, v := range loadFrames(t) {
		t.Run(v.Name, func(t *testing.T) {
			var out bytes.Buffer
			if err := NewWriter(&out, MaxOut).Write([]byte(v.JSON)); err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(out.Bytes()); got != v.Hex {
				t.Errorf("frame\n got %s\nwant %s", got, v.Hex)
			}
		})
	}
}

func TestVectorsDecode(t *testing.T) {
	for _, v := range loadFrames(t) {
		t.Run(v.Name, func(t *testing.T) {
			raw, err := hex.DecodeString(v.Hex)
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(bytes.NewReader(raw), MaxIn)
			got, err := r.Read()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != v.JSON {
				t.Errorf("payload\n got %s\nwant %s", got, v.JSON)
			}
			if _, err := r.Read(); err != io.EOF {
				t.Errorf("after the frame: got %v, want io.EOF", err)
			}
		})
	}
}

func TestRead(t *testing.T) {
	tests := []struct {
		name string
		in   string // hex
		max  int
		want []string // payloads read before err
		err  error
	}{
		{"empty stream", "", MaxIn, nil, io.EOF},
		{"one frame", "020000007b7d", MaxIn, []string{"{}"}, io.EOF},
		{"two frames", "020000007b7d030000005b315d", MaxIn, []string{"{}", "[1]"}, io.EOF},
		{"zero length", "00000000", MaxIn, nil, ErrEmpty},
		{"one byte of length", "05", MaxIn, nil, ErrTruncated},
		{"three bytes of length", "050000", MaxIn, nil, ErrTruncated},
		{"payload cut short", "0a0000007b2276223a31", MaxIn, nil, ErrTruncated},
		{"length only", "01000000", MaxIn, nil, ErrTruncated},
		{"exactly the cap", "02000000" + "7b7d", 2, []string{"{}"}, io.EOF},
		{"one above the cap", "03000000" + "5b315d", 2, nil, ErrTooLarge},
		{"64 KiB + 1", "01000100", MaxIn, nil, ErrTooLarge},
		{"0xFFFFFFFF", "ffffffff", MaxIn, nil, ErrTooLarge},
		{"0x80000000", "00000080", MaxIn, nil, ErrTooLarge},
		{"frame then truncated length", "020000007b7d0200", MaxIn, []string{"{}"}, ErrTruncated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := hex.DecodeString(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(bytes.NewReader(raw), tc.max)
			var got []string
			for {
				p, err := r.Read()
				if err != nil {
					if !errors.Is(err, tc.err) {
						t.Fatalf("error %v, want %v", err, tc.err)
					}
					break
				}
				got = append(got, string(p))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("payloads %q, want %q", got, tc.want)
			}
		})
	}
}

// The zero-length frame leaves the stream in sync: the next frame still reads.
func TestReadAfterEmpty(t *testing.T) {
	raw, _ := hex.DecodeString("00000000020000007b7d")
	r := NewReader(bytes.NewReader(raw), MaxIn)
	if _, err := r.Read(); err != ErrEmpty {
		t.Fatalf("got %v, want ErrEmpty", err)
	}
	p, err := r.Read()
	if err != nil || string(p) != "{}" {
		t.Fatalf("got %q, %v; want {}", p, err)
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestReadPassesOtherErrors(t *testing.T) {
	boom := errors.New("boom")
	if _, err := NewReader(failingReader{boom}, MaxIn).Read(); err != boom {
		t.Fatalf("got %v, want the reader's error", err)
	}
}

// A hostile length must cost no more than the cap. Measured in bytes with MemStats because AllocsPerRun counts
// allocations, not their size.
func TestHugeLengthAllocatesLittle(t *testing.T) {
	for _, hdr := range []string{"ffffffff", "01000100", "00000080"} {
		raw, _ := hex.DecodeString(hdr)
		r := NewReader(bytes.NewReader(raw), MaxIn)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := r.Read()
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%s: got %v, want ErrTooLarge", hdr, err)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d >= MaxIn {
			t.Errorf("%s: reading the header allocated %d bytes, want < %d", hdr, d, MaxIn)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		r := NewReader(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), MaxIn)
		_, _ = r.Read()
	})
	// The Reader, the bytes.Reader and the wrapped error: a handful of small objects, never a buffer.
	if allocs > 8 {
		t.Errorf("%.0f allocations per hostile header, want a handful", allocs)
	}
}

func TestWriteCap(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, MaxOut)
	if err := w.Write(bytes.Repeat([]byte("a"), MaxOut+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("1 MiB + 1: got %v, want ErrTooLarge", err)
	}
	if err := w.Write(nil); err != ErrEmpty {
		t.Fatalf("empty: got %v, want ErrEmpty", err)
	}
	if out.Len() != 0 {
		t.Fatalf("a refused frame wrote %d bytes", out.Len())
	}
	big := bytes.Repeat([]byte("a"), MaxOut)
	if err := w.Write(big); err != nil {
		t.Fatalf("exactly 1 MiB: %v", err)
	}
	p, err := NewReader(&out, MaxOut).Read()
	if err != nil || !bytes.Equal(p, big) {
		t.Fatalf("read back: %d bytes, %v", len(p), err)
	}
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestWriteShort(t *testing.T) {
	if err := NewWriter(shortWriter{}, MaxOut).Write([]byte("{}")); err != io.ErrShortWrite {
		t.Fatalf("got %v, want io.ErrShortWrite", err)
	}
}

// Frames written from many goroutines arrive whole.
func TestWriteConcurrent(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, MaxOut)
	var wg sync.WaitGroup
	const writers, each = 8, 200
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := bytes.Repeat([]byte{'a' + byte(i)}, 100+i*37)
			for range each {
				if err := w.Write(p); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	r := NewReader(&out, MaxOut)
	n := 0
	for {
		p, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Trim(string(p), string(p[:1])) != "" {
			t.Fatalf("frame %d mixes writers", n)
		}
		n++
	}
	if n != writers*each {
		t.Fatalf("read %d frames, want %d", n, writers*each)
	}
}
