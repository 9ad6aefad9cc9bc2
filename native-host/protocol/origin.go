package protocol

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxOriginLen caps an origin, before and after normalisation.
const MaxOriginLen = 2048

// hostProfile maps and converts hosts the way a browser's URL parser does (UTS #46 non-transitional processing
// without STD3 rules or hyphen checks): "r3---sn-abc.googlevideo.com" and "_dmarc.example" are real hosts that the
// stricter Lookup profile would refuse.
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.CheckJoiners(true),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
)

// NormalizeOrigin checks that s is an http or https origin (scheme://host[:port], nothing else) and returns it in
// the form browsers serialise origins: lower-case scheme and host, IDN labels in punycode, default port dropped.
// The error says what is wrong, without repeating s.
func NormalizeOrigin(s string) (string, error) {
	if len(s) > MaxOriginLen {
		return "", fmt.Errorf("longer than %d bytes", MaxOriginLen)
	}
	if !utf8.ValidString(s) {
		return "", errors.New("not valid UTF-8")
	}
	i := strings.Index(s, "://")
	if i <= 0 {
		return "", errors.New("not an http(s) origin")
	}
	scheme := strings.ToLower(s[:i])
	var defaultPort string
	switch scheme {
	case "http":
		defaultPort = "80"
	case "https":
		defaultPort = "443"
	default:
		return "", errors.New("scheme must be http or https")
	}
	rest := s[i+3:]
	if strings.ContainsAny(rest, "/?#\\") {
		return "", errors.New("has a path, query or fragment")
	}
	if strings.Contains(rest, "@") {
		return "", errors.New("has userinfo")
	}
	host, port, err := splitHostPort(rest)
	if err != nil {
		return "", err
	}
	if host, err = normalizeHost(host); err != nil {
		return "", err
	}
	if port, err = normalizePort(port, defaultPort); err != nil {
		return "", err
	}
	out := scheme + "://" + host
	if port != "" {
		out += ":" + port
	}
	if len(out) > MaxOriginLen {
		return "", fmt.Errorf("longer than %d bytes once normalised", MaxOriginLen)
	}
	return out, nil
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port". The host keeps its brackets.
func splitHostPort(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", errors.New("unclosed [ in host")
		}
		host, after := s[:end+1], s[end+1:]
		if after == "" {
			return host, "", nil
		}
		if after[0] != ':' {
			return "", "", errors.New("junk after ]")
		}
		return host, after[1:], portPresent(after[1:])
	}
	if k := strings.LastIndexByte(s, ':'); k >= 0 {
		return s[:k], s[k+1:], portPresent(s[k+1:])
	}
	return s, "", nil
}

func portPresent(p string) error {
	if p == "" {
		return errors.New("empty port")
	}
	return nil
}

func normalizePort(p, defaultPort string) (string, error) {
	if p == "" {
		return "", nil
	}
	if len(p) > 5 || strings.Trim(p, "0123456789") != "" {
		return "", errors.New("port must be a number 1 to 65535")
	}
	n, _ := strconv.Atoi(p)
	if n < 1 || n > 65535 {
		return "", errors.New("port must be a number 1 to 65535")
	}
	if p = strconv.Itoa(n); p == defaultPort {
		return "", nil
	}
	return p, nil
}

func normalizeHost(h string) (string, error) {
	if h == "" {
		return "", errors.New("no host")
	}
	if strings.HasPrefix(h, "[") {
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", errors.New("not a valid IPv6 address in []")
		}
		return "[" + a.String() + "]", nil
	}
	a, err := hostProfile.ToASCII(h)
	if err != nil {
		return "", errors.New("host is not a valid domain name")
	}
	a = strings.ToLower(a)
	// Converting the result again must change nothing; otherwise one origin would have two spellings.
	if again, err := hostProfile.ToASCII(a); err != nil || again != a {
		return "", errors.New("host is not a valid domain name")
	}
	labels := strings.Split(strings.TrimSuffix(a, "."), ".")
	for _, l := range labels {
		if l == "" {
			return "", errors.New("host has an empty label")
		}
		// Narrower than what URL parsers tolerate, wide enough for every host DNS can name.
		if strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return "", errors.New("host has a character not allowed in a domain name")
		}
	}
	// A host whose last label is a number is an IPv4 address to a browser; accept only the dotted-quad form that
	// browsers serialise, so that one address has one spelling.
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" {
		ip, err := netip.ParseAddr(a)
		if err != nil || !ip.Is4() {
			return "", errors.New("not a valid IPv4 address")
		}
		return ip.String(), nil
	}
	return a, nil
}
