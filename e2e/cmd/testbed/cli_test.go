//go:build linux

package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/cli/clitest"
)

// Every command of the table, run by the real main in a child process, follows the conventions of package cli
// (no root needed: nothing is brought up).
func TestCommandsFollowConventions(t *testing.T) {
	subs := [][]string{nil}
	for _, c := range commands() {
		subs = append(subs, []string{c.name})
	}
	clitest.Check(t, func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		cmd := testbedCmd(args...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}, subs)
}

func TestUsageListsEveryCommand(t *testing.T) {
	all := usage()
	for _, c := range commands() {
		synopsis, _, _ := strings.Cut(c.usage, "\n")
		if !strings.HasPrefix(synopsis, c.name) || !strings.Contains(all, "  "+synopsis+"\n") {
			t.Errorf("%s: synopsis %q missing from the usage or not starting with the name", c.name, synopsis)
		}
	}
}
