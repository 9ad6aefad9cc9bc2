//go:build !linux

package mph2

import "os"

// noFollow: no portable flag here; the Linux build refuses symlinks.
const noFollow = 0

// freeSpace is not known here: only the announced size bounds a download.
func freeSpace(string) (int64, bool) { return 0, false }

// ownFile: ownership is checked on Linux only; elsewhere a regular file passes.
func ownFile(fi os.FileInfo) bool { return fi.Mode().IsRegular() }
