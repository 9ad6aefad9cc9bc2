package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses shared by every command.
const (
	OK     = 0
	Failed = 1
	Usage  = 2 // the Go flag package's status for a command-line mistake
)

// UsageError is a command-line mistake: reported in one line, exit status 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError; line breaks in the message become spaces, so that it stays one line.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: oneLine(fmt.Sprintf(format, args...))}
}

func oneLine(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s))
}

// Flags returns a FlagSet named as a user types the command ("mpsurf-host status") that prints nothing itself:
// Parse and Exit do the reporting.
func Flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// IsHelp reports whether a is one of the spellings of help the flag package knows.
func IsHelp(a string) bool {
	return a == "-h" || a == "--h" || a == "-help" || a == "--help"
}

// WantsHelp reports whether args ask for help before any "--": a dispatcher answers that for every subcommand,
// whether or not it has flags of its own.
func WantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if IsHelp(a) {
			return true
		}
	}
	return false
}

// Parse parses args into fs the flag package's way, up to the first positional argument (left in fs.Args()).
// It returns flag.ErrHelp for a help flag and a UsageError for any other mistake.
func Parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return Usagef("%v", err)
}

// ParseNone is Parse for a command that takes flags only.
func ParseNone(fs *flag.FlagSet, args []string) error {
	if err := Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// ParseMixed parses flags placed before, between or after positional arguments ("mode mp --prefix x") and
// returns the positional ones; everything after "--" is positional.
func ParseMixed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := Parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// Exit reports err for the command name (as a user types it) and returns the exit status: 0 for nil; usage on
// stdout and 0 for flag.ErrHelp; for a UsageError one line on stderr naming --help, and 2; otherwise
// "name: err" on stderr and 1.
func Exit(err error, name, usage string, stdout, stderr io.Writer) int {
	var ue *UsageError
	switch {
	case err == nil:
		return OK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return OK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %s (%s --help shows usage)\n", name, ue.Msg, name)
		return Usage
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return Failed
}

// Described returns synopsis followed by fs's flags with their descriptions, as the flag package lists them: the
// usage of a command whose flags describe themselves.
func Described(fs *flag.FlagSet, synopsis string) string {
	var b strings.Builder
	b.WriteString(synopsis)
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	return b.String()
}
