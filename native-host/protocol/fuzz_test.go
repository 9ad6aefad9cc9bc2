package protocol

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/mpsurf/mpsurf/native-host/wire"
)

// seedPayloads returns every request payload in the vectors: exchanges' requests and the frames inside bad_input.
func seedPayloads(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	data, err := os.ReadFile("../vectors/exchanges.json")
	if err != nil {
		tb.Fatal(err)
	}
	var ex struct {
		Exchanges []struct {
			Request json.RawMessage `json:"request"`
		} `json:"exchanges"`
	}
	if err := json.Unmarshal(data, &ex); err != nil {
		tb.Fatal(err)
	}
	for _, e := range ex.Exchanges {
		out = append(out, e.Request)
	}
	data, err = os.ReadFile("../vectors/bad_input.json")
	if err != nil {
		tb.Fatal(err)
	}
	var bad struct {
		Cases []struct {
			InputHex string `json:"input_hex"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &bad); err != nil {
		tb.Fatal(err)
	}
	for _, c := range bad.Cases {
		raw, _ := hex.DecodeString(c.InputHex)
		// Split the stream into frames with a cap large enough to take every complete one.
		r := wire.NewReader(bytes.NewReader(raw), wire.MaxIn)
		for {
			p, err := r.Read()
			if err != nil {
				break
			}
			out = append(out, p)
		}
	}
	return out
}

// FuzzParse runs the whole request path (envelope, then the body parser its type selects) on arbitrary payloads:
// it must never panic, every error must carry a code of §6 with its name, and whatever parses must be in range.
func FuzzParse(f *testing.F) {
	for _, p := range seedPayloads(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		req, perr := Parse(payload)
		if perr == nil {
			if req.ID < 1 || req.ID > MaxID || !utf8.ValidString(req.Type) {
				t.Fatalf("parsed out of range: %+v", req)
			}
			switch req.Type {
			case TypeHello:
				_, perr = ParseHello(req.Body)
			case TypeDecide:
				var d Decide
				d, perr = ParseDecide(req.Body)
				if perr == nil {
					if again, err := NormalizeOrigin(d.Origin); err != nil || again != d.Origin {
						t.Fatalf("origin %q does not normalise to itself: %q, %v", d.Origin, again, err)
					}
					if d.Tab < -1 || d.Tab > MaxID || d.Nav == "" || utf8.RuneCountInString(d.Nav) > MaxNavLen {
						t.Fatalf("decide out of range: %+v", d)
					}
				}
			}
		}
		if perr != nil {
			if _, known := codeNames[perr.Code]; !known || perr.Name != perr.Code.Name() || perr.Message == "" {
				t.Fatalf("bad error %+v", perr)
			}
			if reply, err := json.Marshal(Fail(req, perr)); err != nil || len(reply) > wire.MaxOut {
				t.Fatalf("error reply: %d bytes, %v", len(reply), err)
			}
		}
	})
}

// FuzzNormalizeOrigin: never panics; an accepted origin is short, ASCII, http(s) and a fixed point.
func FuzzNormalizeOrigin(f *testing.F) {
	for _, s := range []string{
		"https://example.com", "HTTPS://Example.COM:443", "http://127.0.0.1:8080", "https://bücher.example",
		"https://example.com/a?b", "ftp://example.com", "https://user@example.com", "https://[::1]:8443",
		"https://r3---sn-4g5e6nsz.googlevideo.com", "https://xn--bcher-kva.example", "https://ｅｘａｍｐｌｅ.com",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := NormalizeOrigin(s)
		if err != nil {
			return
		}
		if len(got) > MaxOriginLen {
			t.Fatalf("%d bytes", len(got))
		}
		for i := 0; i < len(got); i++ {
			if got[i] >= 0x80 || got[i] <= ' ' {
				t.Fatalf("non-ASCII or control byte in %q", got)
			}
		}
		if again, err := NormalizeOrigin(got); err != nil || again != got {
			t.Fatalf("%q -> %q -> %q, %v", s, got, again, err)
		}
	})
}
