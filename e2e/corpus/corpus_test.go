package corpus

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
)

var (
	seed1Once sync.Once
	seed1     *Corpus
)

// corpus1 is shared: making all bodies takes a tenth of a second.
func corpus1(t *testing.T) *Corpus {
	t.Helper()
	seed1Once.Do(func() {
		c, err := New(1)
		if err != nil {
			t.Fatal(err)
		}
		seed1 = c
	})
	if seed1 == nil {
		t.Fatal("corpus for seed 1 failed")
	}
	return seed1
}

func TestTable1Rows(t *testing.T) {
	sites := Sites()
	if len(sites) != 25 {
		t.Fatalf("Table 1 has 25 rows, sites.json %d", len(sites))
	}
	// Spot checks against seed 000 Table 1.
	want := map[int]Site{
		1:  {Name: "news-1", Objects: 188.3, SizeKB: 4450.8, Text: 33.8, JSCSS: 67.7, ImgOther: 86.8, RTTms: 20.9},
		11: {Name: "search", Objects: 2, SizeKB: 59.9, Text: 1, JSCSS: 0, ImgOther: 1, RTTms: 8.55},
		25: {Name: "market", Objects: 49, SizeKB: 2032.8, Text: 2, JSCSS: 16, ImgOther: 31, RTTms: 2.97},
	}
	minKB, maxKB := math.Inf(1), 0.0
	for _, s := range sites {
		if w, ok := want[s.Row]; ok {
			w.Row, w.Website = s.Row, s.Website
			if s != w {
				t.Errorf("row %d = %+v, want %+v", s.Row, s, w)
			}
		}
		if d := s.Text + s.JSCSS + s.ImgOther - s.Objects; math.Abs(d) > 0.11 {
			t.Errorf("row %d: type counts add to %.1f more than # Obj", s.Row, d)
		}
		minKB, maxKB = min(minKB, s.SizeKB), max(maxKB, s.SizeKB)
	}
	if minKB != 59.9 || maxKB != 4450.8 {
		t.Errorf("sizes span %.1f-%.1f KB, seed 000 says 59.9-4450.8", minKB, maxKB)
	}
}

func TestDerivedParams(t *testing.T) {
	p, err := loadParams(sitesJSON)
	if err != nil {
		t.Fatal(err)
	}
	// 71 non-JS/CSS requests split 215.9 : 1032.5 (Table 1 column sums).
	htmlReq := 71 * 215.9 / (215.9 + 1032.5)
	cases := []struct {
		name      string
		got, want float64
	}{
		{"html bytes/object", p.perObject[KindHTML], 59000 / htmlReq},
		{"js bytes/object", p.perObject[KindJS], 295000.0 / 18},
		{"css bytes/object", p.perObject[KindCSS], 57000.0 / 6},
		{"image bytes/object", p.perObject[KindImage], 1542000 / (71 - htmlReq)},
		{"css share", p.cssShare, 0.25},
		{"third-party share", p.thirdParty, 24.0 / 63},
	}
	for _, c := range cases {
		if math.Abs(c.got-c.want) > 1e-6*c.want {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	if _, err := loadParams([]byte(`{"sites":[]}`)); err == nil {
		t.Error("empty sites.json accepted")
	}
}

func TestPagesMatchTable1(t *testing.T) {
	c := corpus1(t)
	m := c.Manifest(false)
	n := 0
	for _, p := range m.Pages {
		if p.Set == "e3" || p.Set == "table1" {
			n++
		}
	}
	if n != 6+25 {
		t.Fatalf("%d e3 and Table 1 pages, want 31", n)
	}
	for _, p := range m.Pages {
		if p.Host != p.Name+".origin.test" && (p.Set == "e3" || p.Set == "table1") || p.Proto != ProtoH2 && p.Set != "mixed" {
			t.Errorf("%s: host %s, proto %s", p.Name, p.Host, p.Proto)
		}
		if p.Set == "mixed" {
			continue
		}
		if p.Set == "e3" {
			if p.Objects != 1 || p.Mix.HTML.Bytes != p.Bytes {
				t.Errorf("%s: %+v", p.Name, p)
			}
			continue
		}
		s := p.Table1
		if want := int(math.Round(s.SizeKB * 1000)); p.Bytes != want {
			t.Errorf("%s: %d bytes, Table 1 says %d", p.Name, p.Bytes, want)
		}
		if d := float64(p.Objects) - s.Objects; math.Abs(d) > 1 {
			t.Errorf("%s: %d objects, Table 1 says %.1f", p.Name, p.Objects, s.Objects)
		}
		if got, want := p.Mix.JS.Count+p.Mix.CSS.Count, int(math.Round(s.JSCSS)); got != want {
			t.Errorf("%s: %d JS/CSS objects, want %d", p.Name, got, want)
		}
		if got, want := p.Mix.Image.Count, int(math.Round(s.ImgOther)); got != want {
			t.Errorf("%s: %d images, want %d", p.Name, got, want)
		}
		if sum := p.Mix.HTML.Bytes + p.Mix.JS.Bytes + p.Mix.CSS.Bytes + p.Mix.Image.Bytes; sum != p.Bytes {
			t.Errorf("%s: mix adds to %d, page %d", p.Name, sum, p.Bytes)
		}
	}
}

func TestBodiesMatchManifest(t *testing.T) {
	c := corpus1(t)
	origins := []string{"", "https://third.origin.test", "https://10.200.3.2:8443", "https://" + strings.Repeat("y", MaxOriginLen-8)}
	for _, p := range c.Pages {
		total := 0
		for i := range p.Objects {
			o := &p.Objects[i]
			if i == 0 {
				for _, origin := range origins {
					b, err := c.Landing(p, origin)
					if err != nil {
						t.Fatal(err)
					}
					if len(b) != o.Size {
						t.Errorf("%s landing with origin %q: %d bytes, manifest %d", p.Name, origin, len(b), o.Size)
					}
				}
				total += o.Size
				continue
			}
			b := c.Body(p, o)
			if len(b) != o.Size {
				t.Errorf("%s: %d bytes, manifest %d", o.Path, len(b), o.Size)
			}
			total += len(b)
		}
		if total != p.Bytes() {
			t.Errorf("%s: bodies add to %d, manifest %d", p.Name, total, p.Bytes())
		}
	}
}

func digest(t *testing.T, c *Corpus) [32]byte {
	t.Helper()
	h := sha256.New()
	m, _ := json.Marshal(c.Manifest(true))
	h.Write(m)
	for _, p := range c.Pages {
		b, err := c.Landing(p, "https://third.origin.test")
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
		for i := range p.Objects[1:] {
			h.Write(c.Body(p, &p.Objects[i+1]))
		}
	}
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

func TestDeterministic(t *testing.T) {
	a := digest(t, corpus1(t))
	again, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, again) != a {
		t.Error("seed 1 made a different corpus the second time")
	}
	other, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, other) == a {
		t.Error("seeds 1 and 2 made the same corpus")
	}
	// Seed 2 differs in layout but not in what the table fixes.
	for i, p := range other.Pages {
		if p.Bytes() != seed1.Pages[i].Bytes() || len(p.Objects) != len(seed1.Pages[i].Objects) {
			t.Errorf("%s: size or count depends on the seed", p.Name)
		}
	}
}

var refRE = regexp.MustCompile(`<(link rel="stylesheet" href|img src|iframe src|script src)="([^"]+)"`)

func TestLandingReferencesEveryObject(t *testing.T) {
	c := corpus1(t)
	const origin = "https://third.origin.test:9443"
	tag := map[Kind]string{KindCSS: `link rel="stylesheet" href`, KindImage: "img src", KindHTML: "iframe src", KindJS: "script src"}
	for _, p := range c.Pages {
		b, err := c.Landing(p, origin)
		if err != nil {
			t.Fatal(err)
		}
		refs := map[string]string{}
		for _, m := range refRE.FindAllSubmatch(b, -1) {
			refs[string(m[2])] = string(m[1])
		}
		if len(refs) != len(p.Objects)-1 {
			t.Errorf("%s: %d references for %d sub-resources", p.Name, len(refs), len(p.Objects)-1)
		}
		for _, o := range p.Objects[1:] {
			url := o.Path
			if o.ThirdParty {
				url = origin + o.Path
			}
			if refs[url] != tag[o.Kind] {
				t.Errorf("%s: %s referenced as %q, want %q", p.Name, url, refs[url], tag[o.Kind])
			}
		}
		if !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) || !bytes.HasSuffix(b, []byte("</html>\n")) ||
			bytes.Count(b, []byte("-->")) != 1 {
			t.Errorf("%s: landing page is not one document with one padding comment", p.Name)
		}
	}
}

func TestBodiesAreValid(t *testing.T) {
	c := corpus1(t)
	seen := map[string]int{}
	for _, p := range c.Pages {
		for i := range p.Objects[1:] {
			o := &p.Objects[i+1]
			b := c.Body(p, o)
			switch o.Kind {
			case KindJS, KindCSS:
				if !bytes.HasSuffix(b, []byte(" */\n")) || bytes.Count(b, []byte("*/")) != 1 || bytes.Index(b, []byte("/*")) > 64 {
					t.Fatalf("%s: padding escapes its comment", o.Path)
				}
			case KindHTML:
				if bytes.Count(b, []byte("-->")) != 1 || !bytes.HasSuffix(b, []byte("</html>\n")) {
					t.Fatalf("%s: padding escapes its comment", o.Path)
				}
			case KindImage:
				img, format, err := image.Decode(bytes.NewReader(b))
				if err != nil {
					t.Fatalf("%s: %v", o.Path, err)
				}
				if want := strings.TrimPrefix(o.ContentType, "image/"); format != want || img.Bounds().Dx() == 0 {
					t.Fatalf("%s: decoded as %s, content type %s", o.Path, format, o.ContentType)
				}
				seen[format]++
			}
		}
	}
	if seen["png"] == 0 || seen["jpeg"] == 0 {
		t.Errorf("image formats %v, want both", seen)
	}
}

func TestJPEGPaddingSpansSegments(t *testing.T) {
	// Sizes around the 65537-byte segment limit, where off-by-one errors would show.
	for _, extra := range []int{0, 4, 5, 65536, 65537, 65538, 65541, 131074, 131075, 300000} {
		size := jpegBase() + extra
		b := jpegBody(newRNG(1, "t"), size)
		if len(b) != size {
			t.Fatalf("pad %d: %d bytes, want %d", extra, len(b), size)
		}
		if _, _, err := image.Decode(bytes.NewReader(b)); err != nil {
			t.Fatalf("pad %d: %v", extra, err)
		}
	}
}

func TestCheckOrigin(t *testing.T) {
	for _, o := range []string{"", "https://third.origin.test", "http://10.200.3.2:8080", "https://[::1]:443"} {
		if err := CheckOrigin(o); err != nil {
			t.Errorf("%q: %v", o, err)
		}
	}
	for _, o := range []string{"third.origin.test", "https://a/b", "ftp://a", "https://a?x", `https://a"><script>`,
		"https://" + strings.Repeat("z", MaxOriginLen)} {
		if err := CheckOrigin(o); err == nil {
			t.Errorf("%q accepted", o)
		}
	}
	p, _ := corpus1(t).Page("news-1")
	if _, err := corpus1(t).Landing(p, "javascript:alert(1)"); err == nil {
		t.Error("Landing took a bad origin")
	}
}

func TestSplit(t *testing.T) {
	cases := []struct {
		total   int
		weights []float64
		mins    []int
		want    []int
	}{
		{10, []float64{1, 1, 1}, []int{0, 0, 0}, []int{4, 3, 3}},
		{100, []float64{3, 1}, []int{10, 10}, []int{70, 30}},
		{7, []float64{0, 0}, []int{3, 4}, []int{3, 4}},
		{5, []float64{1, 2}, []int{0, 0}, []int{2, 3}},
	}
	for _, c := range cases {
		got, err := split(c.total, c.weights, c.mins)
		if err != nil || !slicesEqual(got, c.want) {
			t.Errorf("split(%d, %v, %v) = %v, %v; want %v", c.total, c.weights, c.mins, got, err, c.want)
		}
	}
	if _, err := split(5, []float64{1, 1}, []int{3, 3}); err == nil {
		t.Error("split accepted mins above the total")
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMixedSites(t *testing.T) {
	c := corpus1(t)
	want := map[string]struct {
		host, path, proto string
		bytes, objects    int
	}{
		"news-list":      {"news.origin.test", "/", ProtoH2, 60000, 19},
		"news-gallery-1": {"news.origin.test", "/gallery/1", ProtoH2, 3000000, 43},
		"shop-list":      {"shop.origin.test", "/list/1", ProtoH2, 80000, 31},
		"shop-product-1": {"shop.origin.test", "/product/1", ProtoH2, 1500000, 17},
		"forum-album-1":  {"forum.origin.test", "/album/1", ProtoHTTP1, 2000000, 29},
	}
	var small, large int
	for _, p := range c.Pages {
		if p.Set != "mixed" {
			continue
		}
		if p.Bytes() < 200000 {
			small++
		}
		if p.Bytes() >= 1000000 {
			large++
		}
		w, ok := want[p.Name]
		if !ok {
			continue
		}
		if p.Host != w.host || p.Path() != w.path || p.Proto != w.proto || p.Bytes() != w.bytes || len(p.Objects) != w.objects {
			t.Errorf("%s: %s%s %s, %d bytes, %d objects; want %+v", p.Name, p.Host, p.Path(), p.Proto, p.Bytes(), len(p.Objects), w)
		}
		// Served at its own address and at /p/<name>/; its objects everywhere by path.
		if q, o, ok := c.LookupHost(p.Host, p.Path()); !ok || q != p || o.Index != 0 {
			t.Errorf("%s: not at https://%s%s", p.Name, p.Host, p.Path())
		}
		if q, _, ok := c.LookupHost("origin.test", "/p/"+p.Name+"/"); !ok || q != p {
			t.Errorf("%s: not at /p/%s/", p.Name, p.Name)
		}
		if q, o, ok := c.LookupHost("third.origin.test", p.Objects[3].Path); !ok || q != p || o.Index != 3 {
			t.Errorf("%s: object 3 not found by path", p.Name)
		}
	}
	if small < 4 || large < 4 {
		t.Errorf("mixed sites: %d pages under 200 kB, %d of 1 MB or more; want both sides of the lines", small, large)
	}
	if _, _, ok := c.LookupHost("shop.origin.test", "/"); ok {
		t.Error("shop.origin.test serves news.origin.test's \"/\"")
	}
	hosts := c.Hosts()
	if len(hosts) != 6+25+3 || hosts[len(hosts)-1] != "forum.origin.test" {
		t.Errorf("hosts %v", hosts)
	}
}

func TestSiteFileErrors(t *testing.T) {
	page := `{"name": "p1", "path": "/a", "bytes": 50000, "objects": {"html": 1, "image": 2}}`
	site := func(host, proto, pages string) string {
		return `{"sites": [{"host": "` + host + `", "proto": "` + proto + `", "source": "s", "pages": [` + pages + `]}]}`
	}
	cases := []struct{ name, json, want string }{
		{"no sites", `{"sites": []}`, "sites: none"},
		{"unknown field", `{"sites": [], "extra": 1}`, "unknown field"},
		{"trailing data", site("a.test", "h2", page) + `{}`, "data after"},
		{"one-label host", site("localhost", "h2", page), "two labels"},
		{"upper-case host", site("A.test", "h2", page), "label"},
		{"testbed host", site("third.origin.test", "h2", page), "testbed's own name"},
		{"bad proto", site("a.test", "h3", page), "proto"},
		{"no source", `{"sites": [{"host": "a.test", "pages": [` + page + `]}]}`, "source"},
		{"bad share", `{"sites": [{"host": "a.test", "source": "s", "third_party_share": 1.5, "pages": [` + page + `]}]}`, "third_party_share"},
		{"no pages", site("a.test", "h2", ""), "pages: 0"},
		{"reserved name", site("a.test", "h2", strings.Replace(page, `"p1"`, `"large"`, 1)), "name"},
		{"relative path", site("a.test", "h2", strings.Replace(page, `"/a"`, `"a"`, 1)), "path"},
		{"query in path", site("a.test", "h2", strings.Replace(page, `"/a"`, `"/a?x=1"`, 1)), "path"},
		{"dot-dot path", site("a.test", "h2", strings.Replace(page, `"/a"`, `"/x/../a"`, 1)), "path"},
		{"object path space", site("a.test", "h2", strings.Replace(page, `"/a"`, `"/p/x"`, 1)), "path"},
		{"download path space", site("a.test", "h2", strings.Replace(page, `"/a"`, `"/dl/x"`, 1)), "path"},
		{"same path twice", site("a.test", "h2", page+","+strings.Replace(page, `"p1"`, `"p2"`, 1)), "another page's"},
		{"zero bytes", site("a.test", "h2", strings.Replace(page, "50000", "0", 1)), "bytes"},
		{"absurd bytes", site("a.test", "h2", strings.Replace(page, "50000", "1e12", 1)), "bytes"},
		{"no landing", site("a.test", "h2", strings.Replace(page, `"html": 1`, `"html": 0`, 1)), "objects"},
		{"negative count", site("a.test", "h2", strings.Replace(page, `"image": 2`, `"image": -2`, 1)), "objects"},
		{"host twice", `{"sites": [` + strings.Repeat(`{"host": "a.test", "source": "s", "pages": [`+page+`]},`, 1) +
			`{"host": "a.test", "source": "s", "pages": [` + strings.Replace(page, "p1", "p2", 1) + `]}]}`, "listed twice"},
	}
	for _, c := range cases {
		_, err := ParseSiteFile(strings.NewReader(c.json), "f.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "f.json: ") {
			t.Errorf("%s: %v, want an error naming f.json and %q", c.name, err, c.want)
		}
	}
	// Accepted files can still clash with the corpus when laid out.
	clash := []struct{ name, json, want string }{
		{"page name taken", site("a.test", "h2", strings.Replace(page, `"p1"`, `"wiki"`, 1)), "name is taken"},
		{"built-in site's host", site("news.origin.test", "h2", page), "one site per host"},
		{"too small for its markup", site("a.test", "h2", strings.Replace(strings.Replace(page, "50000", "300", 1), `"image": 2`, `"image": 20`, 1)), "cannot hold"},
	}
	for _, c := range clash {
		f, err := ParseSiteFile(strings.NewReader(c.json), "f.json")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := New(1, f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func FuzzParseSiteFile(f *testing.F) {
	f.Add(string(mixedJSON))
	f.Add(`{"sites": [{"host": "a.test", "source": "s", "pages": [{"name": "p", "path": "/", "bytes": 9000, "objects": {"html": 1}}]}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		sf, err := ParseSiteFile(strings.NewReader(s), "f")
		if err != nil {
			return
		}
		// Whatever passes the checks has pages within the bounds New relies on.
		for _, site := range sf.Sites {
			if CheckHost(site.Host) != nil || (site.Proto != ProtoH2 && site.Proto != ProtoHTTP1) {
				t.Fatalf("accepted site %+v", site)
			}
			for _, p := range site.Pages {
				if p.Bytes <= 0 || p.Bytes > maxPageBytes || p.Objects.HTML < 1 || !strings.HasPrefix(p.Path, "/") {
					t.Fatalf("accepted page %+v", p)
				}
			}
		}
	})
}
