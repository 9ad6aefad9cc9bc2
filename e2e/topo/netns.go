//go:build linux

package topo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/netns"
	"golang.org/x/sys/unix"
)

// openTUN creates TUN device ifname in netns ns and returns its fd
// (non-blocking, close-on-exec). The device exists as long as the fd is open,
// so a killed testbed leaves no TUN device behind.
func openTUN(ns, ifname string) (int, error) {
	fd := -1
	err := netns.RunNamed(ns, func() error {
		// /dev/net/tun binds the device to the netns of the opener.
		f, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(ifname)
		if err != nil {
			unix.Close(f)
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(f, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(f)
			return fmt.Errorf("TUNSETIFF %s: %w", ifname, err)
		}
		fd = f
		return nil
	})
	if err != nil {
		return -1, fmt.Errorf("tun %s in %s: %w", ifname, ns, err)
	}
	return fd, nil
}

// writeSysctl sets a net.* sysctl inside netns ns. Network sysctls under
// /proc/sys/net belong to the netns of the thread that opens them.
func writeSysctl(ns, key, value string) error {
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	err := netns.RunNamed(ns, func() error {
		return os.WriteFile(path, []byte(value), 0)
	})
	if err != nil {
		return fmt.Errorf("sysctl %s=%s in %s: %w", key, value, ns, err)
	}
	return nil
}

// readSysctl reads a net.* sysctl inside netns ns.
func readSysctl(ns, key string) (string, error) {
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	var v string
	err := netns.RunNamed(ns, func() error {
		b, err := os.ReadFile(path)
		v = strings.TrimSpace(string(b))
		return err
	})
	return v, err
}

// listNetns returns the named namespaces that start with prefix + "-".
func listNetns(prefix string) ([]string, error) {
	ents, err := os.ReadDir(netns.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+"-") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// NetnsInode returns the inode of a named namespace, which identifies it in
// /proc/PID/ns/net links ("net:[INODE]").
func NetnsInode(name string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(netns.Dir, name), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// PidsInNetns returns the processes whose network namespace has the given
// inode. The calling process is never included.
func PidsInNetns(inode uint64) []int {
	ents, _ := os.ReadDir("/proc")
	want := fmt.Sprintf("net:[%d]", inode)
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/net"); err == nil && l == want {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Listen opens a listener inside netns ns; accepted connections belong to
// that namespace too.
func Listen(ns string, lc net.ListenConfig, network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := netns.RunNamed(ns, func() error {
		var err error
		ln, err = lc.Listen(context.Background(), network, addr)
		return err
	})
	return ln, err
}

// Dial connects from inside netns ns.
func Dial(ns string, d net.Dialer, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := netns.RunNamed(ns, func() error {
		var err error
		c, err = d.Dial(network, addr)
		return err
	})
	return c, err
}
