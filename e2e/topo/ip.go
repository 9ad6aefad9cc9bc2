//go:build linux

package topo

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ipTimeout bounds one iproute2 call; none should take more than a moment.
const ipTimeout = 10 * time.Second

// ip runs iproute2 with args and returns its standard output; the error
// carries the command line and iproute2's message.
func ip(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return out.String(), fmt.Errorf("ip %s: %s", strings.Join(args, " "), msg)
	}
	return out.String(), nil
}

// ipNS runs iproute2 inside netns ns.
func ipNS(ns string, args ...string) (string, error) {
	return ip(append([]string{"-n", ns}, args...)...)
}
