package main

import (
	"strings"
	"testing"
)

// CLI conventions: --help prints the usage and exits 0; a bad flag or a missing --helper exits 2 with one line.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--help"}, 0, "usage:"},
		{[]string{"--seconds", "x", "--helper", "h"}, 2, "invalid value"},
		{[]string{}, 2, "--helper is required"},
	} {
		var stdout, stderr strings.Builder
		code := run(c.args, &stdout, &stderr)
		got := stdout.String() + stderr.String()
		if code != c.code || !strings.Contains(got, c.out) || (code != 0 && strings.Count(stderr.String(), "\n") != 1) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", c.args, code, got, c.code, c.out)
		}
	}
}
