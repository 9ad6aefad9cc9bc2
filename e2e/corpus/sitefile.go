package corpus

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// Protocols a site can be served with.
const (
	ProtoH2    = "h2"       // HTTPS offering h2 and http/1.1 (the origin's h2 listener)
	ProtoHTTP1 = "http/1.1" // HTTPS offering http/1.1 only (the h1 listener)
)

//go:embed mixed.json
var mixedJSON []byte

// SiteFile is a corpus file: sites, each on a host name of its own, whose pages are given by their shape (total
// bytes and object counts per kind). The built-in mixed sites (mixed.json) are one; researchers bring their own
// with `origin --corpus FILE` or `npm run testbed -- --corpus FILE`.
//
//	{
//	  "about": "what these pages are",
//	  "set": "mine",                          // page set name for the grid's --pages (default "custom")
//	  "sites": [{
//	    "host": "news.example.test",          // the site's host name (DNS syntax, at least two labels)
//	    "proto": "h2",                        // "h2" (default) or "http/1.1" (an HTTP/1.1-only site)
//	    "source": "where the shapes come from",
//	    "third_party_share": 0.38,            // optional: probability that a script, stylesheet or image is third-party
//	    "pages": [{"name": "news-list", "path": "/", "bytes": 60000,
//	               "objects": {"html": 1, "css": 2, "js": 4, "image": 12}, "source": "optional, per page"}]
//	  }]
//	}
//
// Object sizes are laid out as for the Table 1 pages (see layout); "html" counts the landing page.
type SiteFile struct {
	About string     `json:"about"`
	Set   string     `json:"set"`
	Sites []SiteSpec `json:"sites"`

	name string // the file's name, for messages
}

// SiteSpec is one site of a SiteFile.
type SiteSpec struct {
	Host       string     `json:"host"`
	Proto      string     `json:"proto"`
	Source     string     `json:"source"`
	ThirdParty *float64   `json:"third_party_share,omitempty"`
	Pages      []PageSpec `json:"pages"`
}

// PageSpec is one page of a site, by shape.
type PageSpec struct {
	Name    string      `json:"name"`
	Path    string      `json:"path"`
	Bytes   int         `json:"bytes"`
	Objects ObjectCount `json:"objects"`
	Source  string      `json:"source,omitempty"`
}

// ObjectCount is a page's number of objects per kind.
type ObjectCount struct {
	HTML  int `json:"html"`
	CSS   int `json:"css"`
	JS    int `json:"js"`
	Image int `json:"image"`
}

// Bounds on a corpus file: every body is made in memory when the origin starts.
const (
	maxSiteFileBytes = 1 << 20
	maxPageBytes     = 50_000_000
	maxPageObjects   = 1000
	maxFileBytes     = 300_000_000 // all pages of one file
	maxSitePages     = 200
)

// Names the grid uses as page selectors, and the built-in sets: no page or user set may take them.
var reservedNames = []string{"e3", "table1", "mixed", "large", "small", "all"}

var (
	pageNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	setRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	labelRE    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	pathRE     = regexp.MustCompile(`^/[A-Za-z0-9/._~-]{0,199}$`)
)

// LoadSiteFile reads and checks a corpus file.
func LoadSiteFile(path string) (*SiteFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseSiteFile(f, path)
}

// ParseSiteFile reads and checks a corpus file; name is used in its error messages.
func ParseSiteFile(r io.Reader, name string) (*SiteFile, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSiteFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxSiteFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxSiteFileBytes)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var f SiteFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: data after the corpus object", name)
	}
	f.name = name
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &f, nil
}

func reserved(s string) bool {
	for _, r := range reservedNames {
		if s == r {
			return true
		}
	}
	return false
}

// CheckHost tells whether h can be a site's host name: a lower-case DNS name of at least two labels, not one of
// the testbed's own names.
func CheckHost(h string) error {
	labels := strings.Split(h, ".")
	if len(h) > 253 || len(labels) < 2 {
		return fmt.Errorf("host %q: want a DNS name of at least two labels", h)
	}
	for _, l := range labels {
		if !labelRE.MatchString(l) {
			return fmt.Errorf("host %q: label %q is not a-z, 0-9 and inner hyphens", h, l)
		}
	}
	switch h {
	case DefaultDomain, "third." + DefaultDomain:
		return fmt.Errorf("host %q: the testbed's own name", h)
	}
	return nil
}

func (f *SiteFile) check() error {
	if f.Set == "" {
		f.Set = "custom"
	}
	if !setRE.MatchString(f.Set) || f.Set == "e3" || f.Set == "table1" || f.Set == "large" || f.Set == "small" || f.Set == "all" {
		return fmt.Errorf("set %q: want 1-32 of a-z 0-9 -, not a built-in selector", f.Set)
	}
	if len(f.Sites) == 0 {
		return errors.New("sites: none")
	}
	total := 0
	hosts := map[string]bool{}
	for i := range f.Sites {
		s := &f.Sites[i]
		at := fmt.Sprintf("sites[%d]", i)
		if err := CheckHost(s.Host); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if hosts[s.Host] {
			return fmt.Errorf("%s: host %s: listed twice", at, s.Host)
		}
		hosts[s.Host] = true
		switch s.Proto {
		case "":
			s.Proto = ProtoH2
		case ProtoH2, ProtoHTTP1:
		default:
			return fmt.Errorf("%s.proto: %q, want %q or %q", at, s.Proto, ProtoH2, ProtoHTTP1)
		}
		if strings.TrimSpace(s.Source) == "" {
			return fmt.Errorf("%s.source: missing (where the sizes and counts come from)", at)
		}
		if tp := s.ThirdParty; tp != nil && !(*tp >= 0 && *tp <= 1) {
			return fmt.Errorf("%s.third_party_share: %v, want 0..1", at, *tp)
		}
		if len(s.Pages) == 0 || len(s.Pages) > maxSitePages {
			return fmt.Errorf("%s.pages: %d, want 1..%d", at, len(s.Pages), maxSitePages)
		}
		paths := map[string]bool{}
		for j, p := range s.Pages {
			at := fmt.Sprintf("%s.pages[%d]", at, j)
			if !pageNameRE.MatchString(p.Name) || reserved(p.Name) {
				return fmt.Errorf("%s.name: %q, want 1-63 of a-z 0-9 - starting with a letter or digit, not a built-in selector", at, p.Name)
			}
			if !pathRE.MatchString(p.Path) || strings.HasPrefix(p.Path, "/p/") || strings.HasPrefix(p.Path, "/dl/") || strings.Contains(p.Path, "//") || strings.Contains(p.Path, "/../") || strings.HasSuffix(p.Path, "/..") {
				return fmt.Errorf("%s.path: %q, want an absolute URL path of A-Z a-z 0-9 / . _ ~ -, without query, \"//\", \"..\" or the /p/ and /dl/ prefixes", at, p.Path)
			}
			if paths[p.Path] {
				return fmt.Errorf("%s.path: %s is another page's", at, p.Path)
			}
			paths[p.Path] = true
			if p.Bytes <= 0 || p.Bytes > maxPageBytes {
				return fmt.Errorf("%s.bytes: %d, want 1..%d", at, p.Bytes, maxPageBytes)
			}
			n := p.Objects
			if n.HTML < 1 || n.CSS < 0 || n.JS < 0 || n.Image < 0 || n.HTML+n.CSS+n.JS+n.Image > maxPageObjects {
				return fmt.Errorf("%s.objects: %+v, want html >= 1 (the landing page), none negative, at most %d in all", at, n, maxPageObjects)
			}
			total += p.Bytes
		}
	}
	if total > maxFileBytes {
		return fmt.Errorf("pages add up to %d bytes, more than %d", total, maxFileBytes)
	}
	return nil
}

// layout makes the file's pages.
func (f *SiteFile) layout(seed uint64, p *params) ([]*Page, error) {
	var out []*Page
	for _, s := range f.Sites {
		share := p.thirdParty
		if s.ThirdParty != nil {
			share = *s.ThirdParty
		}
		for _, ps := range s.Pages {
			page := &Page{Name: ps.Name, Set: f.Set, Source: s.Source, Host: s.Host, Proto: s.Proto, file: f.name}
			if ps.Source != "" {
				page.Source = ps.Source + "; " + s.Source
			}
			var n [numKinds]int
			n[KindHTML], n[KindCSS], n[KindJS], n[KindImage] = ps.Objects.HTML, ps.Objects.CSS, ps.Objects.JS, ps.Objects.Image
			if err := layout(seed, p, page, ps.Path, n, ps.Bytes, share); err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			out = append(out, page)
		}
	}
	return out, nil
}
