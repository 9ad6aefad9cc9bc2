package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// writeModels writes baseline.json, changed by change, into dir; by rename, as an editor or deploy tool would.
func writeModels(t *testing.T, dir string, change func(m map[string]any)) {
	t.Helper()
	m := baseline(t)
	if change != nil {
		change(m)
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	writeRaw(t, dir, data)
}

func writeRaw(t *testing.T, dir string, data []byte) {
	t.Helper()
	tmp := filepath.Join(dir, ".baseline.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, DefaultFile)); err != nil {
		t.Fatal(err)
	}
}

// The environment's part (MPSURF_MODELS, MPSURF_POLICY): cmd/mpsurf-host TestPolicySource.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	if s, err := Resolve("", ""); err != nil || s.Kind != Embedded {
		t.Errorf("nothing set: %+v, %v", s, err)
	}
	if s, err := Resolve(dir, ""); err != nil || s.Kind != Dir || s.Path != filepath.Join(dir, DefaultFile) {
		t.Errorf("dir flag: %+v, %v", s, err)
	}
	if _, err := Resolve(dir, "x.json"); err == nil {
		t.Error("both flags accepted")
	}
	if s, err := Resolve("", "rel.json"); err != nil || s.Kind != OneFile || !filepath.IsAbs(s.Path) {
		t.Errorf("policy file: %+v, %v", s, err)
	}
}

func TestStoreReload(t *testing.T) {
	dir := t.TempDir()
	writeModels(t, dir, nil)
	src, _ := Resolve(dir, "")
	s := NewStore(src)
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if snap.Policy.Revision != 1 || *snap.Policy.Theta1 != 200000 {
		t.Fatalf("first load %+v", snap.Policy)
	}

	// Nothing changed on disk.
	if _, changed, err := s.Reload(false); changed || err != nil {
		t.Fatalf("unchanged file: changed=%v err=%v", changed, err)
	}
	// Rewritten with the same policy (only a source text differs): no new revision.
	writeModels(t, dir, func(m map[string]any) { m["sources"].(map[string]any)["multipath"] = "reworded" })
	if p, changed, err := s.Reload(false); changed || err != nil || p.Revision != 1 {
		t.Fatalf("same policy: %+v changed=%v err=%v", p, changed, err)
	}
	// A new θ1: revision 2.
	writeModels(t, dir, func(m map[string]any) { m["theta1_bytes"] = 100000 })
	p, changed, err := s.Reload(false)
	if !changed || err != nil || p.Revision != 2 || *p.Theta1 != 100000 {
		t.Fatalf("new theta1: %+v changed=%v err=%v", p, changed, err)
	}
	// A corrupt file: error, the old policy stays.
	writeRaw(t, dir, []byte(`{"id":`))
	if p, changed, err := s.Reload(false); err == nil || changed || p.Revision != 2 {
		t.Fatalf("corrupt file: %+v changed=%v err=%v", p, changed, err)
	}
	if snap, err := s.Snapshot(); err != nil || *snap.Policy.Theta1 != 100000 {
		t.Fatalf("after a failed reload: %+v, %v", snap, err)
	}
	// Removed: same.
	os.Remove(filepath.Join(dir, DefaultFile))
	if _, _, err := s.Reload(false); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("removed file: %v", err)
	}
	// Back, with multipath off: revision 3.
	writeModels(t, dir, func(m map[string]any) { m["multipath"] = false })
	if p, changed, err := s.Reload(false); !changed || err != nil || p.Revision != 3 || p.Multipath {
		t.Fatalf("file back: %+v changed=%v err=%v", p, changed, err)
	}
}

func TestStoreStartsWithoutPolicy(t *testing.T) {
	dir := t.TempDir()
	src, _ := Resolve(dir, "")
	s := NewStore(src)
	if _, err := s.Snapshot(); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, DefaultFile)) {
		t.Fatalf("missing file: %v", err)
	}
	writeRaw(t, dir, []byte(`{"id":"x","version":1,"multipath":true,"theta1_bytes":-3}`))
	if _, _, err := s.Reload(false); err == nil || !strings.HasSuffix(err.Error(), "theta1_bytes: must be 0 to 9007199254740991") {
		t.Fatalf("corrupt: %v", err)
	}
	writeModels(t, dir, nil)
	if p, changed, err := s.Reload(false); !changed || err != nil || p.Revision != 1 {
		t.Fatalf("first good load: %+v changed=%v err=%v", p, changed, err)
	}
}

// Watch pushes on a poll and on a hang-up, and logs a failing reload once.
func TestStoreWatch(t *testing.T) {
	dir := t.TempDir()
	writeModels(t, dir, nil)
	src, _ := Resolve(dir, "")
	s := NewStore(src)
	var logBuf syncBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	changes := make(chan protocol.Policy, 4)
	hup := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Watch(ctx, 20*time.Millisecond, hup, log, func(p protocol.Policy) { changes <- p })
		close(done)
	}()
	defer func() { cancel(); <-done }()

	wait := func(what string) protocol.Policy {
		t.Helper()
		select {
		case p := <-changes:
			return p
		case <-time.After(5 * time.Second):
			t.Fatalf("no push after %s", what)
		}
		return protocol.Policy{}
	}
	writeModels(t, dir, func(m map[string]any) { m["deadline_ms"] = 4000 })
	if p := wait("a rewrite"); p.Revision != 2 || p.DeadlineMS != 4000 {
		t.Fatalf("push %+v", p)
	}
	writeRaw(t, dir, []byte(`nope`))
	time.Sleep(150 * time.Millisecond) // several polls
	if n := strings.Count(logBuf.String(), "policy reload failed"); n != 1 {
		t.Errorf("the failing reload was logged %d times, want once:\n%s", n, logBuf.String())
	}
	select {
	case p := <-changes:
		t.Fatalf("push after a failed reload: %+v", p)
	default:
	}

}

// With polling off, only a hang-up (SIGHUP in the host) picks up a rewrite.
func TestStoreWatchHangUp(t *testing.T) {
	dir := t.TempDir()
	writeModels(t, dir, nil)
	src, _ := Resolve(dir, "")
	s := NewStore(src)
	changes := make(chan protocol.Policy, 4)
	hup := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Watch(ctx, 0, hup, slog.New(slog.DiscardHandler), func(p protocol.Policy) { changes <- p })
		close(done)
	}()
	defer func() { cancel(); <-done }()

	writeModels(t, dir, func(m map[string]any) { m["deadline_ms"] = 5000 })
	select {
	case p := <-changes:
		t.Fatalf("push without polling or a hang-up: %+v", p)
	case <-time.After(100 * time.Millisecond):
	}
	hup <- struct{}{}
	select {
	case p := <-changes:
		if p.Revision != 2 || p.DeadlineMS != 5000 {
			t.Fatalf("push %+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no push after a hang-up")
	}
}

// A hang-up reloads the embedded copy too, and an unchanged policy pushes nothing.
func TestStoreWatchEmbedded(t *testing.T) {
	s := NewStore(EmbeddedSource())
	hup := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	pushed := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		s.Watch(ctx, time.Millisecond, hup, slog.New(slog.DiscardHandler), func(protocol.Policy) { pushed <- struct{}{} })
		close(done)
	}()
	hup <- struct{}{}
	hup <- struct{}{} // the second send returns only after the first reload finished
	cancel()
	<-done
	if len(pushed) != 0 {
		t.Fatal("push without a change")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
