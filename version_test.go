package mpsurf

import (
	"regexp"
	"testing"
)

// The version is package.json's, and a Debian version can carry it as it is (digits and dots, a leading digit).
func TestVersion(t *testing.T) {
	if v := Version(); !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(v) {
		t.Fatalf("package.json version %q is not MAJOR.MINOR.PATCH", v)
	}
}
