package origin

import (
	"bytes"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/cli/clitest"
)

// Every subcommand of the table follows the conventions of package cli.
func TestSubcommandsFollowConventions(t *testing.T) {
	subs := [][]string{nil}
	for _, c := range Subcommands() {
		subs = append(subs, []string{c.Name})
	}
	clitest.Check(t, func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(args, &out, &errb)
		return code, out.String(), errb.String()
	}, subs)
}
