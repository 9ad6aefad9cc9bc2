package protocol

import (
	"strings"
	"testing"
)

func TestNormalizeOrigin(t *testing.T) {
	tests := []struct {
		in, want string // want "" means refused
	}{
		{"https://example.com", "https://example.com"},
		{"HTTPS://Example.COM:443", "https://example.com"},
		{"http://example.com:80", "http://example.com"},
		{"http://example.com:443", "http://example.com:443"},
		{"https://example.com:80", "https://example.com:80"},
		{"https://example.com:0443", "https://example.com"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"https://bücher.example", "https://xn--bcher-kva.example"},
		{"https://BÜCHER.example", "https://xn--bcher-kva.example"},
		{"https://xn--bcher-kva.example", "https://xn--bcher-kva.example"},
		{"https://münchen.de:8443", "https://xn--mnchen-3ya.de:8443"},
		{"https://r3---sn-4g5e6nsz.googlevideo.com", "https://r3---sn-4g5e6nsz.googlevideo.com"},
		{"https://_dmarc.example", "https://_dmarc.example"},
		{"https://example.com.", "https://example.com."},
		{"https://[::1]", "https://[::1]"},
		{"https://[2001:DB8::0:1]:8443", "https://[2001:db8::1]:8443"},
		{"https://ｅｘａｍｐｌｅ.com", "https://example.com"}, // full-width letters map to ASCII
		{"https://localhost", "https://localhost"},

		{"", ""},
		{"example.com", ""},
		{"://example.com", ""},
		{"ftp://example.com", ""},
		{"chrome-extension://ajmpgeaaaphkhppijbmcemhafkpapbmh", ""},
		{"file:///etc/passwd", ""},
		{"https://", ""},
		{"https://example.com/", ""},
		{"https://example.com/a?b", ""},
		{"https://example.com?q", ""},
		{"https://example.com#f", ""},
		{"https://example.com\\", ""},
		{"https://user@example.com", ""},
		{"https://user:pw@example.com", ""},
		{"https://example.com:", ""},
		{"https://example.com:0", ""},
		{"https://example.com:65536", ""},
		{"https://example.com:123456", ""},
		{"https://example.com:-1", ""},
		{"https://example.com:8a", ""},
		{"https://exa mple.com", ""},
		{"https://exa%41mple.com", ""},
		{"https://a..b", ""},
		{"https://.example.com", ""},
		{"https://example.com..", ""},
		{"https://[::1", ""},
		{"https://[::1]x", ""},
		{"https://[127.0.0.1]", ""},
		{"https://[fe80::1%25eth0]", ""},
		{"https://::1", ""},
		{"https://256.0.0.1", ""},
		{"https://127.1", ""},
		{"https://01.2.3.4", ""},
		{"https://exa\x00mple.com", ""},
		{"https://exa<mple.com", ""},
		{"https://xn--a.example", ""},     // punycode that decodes to ASCII
		{"https://example\uff0fpath", ""}, // full-width solidus maps to '/'
		{"https://" + strings.Repeat("a", 2040) + ".example", ""},
	}
	for _, tc := range tests {
		got, err := NormalizeOrigin(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q: accepted as %q, want refused", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		// Normalising twice changes nothing.
		if again, err := NormalizeOrigin(got); err != nil || again != got {
			t.Errorf("%q: second pass gave %q, %v", got, again, err)
		}
	}
}

func TestNormalizeOriginLength(t *testing.T) {
	host := strings.Repeat("a", MaxOriginLen-len("https://")-len(".example")) + ".example"
	if _, err := NormalizeOrigin("https://" + host); err != nil {
		t.Errorf("exactly %d bytes: %v", MaxOriginLen, err)
	}
	if _, err := NormalizeOrigin("https://a" + host); err == nil {
		t.Errorf("%d bytes accepted", MaxOriginLen+1)
	}
	// Short enough before punycode, too long after it.
	long := "https://" + strings.Repeat("ü.", (MaxOriginLen-len("https://example"))/3) + "example"
	if len(long) > MaxOriginLen {
		t.Fatalf("test input is %d bytes", len(long))
	}
	if _, err := NormalizeOrigin(long); err == nil {
		t.Errorf("origin over %d bytes once in punycode accepted", MaxOriginLen)
	}
}
