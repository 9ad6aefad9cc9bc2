package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseAnnounce(t *testing.T) {
	tests := []struct {
		body string
		want Announce
		code Code
	}{
		{`{"origin":"https://Example.com:443","tab":3,"nav":"3-1","bytes":200000}`, Announce{"https://example.com", 3, "3-1", 200000}, 0},
		{`{"origin":"https://a.test","tab":-1,"nav":"x","bytes":0}`, Announce{"https://a.test", -1, "x", 0}, 0},
		{`{"origin":"https://a.test","tab":3,"nav":"x","bytes":-1}`, Announce{}, CodeBadRequest},
		{`{"origin":"https://a.test","tab":3,"nav":"x","bytes":1099511627777}`, Announce{}, CodeBadRequest},
		{`{"origin":"https://a.test","tab":3,"nav":"x","bytes":1.5}`, Announce{}, CodeBadRequest},
		{`{"origin":"https://a.test","tab":3,"nav":"x","bytes":"200000"}`, Announce{}, CodeBadRequest},
		{`{"origin":"https://a.test","tab":3,"nav":"x"}`, Announce{}, CodeBadRequest},
		{`{"origin":"https://a.test","tab":3,"nav":"","bytes":1}`, Announce{}, CodeBadRequest},
		{`{"origin":"https://a.test","tab":3,"nav":"` + strings.Repeat("n", 129) + `","bytes":1}`, Announce{}, CodeBadRequest},
		{`{"origin":"https://a.test","tab":-2,"nav":"x","bytes":1}`, Announce{}, CodeBadRequest},
		{`{"origin":"ftp://a.test","tab":3,"nav":"x","bytes":1}`, Announce{}, CodeBadOrigin},
		{`{"origin":"https://a.test/p?q","tab":3,"nav":"x","bytes":1}`, Announce{}, CodeBadOrigin},
		{`[]`, Announce{}, CodeBadRequest},
		{`null`, Announce{}, CodeBadRequest},
	}
	for _, tt := range tests {
		got, perr := ParseAnnounce(json.RawMessage(tt.body))
		switch {
		case tt.code != 0 && (perr == nil || perr.Code != tt.code):
			t.Errorf("ParseAnnounce(%s) = %+v, %v; want code %d", tt.body, got, perr, tt.code)
		case tt.code == 0 && (perr != nil || got != tt.want):
			t.Errorf("ParseAnnounce(%s) = %+v, %v; want %+v", tt.body, got, perr, tt.want)
		}
	}
}

func FuzzParseAnnounce(f *testing.F) {
	for _, s := range []string{`{"origin":"https://a.test","tab":1,"nav":"n","bytes":5}`, `{}`, `{"bytes":1e400}`, `"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, perr := ParseAnnounce(json.RawMessage(s))
		if perr != nil {
			return
		}
		if a.Bytes < 0 || a.Bytes > MaxAnnounced || a.Nav == "" || a.Tab < -1 {
			t.Fatalf("ParseAnnounce(%q) took %+v", s, a)
		}
		if norm, err := NormalizeOrigin(a.Origin); err != nil || norm != a.Origin {
			t.Fatalf("ParseAnnounce(%q) gave origin %q, not normalised", s, a.Origin)
		}
	})
}
