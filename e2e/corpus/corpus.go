package corpus

import (
	"bytes"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Kind is an object's content type class.
type Kind int

const (
	KindHTML Kind = iota
	KindJS
	KindCSS
	KindImage
	numKinds
)

var kindNames = [numKinds]string{"html", "js", "css", "image"}

func (k Kind) String() string { return kindNames[k] }

// MarshalText makes kinds read as names in JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// MaxOriginLen bounds the second origin given to Landing; landing pages are laid out so
// their markup fits with any origin up to this length.
const MaxOriginLen = 100

// Object is one resource of a page. Objects[0] of every page is its landing page.
type Object struct {
	Index       int    `json:"index"`
	Path        string `json:"path"`
	Kind        Kind   `json:"kind"`
	ContentType string `json:"content_type"`
	Size        int    `json:"bytes"`
	ThirdParty  bool   `json:"third_party"`
}

// Page is a landing page and the objects it references.
type Page struct {
	Name   string
	Set    string // "e3", "table1", "mixed", or the set a corpus file names
	Source string
	Site   *Site // the Table 1 row, nil for other pages
	// Host is the page's own host name: its site's, or <name>.origin.test for the e3 and Table 1 pages, each of
	// which is a site of its own. The landing page is served at Host + Path(), and at /p/<name>/ on any host.
	Host string
	// Proto is how its site serves it: "h2" or "http/1.1" (an HTTP/1.1-only site; the origin's h1 listener).
	Proto   string
	Objects []Object

	file string // where the page was defined, for error messages
}

// Path is the landing page's URL path.
func (p *Page) Path() string { return p.Objects[0].Path }

// Bytes is the sum of all object sizes.
func (p *Page) Bytes() int {
	n := 0
	for _, o := range p.Objects {
		n += o.Size
	}
	return n
}

// Corpus is the full set of pages for one seed.
type Corpus struct {
	Seed  uint64
	Pages []*Page

	index map[string][2]int // path -> page, object
	hosts map[string]int    // host + path of a landing page -> page

	mu       sync.Mutex
	bodies   map[string][]byte
	landings map[[2]string][]byte // (page, origin) -> body
}

// DefaultDomain is the parent of the host names of the pages that are sites of their own (e3, Table 1).
const DefaultDomain = "origin.test"

// New lays out every built-in page for seed, then the pages of each corpus file in files (see SiteFile).
// Bodies are made on first use (or by Materialize).
func New(seed uint64, files ...*SiteFile) (*Corpus, error) {
	p, err := loadParams(sitesJSON)
	if err != nil {
		return nil, err
	}
	c := &Corpus{
		Seed:     seed,
		index:    map[string][2]int{},
		hosts:    map[string]int{},
		bodies:   map[string][]byte{},
		landings: map[[2]string][]byte{},
	}
	for _, kb := range p.e3KB {
		name := fmt.Sprintf("e3-%dk", kb)
		c.Pages = append(c.Pages, &Page{
			Name:    name,
			Set:     "e3",
			Source:  fmt.Sprintf("seed 001 E3 synthetic page, %d KB", kb),
			Host:    name + "." + DefaultDomain,
			Proto:   ProtoH2,
			file:    "sites.json",
			Objects: []Object{{Path: "/p/" + name + "/", Kind: KindHTML, ContentType: contentType(KindHTML, false), Size: kb * p.kb}},
		})
	}
	for i := range p.sites {
		page, err := layoutSite(seed, p, &p.sites[i])
		if err != nil {
			return nil, err
		}
		c.Pages = append(c.Pages, page)
	}
	mixed, err := ParseSiteFile(bytes.NewReader(mixedJSON), "mixed.json")
	if err != nil {
		return nil, err
	}
	for _, f := range append([]*SiteFile{mixed}, files...) {
		pages, err := f.layout(seed, p)
		if err != nil {
			return nil, err
		}
		c.Pages = append(c.Pages, pages...)
	}
	names, hosts := map[string]bool{}, map[string]string{} // page names; host -> the file that brought it
	for pi, page := range c.Pages {
		if names[page.Name] {
			return nil, fmt.Errorf("corpus: page %s: the name is taken", page.Name)
		}
		names[page.Name] = true
		if page.Objects[0].Size < landingMin(page) {
			return nil, fmt.Errorf("corpus: page %s: landing page of %d bytes cannot hold its markup", page.Name, page.Objects[0].Size)
		}
		key := page.Host + page.Path()
		if _, dup := c.hosts[key]; dup {
			return nil, fmt.Errorf("corpus: page %s: %s is another page's address", page.Name, key)
		}
		c.hosts[key] = pi
		// Every landing page is also at /p/<name>/ on any host (what the e3 and Table 1 pages have always used),
		// and every other object at its own path: object paths hold the page name, so they never collide.
		c.index["/p/"+page.Name+"/"] = [2]int{pi, 0}
		for oi, o := range page.Objects[1:] {
			c.index[o.Path] = [2]int{pi, oi + 1}
		}
		if from, ok := hosts[page.Host]; ok && from != page.file {
			return nil, fmt.Errorf("corpus: host %s is in %s and %s: one site per host", page.Host, from, page.file)
		}
		hosts[page.Host] = page.file
	}
	return c, nil
}

func layoutSite(seed uint64, p *params, s *Site) (*Page, error) {
	page := &Page{
		Name:   s.Name,
		Set:    "table1",
		Source: fmt.Sprintf("seed 000 Table 1 row %d (%s)", s.Row, s.Website),
		Site:   s,
		Host:   s.Name + "." + DefaultDomain,
		Proto:  ProtoH2,
		file:   "sites.json",
	}
	if err := layout(seed, p, page, "/p/"+s.Name+"/", p.counts(*s), int(math.Round(s.SizeKB*float64(p.kb))), p.thirdParty); err != nil {
		return nil, err
	}
	return page, nil
}

// layout gives page a landing page at landing and n[k] objects of each kind, total bytes in all, each script,
// stylesheet and image on the second origin with probability thirdParty. Bytes are divided among kinds in
// proportion to count x the HTTP Archive mean bytes per object of that kind (sites.json); within a kind, sizes
// are seeded exponential draws scaled to the kind's share.
func layout(seed uint64, p *params, page *Page, landing string, n [numKinds]int, total int, thirdParty float64) error {
	add := func(k Kind) {
		i := len(page.Objects)
		o := Object{Index: i, Kind: k, Path: landing}
		if i > 0 {
			o.Path = "/p/" + page.Name + "/o" + strconv.Itoa(i) + "." + ext(k, false)
		}
		page.Objects = append(page.Objects, o)
	}
	add(KindHTML)
	for range n[KindHTML] - 1 {
		add(KindHTML)
	}
	for _, k := range []Kind{KindCSS, KindJS, KindImage} {
		for range n[k] {
			add(k)
		}
	}

	r := newRNG(seed, page.Name, "layout")
	draws := make([]float64, len(page.Objects))
	jpeg := make([]bool, len(page.Objects))
	var sum [numKinds]float64
	for i := range page.Objects {
		o := &page.Objects[i]
		draws[i] = r.exp()
		o.ThirdParty = o.Kind != KindHTML && r.float() < thirdParty
		jpeg[i] = r.float() < 0.5
		sum[o.Kind] += draws[i]
	}
	// Scale draws so that each kind's weights add up to count x mean bytes per object.
	weights := make([]float64, len(page.Objects))
	mins := make([]int, len(page.Objects))
	for i, o := range page.Objects {
		weights[i] = p.perObject[o.Kind] * draws[i] * float64(n[o.Kind]) / sum[o.Kind]
		mins[i] = minSize(o)
	}
	mins[0] = landingMin(page)
	sizes, err := split(total, weights, mins)
	if err != nil {
		return fmt.Errorf("corpus: page %s: %w", page.Name, err)
	}
	for i := range page.Objects {
		o := &page.Objects[i]
		o.Size = sizes[i]
		if o.Kind == KindImage && jpeg[i] && o.Size-jpegBase() >= jpegSegmentMin {
			o.Path = strings.TrimSuffix(o.Path, ".png") + ".jpg"
			o.ContentType = contentType(KindImage, true)
		} else {
			o.ContentType = contentType(o.Kind, false)
		}
	}
	return nil
}

// split divides total into parts of at least mins[i], the rest in proportion to weights,
// rounding by largest remainder so the parts add up to total exactly.
func split(total int, weights []float64, mins []int) ([]int, error) {
	need, wsum := 0, 0.0
	for i := range mins {
		need += mins[i]
		wsum += weights[i]
	}
	if need > total {
		return nil, fmt.Errorf("%d bytes cannot hold %d objects needing %d", total, len(mins), need)
	}
	rest := float64(total - need)
	out := make([]int, len(mins))
	frac := make([]float64, len(mins))
	given := 0
	for i := range mins {
		share := 0.0
		if wsum > 0 {
			share = rest * weights[i] / wsum
		}
		out[i] = mins[i] + int(math.Floor(share))
		frac[i] = share - math.Floor(share)
		given += out[i]
	}
	for given < total {
		best := 0
		for i := range frac {
			if frac[i] > frac[best] {
				best = i
			}
		}
		out[best]++
		frac[best] = -1
		given++
	}
	return out, nil
}

// Lookup finds the page and object served at path.
func (c *Corpus) Lookup(path string) (*Page, *Object, bool) {
	ref, ok := c.index[path]
	if !ok {
		return nil, nil, false
	}
	p := c.Pages[ref[0]]
	return p, &p.Objects[ref[1]], true
}

// LookupHost finds the page and object served at path on host (a host name without port): a page's landing
// page at its own address first, then Lookup.
func (c *Corpus) LookupHost(host, path string) (*Page, *Object, bool) {
	if pi, ok := c.hosts[host+path]; ok {
		p := c.Pages[pi]
		return p, &p.Objects[0], true
	}
	return c.Lookup(path)
}

// Hosts lists every page's host name once, in page order.
func (c *Corpus) Hosts() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range c.Pages {
		if !seen[p.Host] {
			seen[p.Host] = true
			out = append(out, p.Host)
		}
	}
	return out
}

// Page returns the page named name.
func (c *Corpus) Page(name string) (*Page, bool) {
	p, _, ok := c.Lookup("/p/" + name + "/")
	return p, ok
}

// CheckOrigin tells whether origin can be given to Landing: "" (all objects first-party)
// or scheme://host[:port] with nothing after it.
func CheckOrigin(origin string) error {
	if origin == "" {
		return nil
	}
	if len(origin) > MaxOriginLen {
		return fmt.Errorf("second origin %q is longer than %d bytes", origin, MaxOriginLen)
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil ||
		strings.ContainsAny(origin, "\"'<>&` \t\r\n") {
		return fmt.Errorf("second origin %q is not scheme://host[:port]", origin)
	}
	return nil
}

// Landing returns page's landing HTML with third-party objects pointing at origin
// ("" keeps every object on the page's own origin). Its size is Objects[0].Size whatever
// the origin.
func (c *Corpus) Landing(p *Page, origin string) ([]byte, error) {
	if err := CheckOrigin(origin); err != nil {
		return nil, err
	}
	key := [2]string{p.Name, origin}
	c.mu.Lock()
	b, ok := c.landings[key]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b = renderLanding(c.Seed, p, origin)
	c.mu.Lock()
	c.landings[key] = b
	c.mu.Unlock()
	return b, nil
}

// Body returns the body of a non-landing object.
func (c *Corpus) Body(p *Page, o *Object) []byte {
	c.mu.Lock()
	b, ok := c.bodies[o.Path]
	c.mu.Unlock()
	if ok {
		return b
	}
	b = objectBody(c.Seed, p, o)
	c.mu.Lock()
	c.bodies[o.Path] = b
	c.mu.Unlock()
	return b
}

// Materialize makes every body now (and the landing pages for each origin given), so that
// serving never pays for generation during a timed page load.
func (c *Corpus) Materialize(origins ...string) error {
	for _, p := range c.Pages {
		for i := range p.Objects[1:] {
			c.Body(p, &p.Objects[i+1])
		}
		for _, o := range append([]string{""}, origins...) {
			if _, err := c.Landing(p, o); err != nil {
				return err
			}
		}
	}
	return nil
}

func renderLanding(seed uint64, p *Page, origin string) []byte {
	var b bytes.Buffer
	b.Grow(p.Objects[0].Size)
	writeLandingMarkup(&b, p, origin)
	fill := p.Objects[0].Size - b.Len() - len(landingTail)
	if fill < 0 {
		// New checked landingMin with the longest origin allowed; CheckOrigin bounds it.
		panic("corpus: landing markup outgrew its page")
	}
	pad := make([]byte, fill)
	newRNG(seed, p.Name, "landing").text(pad)
	b.Write(pad)
	b.WriteString(landingTail)
	return b.Bytes()
}

const landingTail = "-->\n</body>\n</html>\n"

func writeLandingMarkup(b *bytes.Buffer, p *Page, origin string) {
	src := func(o *Object) string {
		if o.ThirdParty && origin != "" {
			return origin + o.Path
		}
		return o.Path
	}
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n", p.Name)
	for i := range p.Objects {
		if o := &p.Objects[i]; o.Kind == KindCSS {
			fmt.Fprintf(b, "<link rel=\"stylesheet\" href=\"%s\">\n", src(o))
		}
	}
	fmt.Fprintf(b, "</head>\n<body>\n<h1>%s</h1>\n", p.Name)
	for i := range p.Objects {
		o := &p.Objects[i]
		switch {
		case o.Kind == KindImage:
			fmt.Fprintf(b, "<img src=\"%s\" alt=\"\" width=\"1\" height=\"1\">\n", src(o))
		case o.Kind == KindHTML && i > 0:
			fmt.Fprintf(b, "<iframe src=\"%s\" title=\"o%d\" width=\"1\" height=\"1\"></iframe>\n", src(o), i)
		}
	}
	for i := range p.Objects {
		if o := &p.Objects[i]; o.Kind == KindJS {
			fmt.Fprintf(b, "<script src=\"%s\"></script>\n", src(o))
		}
	}
	b.WriteString("<!--")
}

// landingMin is the smallest landing page that holds the markup with the longest origin.
func landingMin(p *Page) int {
	var b bytes.Buffer
	writeLandingMarkup(&b, p, "https://"+strings.Repeat("x", MaxOriginLen-len("https://")))
	return b.Len() + len(landingTail) + 64
}

func ext(k Kind, jpeg bool) string {
	switch k {
	case KindJS:
		return "js"
	case KindCSS:
		return "css"
	case KindImage:
		if jpeg {
			return "jpg"
		}
		return "png"
	}
	return "html"
}

func contentType(k Kind, jpeg bool) string {
	switch k {
	case KindJS:
		return "text/javascript; charset=utf-8"
	case KindCSS:
		return "text/css; charset=utf-8"
	case KindImage:
		if jpeg {
			return "image/jpeg"
		}
		return "image/png"
	}
	return "text/html; charset=utf-8"
}
