package mph2

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// smallDisk mounts a tmpfs of size bytes for the test: a real file system that fills up.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// On a disk with 1 MiB free, a 2 MiB download fails at its first response when the server says the size, and
// stops at what the disk holds when it does not (no size announced either: `fetch` without --size). Either way it
// fails with the reason and leaves nothing behind, instead of filling the disk to its last byte.
func TestIntegrationFetchDiskFree(t *testing.T) {
	dir := smallDisk(t, "1m")
	body := object(2<<20, 41)
	for _, stated := range []bool{true, false} {
		name := map[bool]string{true: "size stated", false: "size unstated"}[stated]
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t, body, true)
			var sent atomic.Int64
			if !stated {
				ts.hook = serveUnstated(body, &sent)
			}
			o := ts.options(t, 1)
			o.HTTP1 = true
			o.Out = filepath.Join(dir, "f.bin")
			_, err := Fetch(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), "free") {
				t.Fatalf("err %v, want a refusal naming the free space", err)
			}
			noneLeft(t, o.Out, o.Out+PartSuffix, o.Out+SidecarSuffix)
		})
	}
}
