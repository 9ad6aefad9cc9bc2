package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestParsePeers(t *testing.T) {
	many := make([]string, MaxPeers+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"host":"h%d.test","ip":"10.0.0.%d"}`, i, i+1)
	}
	cases := []struct {
		name, body string
		code       Code // 0: accepted
		want       string
	}{
		{"one", `{"origin":"https://Example.com:443","tab":3,"peers":[{"host":"cdn.example.net","ip":"192.0.2.7"}]}`, 0, "https://example.com cdn.example.net=192.0.2.7"},
		{"v6 in brackets, IDN host", `{"origin":"https://a.test","tab":-1,"peers":[{"host":"bücher.test","ip":"[2001:db8::1]"}]}`, 0, "https://a.test xn--bcher-kva.test=2001:db8::1"},
		{"IP-literal hosts", `{"origin":"https://a.test","tab":1,"peers":[{"host":"[2001:DB8::2]","ip":"2001:db8::2"},{"host":"192.0.2.1","ip":"192.0.2.1"}]}`, 0, "https://a.test 2001:db8::2=2001:db8::2 192.0.2.1=192.0.2.1"},
		{"v4-mapped", `{"origin":"https://a.test","tab":1,"peers":[{"host":"a.test","ip":"::ffff:10.1.2.3"}]}`, 0, "https://a.test a.test=10.1.2.3"},
		{"no body", ``, CodeBadRequest, ""},
		{"no peers", `{"origin":"https://a.test","tab":1}`, CodeBadRequest, ""},
		{"empty peers", `{"origin":"https://a.test","tab":1,"peers":[]}`, CodeBadRequest, ""},
		{"too many", `{"origin":"https://a.test","tab":1,"peers":[` + strings.Join(many, ",") + `]}`, CodeBadRequest, ""},
		{"peer not an object", `{"origin":"https://a.test","tab":1,"peers":["x"]}`, CodeBadRequest, ""},
		{"bad ip", `{"origin":"https://a.test","tab":1,"peers":[{"host":"a.test","ip":"10.0.0.999"}]}`, CodeBadRequest, ""},
		{"ip with zone", `{"origin":"https://a.test","tab":1,"peers":[{"host":"a.test","ip":"fe80::1%eth0"}]}`, 0, "https://a.test a.test=fe80::1%eth0"},
		{"bad host", `{"origin":"https://a.test","tab":1,"peers":[{"host":"a b","ip":"10.0.0.1"}]}`, CodeBadRequest, ""},
		{"tab too small", `{"origin":"https://a.test","tab":-2,"peers":[{"host":"a.test","ip":"10.0.0.1"}]}`, CodeBadRequest, ""},
		{"bad origin", `{"origin":"ftp://a.test","tab":1,"peers":[{"host":"a.test","ip":"10.0.0.1"}]}`, CodeBadOrigin, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body json.RawMessage
			if c.body != "" {
				body = json.RawMessage(c.body)
			}
			origin, peers, perr := ParsePeers(body)
			if c.code != 0 {
				if perr == nil || perr.Code != c.code {
					t.Fatalf("got %v, want code %d", perr, c.code)
				}
				return
			}
			if perr != nil {
				t.Fatal(perr)
			}
			got := origin
			for _, p := range peers {
				got += " " + p.Host + "=" + p.Addr.String()
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func FuzzParsePeers(f *testing.F) {
	f.Add([]byte(`{"origin":"https://a.test","tab":1,"peers":[{"host":"cdn.test","ip":"10.0.0.1"}]}`))
	f.Add([]byte(`{"origin":"https://a.test","tab":1,"peers":[{"host":"[::1]","ip":"[::1]"}]}`))
	f.Add([]byte(`{"peers":[{}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		origin, peers, perr := ParsePeers(b)
		if perr != nil {
			return
		}
		if len(peers) < 1 || len(peers) > MaxPeers || origin == "" {
			t.Fatalf("accepted %d peers for %q", len(peers), origin)
		}
		for _, p := range peers {
			if !p.Addr.IsValid() || p.Addr.Is4In6() || p.Host == "" {
				t.Fatalf("accepted peer %+v", p)
			}
		}
	})
}
