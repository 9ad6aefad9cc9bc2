// Package clitest checks a command against package cli's conventions, for the tests of every MPSurf command:
// each of its subcommands, as the command's own table lists them, answers -h and --help with a usage on stdout
// and exit status 0, and a flag it does not know with one line on stderr and exit status 2.
package clitest

import (
	"strings"
	"testing"
)

// Run runs the command under test with args and returns its exit status and output.
type Run func(args ...string) (code int, stdout, stderr string)

// BadFlag is a flag no command defines.
const BadFlag = "--no-such-flag-here"

// Check runs every subcommand (the words that name it; nil or empty for a command without subcommands) with
// -h, --help and BadFlag.
func Check(t *testing.T, run Run, subcommands [][]string) {
	t.Helper()
	if len(subcommands) == 0 {
		subcommands = [][]string{nil}
	}
	for _, words := range subcommands {
		for _, h := range []string{"-h", "--help"} {
			args := append(append([]string{}, words...), h)
			code, out, errOut := run(args...)
			first, _, _ := strings.Cut(out, "\n")
			if code != 0 || !strings.HasPrefix(first, "usage:") || errOut != "" {
				t.Errorf("%q: exit %d, stdout starting %q, stderr %q; want 0, a first line \"usage:...\", nothing",
					args, code, first, errOut)
			}
		}
		args := append(append([]string{}, words...), BadFlag)
		code, out, errOut := run(args...)
		if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") || out != "" ||
			!strings.Contains(errOut, strings.TrimLeft(BadFlag, "-")) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing, one line naming the flag", args, code, out, errOut)
		}
	}
}
