//go:build linux

package nstest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mpsurf/mpsurf/native-host/netns"
)

// NS is a named network namespace created for one test and deleted by its cleanup.
type NS struct {
	Name string
	FD   int
}

// NeedRoot skips when the test cannot create namespaces or the kernel lacks MPTCP.
func NeedRoot(t *testing.T) {
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

// Run runs a command and fails the test with its output when it fails.
func Run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// New creates the namespace prefix-PID-tag with its loopback up.
func New(t *testing.T, prefix, tag string) *NS {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%s", prefix, os.Getpid(), tag)
	Run(t, "ip", "netns", "add", name)
	fd, err := unix.Open(filepath.Join("/run/netns", name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		exec.Command("ip", "netns", "del", name).Run()
		t.Fatal(err)
	}
	ns := &NS{Name: name, FD: fd}
	t.Cleanup(func() {
		unix.Close(fd)
		exec.Command("ip", "netns", "del", name).Run()
	})
	Run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return ns
}

// In runs fn on a thread inside the namespace.
func (ns *NS) In(fn func() error) error { return netns.Run(ns.FD, fn) }

// Sysctl writes key (dotted) = value inside the namespace.
func (ns *NS) Sysctl(t *testing.T, key, value string) {
	t.Helper()
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	if err := ns.In(func() error { return os.WriteFile(path, []byte(value), 0) }); err != nil {
		t.Fatalf("sysctl %s=%s in %s: %v", key, value, ns.Name, err)
	}
}

// VethPair links a and b with a veth pair named after idx, with 10.77.idx.1/24 in a and .2 in b.
func VethPair(t *testing.T, a, b *NS, idx int) {
	t.Helper()
	ca, cb := fmt.Sprintf("va%d", idx), fmt.Sprintf("vb%d", idx)
	Run(t, "ip", "-n", a.Name, "link", "add", ca, "type", "veth", "peer", "name", cb, "netns", b.Name)
	Run(t, "ip", "-n", a.Name, "addr", "add", fmt.Sprintf("10.77.%d.1/24", idx), "dev", ca)
	Run(t, "ip", "-n", b.Name, "addr", "add", fmt.Sprintf("10.77.%d.2/24", idx), "dev", cb)
	Run(t, "ip", "-n", a.Name, "link", "set", ca, "up")
	Run(t, "ip", "-n", b.Name, "link", "set", cb, "up")
}

// ListenMPTCP opens an IPv4 MPTCP listener on an ephemeral port inside the namespace, closed at cleanup.
func (ns *NS) ListenMPTCP(t *testing.T) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := ns.In(func() (err error) {
		lc := net.ListenConfig{}
		lc.SetMultipathTCP(true)
		ln, err = lc.Listen(context.Background(), "tcp4", "0.0.0.0:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// DialMPTCP connects with MPTCP from inside the namespace to addr ("ip:port"); the connection is closed at
// cleanup.
func (ns *NS) DialMPTCP(t *testing.T, addr string) net.Conn {
	t.Helper()
	var conn net.Conn
	if err := ns.In(func() (err error) {
		d := net.Dialer{Timeout: 3 * time.Second}
		d.SetMultipathTCP(true)
		conn, err = d.Dial("tcp4", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// SubflowLocalBackup reports whether the MPTCP subflow local -> remote in ns has the local backup flag, as the
// kernel's sock_diag reports it and ss prints it ("tcp-ulp-mptcp flags:...", where 'b' is
// MPTCP_SUBFLOW_FLAG_BKUP_LOC). It fails the test when ss shows no such subflow or no flags.
func (ns *NS) SubflowLocalBackup(t *testing.T, local, remote netip.AddrPort) bool {
	t.Helper()
	var out []byte
	if err := ns.In(func() (err error) {
		out, err = exec.Command("ss", "-tniH", "state", "established", "src", local.String(), "dst", remote.String()).Output()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(out), "tcp-ulp-mptcp")
	if i < 0 {
		t.Fatalf("ss shows no MPTCP subflow %s -> %s: %q", local, remote, out)
	}
	for _, f := range strings.Fields(string(out[i:])) {
		if flags, ok := strings.CutPrefix(f, "flags:"); ok {
			return strings.Contains(flags, "b")
		}
	}
	t.Fatalf("ss shows no subflow flags for %s -> %s: %q", local, remote, out)
	return false
}

// ThrowawayUID returns a uid that no account in /etc/passwd and no running process has, for a test to run a
// process as "another local user" (setpriv or syscall.Credential need no account). The cleanup kills every
// process still running as it, so nothing the test started outlives it.
func ThrowawayUID(t *testing.T) uint32 {
	t.Helper()
	passwd, _ := os.ReadFile("/etc/passwd")
	group, _ := os.ReadFile("/etc/group")
	for u := uint32(4_100_000 + os.Getpid()%100_000); ; u++ {
		id := fmt.Sprintf(":%d:", u)
		if strings.Contains(string(passwd), id) || strings.Contains(string(group), id) || len(pidsOf(u)) > 0 {
			continue
		}
		t.Cleanup(func() {
			for _, pid := range pidsOf(u) {
				unix.Kill(pid, unix.SIGKILL)
			}
		})
		return u
	}
}

// pidsOf lists the processes whose real uid is u.
func pidsOf(u uint32) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Uid:" && f[1] == fmt.Sprint(u) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// Expose copies the running test binary into dir (mode 0755) and makes dir and its parent traversable, so that
// a process of another uid can run it: the go build directory is root's alone.
func Expose(t *testing.T, dir string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, filepath.Base(exe))
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
