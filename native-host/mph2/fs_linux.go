package mph2

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// noFollow makes an open fail on a symlink instead of following it.
const noFollow = syscall.O_NOFOLLOW

// freeSpace is what an unprivileged user may still write in dir's file system, in bytes.
func freeSpace(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}

// ownFile reports whether fi is a regular file of this process's user with no other name (a hard link someone
// else made to it would let them read or change it later).
func ownFile(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return fi.Mode().IsRegular() && ok && st.Uid == uint32(os.Geteuid()) && st.Nlink == 1
}
