package actuate

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The helper's files: its state directory (undo record, audit log) and socket, and the MPTCP sysctls. Every open
// refuses a symlink in the last component (O_NOFOLLOW), and the state directory must be the helper's own and
// writable by no one else: whoever could write there could forge the undo record that the helper, with
// CAP_NET_ADMIN, carries out at its next start.

// checkDir makes dir (mode 0700, parents 0755) if it is missing, then checks that it is a directory and not a
// symlink, owned by the helper's effective uid, and writable by neither group nor others.
func checkDir(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return err
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return checkOwn(dir, true, false)
}

// checkOwn refuses path unless it is a directory (dir) or a regular file, not a symlink, owned by the effective
// uid (or root, when rootOK: a socket directory such as /run/mpsurf made by root for the unit) and writable by
// neither group nor others.
func checkOwn(path string, dir, rootOK bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	return checkInfo(path, fi, dir, rootOK)
}

func checkInfo(path string, fi fs.FileInfo, dir, rootOK bool) error {
	kind := "a regular file"
	ok := fi.Mode().IsRegular()
	if dir {
		kind, ok = "a directory", fi.IsDir()
	}
	if !ok {
		return fmt.Errorf("%s is not %s (mode %s): refusing it", path, kind, fi.Mode().Type())
	}
	st, sok := fi.Sys().(*syscall.Stat_t)
	if !sok {
		return fmt.Errorf("%s: no owner information", path)
	}
	if me := uint32(os.Geteuid()); st.Uid != me && !(rootOK && st.Uid == 0) {
		return fmt.Errorf("%s is owned by uid %d, not the helper's uid %d: refusing it", path, st.Uid, me)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by group or others (mode %04o): refusing it", path, fi.Mode().Perm())
	}
	return nil
}

// openOwn opens a file of the state directory without following a symlink and checks it as checkOwn does.
func openOwn(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink: refusing it", path)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkInfo(path, fi, false, false)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readOwn reads at most limit bytes of a state file (openOwn); a larger file is refused.
func readOwn(path string, limit int64) ([]byte, error) {
	f, err := openOwn(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes: refusing it", path, limit)
	}
	return b, nil
}

// writeSysctl writes one sysctl file, never through a symlink.
func writeSysctl(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(value)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readSysctl reads one sysctl file, never through a symlink.
func readSysctl(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}

// prepareSocket checks the socket's directory (the helper's own or root's, writable by no one else) and removes a
// stale socket a crash left, refusing to remove anything that is not a socket.
func prepareSocket(path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := checkOwn(dir, true, true); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("%s exists and is not a socket (mode %s): refusing to replace it", path, fi.Mode().Type())
	}
	return os.Remove(path)
}
