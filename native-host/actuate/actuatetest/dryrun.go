package actuatetest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/actuate"
)

// DryRun starts the helper with its dry-run backend for the test, serving this process's uid on a socket in a
// temporary directory, and returns the socket's path; the test's cleanup stops it. Rate and burst 0 are the
// helper's defaults.
func DryRun(t testing.TB, rate, burst float64, log *slog.Logger) string {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "a.sock")
	srv, err := actuate.Start(actuate.Config{Socket: sock, StateDir: filepath.Join(dir, "state"), Backend: actuate.BackendDryRun,
		AllowUIDs: []uint32{uint32(os.Getuid())}, Log: log, SysctlDir: dir, Rate: rate, Burst: burst})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}
