//go:build linux

package topo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lockPath is the file an instance holds an exclusive flock on while it runs.
// The kernel drops the lock when the process dies, so a killed instance
// never blocks the next one.
func lockPath(prefix string) string { return filepath.Join(RunDir, prefix+".lock") }

// acquire takes the instance lock for prefix or reports who holds it.
func acquire(prefix string) (*os.File, error) {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return nil, err
	}
	path := lockPath(prefix)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				pid, _ := ownerPid(prefix)
				return nil, fmt.Errorf("testbed %q is already running (pid %d); stop it with `testbed down`", prefix, pid)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		// The holder removes the file when it releases the lock; if that
		// happened between our open and flock, we hold a lock on a file
		// nobody else can find: start over.
		var fst, pst unix.Stat_t
		if unix.Fstat(int(f.Fd()), &fst) == nil && unix.Stat(path, &pst) == nil && fst.Ino == pst.Ino {
			f.Truncate(0)
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			return f, nil
		}
		f.Close()
	}
}

// release removes the lock file and drops the lock, in that order, so that
// lock files do not pile up in RunDir.
func release(f *os.File) error {
	if f == nil {
		return nil
	}
	os.Remove(f.Name())
	return f.Close()
}

// ownerPid returns the pid written by the last instance that took the lock.
func ownerPid(prefix string) (int, error) {
	b, err := os.ReadFile(lockPath(prefix))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// Running reports whether a live instance holds the lock for prefix, and
// its pid.
func Running(prefix string) (bool, int) {
	f, err := os.OpenFile(lockPath(prefix), os.O_RDWR, 0)
	if err != nil {
		return false, 0
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return false, 0
	}
	pid, _ := ownerPid(prefix)
	return true, pid
}

// Down stops a running instance (SIGTERM, then SIGKILL after timeout) and
// removes every namespace named prefix-*. It succeeds when there is nothing
// to remove.
func Down(prefix string, timeout time.Duration) error {
	if err := ValidPrefix(prefix); err != nil {
		return err
	}
	if running, pid := Running(prefix); running && pid > 0 && pid != os.Getpid() {
		syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(timeout)
		for time.Now().Before(deadline) {
			if r, _ := Running(prefix); !r {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if r, _ := Running(prefix); r {
			syscall.Kill(pid, syscall.SIGKILL)
			time.Sleep(200 * time.Millisecond)
		}
	}
	lock, err := acquire(prefix)
	if err != nil {
		return err
	}
	defer release(lock)
	return removeNamespaces(prefix)
}
