//go:build linux

package actuate

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// testNS is a named network namespace created for one test and deleted by its cleanup.
type testNS struct {
	name string
	fd   int
}

// needRoot skips when the test cannot create namespaces or the kernel lacks MPTCP.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := os.Stat("/proc/sys/net/mptcp/enabled"); err != nil {
		t.Skip("kernel without MPTCP (no /proc/sys/net/mptcp)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 not installed")
	}
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func newNS(t *testing.T, tag string) *testNS {
	t.Helper()
	name := fmt.Sprintf("mpsac-%d-%s", os.Getpid(), tag)
	run(t, "ip", "netns", "add", name)
	fd, err := unix.Open(filepath.Join("/run/netns", name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		exec.Command("ip", "netns", "del", name).Run()
		t.Fatal(err)
	}
	ns := &testNS{name: name, fd: fd}
	t.Cleanup(func() {
		unix.Close(fd)
		exec.Command("ip", "netns", "del", name).Run()
	})
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return ns
}

// in runs fn on a thread inside the namespace.
func (ns *testNS) in(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- err
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(ns.fd, unix.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			done <- errors.Join(ferr, err) // thread stays locked and dies with the goroutine
			return
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}

func (ns *testNS) sysctl(t *testing.T, key, value string) {
	t.Helper()
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	if err := ns.in(func() error { return os.WriteFile(path, []byte(value), 0) }); err != nil {
		t.Fatalf("sysctl %s=%s in %s: %v", key, value, ns.name, err)
	}
}

// vethPair links a and b with a veth pair named after idx, with 10.77.idx.1/24 in a and .2 in b.
func vethPair(t *testing.T, a, b *testNS, idx int) {
	t.Helper()
	ca, cb := fmt.Sprintf("va%d", idx), fmt.Sprintf("vb%d", idx)
	run(t, "ip", "-n", a.name, "link", "add", ca, "type", "veth", "peer", "name", cb, "netns", b.name)
	run(t, "ip", "-n", a.name, "addr", "add", fmt.Sprintf("10.77.%d.1/24", idx), "dev", ca)
	run(t, "ip", "-n", b.name, "addr", "add", fmt.Sprintf("10.77.%d.2/24", idx), "dev", cb)
	run(t, "ip", "-n", a.name, "link", "set", ca, "up")
	run(t, "ip", "-n", b.name, "link", "set", cb, "up")
}
