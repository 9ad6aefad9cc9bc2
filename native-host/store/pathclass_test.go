package store

import "testing"

func TestPathClass(t *testing.T) {
	for path, want := range map[string]string{
		"":                                 "/",
		"/":                                "/",
		"/article/1":                       "/article/:id",
		"/article/2/":                      "/article/:id",
		"/gallery/1":                       "/gallery/:id",
		"/p/e3-20k/":                       "/p/e:n-:nk",
		"/news/2024/05/12/some-title.html": "/news/:id/:id/:id/*",
		"/Product/ABC":                     "/product/abc",
		"/item/550e8400-e29b-41d4-a716-446655440000": "/item/:id",
		"/asset/9f86d081884c7d65":                    "/asset/:id",
		"/watch/dQw4w9WgXcQ":                         "/watch/dqw:nw:nwgxcq",
		"/t/AbC123dEf456GhI789":                      "/t/:id",
		"/search":                                    "/search",
		"/page-12":                                   "/page-:n",
		"/./a//b":                                    "/a/b",
	} {
		if got := PathClass(path); got != want {
			t.Errorf("PathClass(%q) = %q, want %q", path, got, want)
		}
	}
	if PathClass("/article/1") != PathClass("/article/999") || PathClass("/") == PathClass("/gallery/1") {
		t.Error("classes do not group as documented")
	}
}

func FuzzPathClass(f *testing.F) {
	f.Add("/article/1")
	f.Add("/a/b/c/d/e/f")
	f.Fuzz(func(t *testing.T, path string) {
		c := PathClass(path)
		if len(c) == 0 || c[0] != '/' || len(c) > maxClassLen {
			t.Fatalf("class %q of %q", c, path)
		}
	})
}
