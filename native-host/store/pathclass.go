package store

import (
	"strings"
	"unicode"
)

// Path classes group a site's pages that are alike in size: the URL path with its identifiers taken out, so that
// /article/1 and /article/2 share what was learned, while / and /gallery/1 do not.
const (
	maxClassSegments = 4   // deeper paths share the class of their first four segments
	maxClassLen      = 256 // bytes of a class
)

// PathClass returns the class of a URL path (no query or fragment): each segment lower-cased; a segment of digits,
// a UUID, a hexadecimal hash or a long token mixing letters and digits becomes ":id"; digit runs inside other
// segments become ":n" ("page-12" and "page-7" match); at most four segments. "" and "/" are the root, "/".
func PathClass(path string) string {
	var segs []string
	for _, s := range strings.Split(path, "/") {
		if s == "" || s == "." {
			continue
		}
		if len(segs) == maxClassSegments {
			segs = append(segs, "*")
			break
		}
		segs = append(segs, classSegment(strings.ToLower(s)))
	}
	c := "/" + strings.Join(segs, "/")
	if len(c) > maxClassLen {
		c = c[:maxClassLen]
	}
	return c
}

func classSegment(s string) string {
	digits, letters, hex := 0, 0, 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
			hex++
		case r >= 'a' && r <= 'f':
			letters++
			hex++
		case unicode.IsLetter(r):
			letters++
		}
	}
	n := len(s)
	switch {
	case digits == n:
		return ":id"
	case isUUID(s):
		return ":id"
	case hex == n && n >= 8 && digits > 0: // a hash
		return ":id"
	case n >= 16 && digits >= 4 && digits+letters >= n-2: // a token: base64 ids and the like
		return ":id"
	}
	// Digit runs inside a word: "page-12", "e3-20k", "2024-05-12-title".
	var b strings.Builder
	inRun := false
	for _, r := range s {
		if r >= '0' && r <= '9' {
			if !inRun {
				b.WriteString(":n")
				inRun = true
			}
			continue
		}
		inRun = false
		b.WriteRune(r)
	}
	return b.String()
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
				return false
			}
		}
	}
	return true
}
