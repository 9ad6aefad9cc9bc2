package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/wire"
)

// session is a running host with its port open, as Chrome holds it.
type session struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    io.ReadCloser
	frames chan []byte
	stderr *lockedBuffer
}

// lockedBuffer collects the host's stderr, written by exec's copying goroutine while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startSession(t *testing.T, env []string) *session {
	t.Helper()
	cmd := exec.Command(bin, origin)
	cmd.Env = env
	s := &session{cmd: cmd, frames: make(chan []byte, 16), stderr: &lockedBuffer{}}
	var err error
	if s.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if s.out, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := wire.NewReader(s.out, wire.MaxOut)
		for {
			p, err := r.Read()
			if err != nil {
				close(s.frames)
				return
			}
			s.frames <- p
		}
	}()
	t.Cleanup(func() {
		s.in.Close()
		timer := time.AfterFunc(5*time.Second, func() { cmd.Process.Kill() })
		cmd.Wait()
		timer.Stop()
	})
	return s
}

func (s *session) send(t *testing.T, payload string) {
	t.Helper()
	if _, err := s.in.Write(wire.Append(nil, []byte(payload))); err != nil {
		t.Fatal(err)
	}
}

func (s *session) next(t *testing.T, within time.Duration) map[string]any {
	t.Helper()
	select {
	case p, ok := <-s.frames:
		if !ok {
			t.Fatalf("host closed stdout; stderr:\n%s", s.stderr)
		}
		var m map[string]any
		if err := json.Unmarshal(p, &m); err != nil {
			t.Fatal(err)
		}
		return m
	case <-time.After(within):
		t.Fatalf("no frame within %v", within)
	}
	return nil
}

func body(m map[string]any) map[string]any {
	b, _ := m["body"].(map[string]any)
	return b
}

// Rewriting the policy file in MPSURF_MODELS reaches the extension as a push, found by the 1 s poll.
func TestPolicyPushBinary(t *testing.T) {
	dir := t.TempDir()
	base, err := os.ReadFile("../../../policy-models/baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "baseline.json")
	os.WriteFile(file, base, 0o644)
	s := startSession(t, hostEnv("MPSURF_MODELS="+dir))

	s.send(t, `{"v":1,"id":1,"type":"hello","body":{"client":"test","version":"1","protocols":[1]}}`)
	hello := s.next(t, 5*time.Second)
	if p, _ := body(hello)["policy"].(map[string]any); p["revision"] != 1.0 {
		t.Fatalf("hello %v", hello)
	}

	changed := bytes.Replace(base, []byte(`"multipath": true`), []byte(`"multipath": false`), 1)
	os.WriteFile(file+".tmp", changed, 0o644)
	os.Rename(file+".tmp", file)
	push := s.next(t, 5*time.Second)
	if push["type"] != "policy" || push["push"] != true || body(push)["revision"] != 2.0 || body(push)["multipath"] != false {
		t.Fatalf("push %v", push)
	}

	// A broken rewrite keeps revision 2 and pushes nothing; the host keeps answering.
	os.WriteFile(file+".tmp", []byte(`{"id":"x"`), 0o644)
	os.Rename(file+".tmp", file)
	time.Sleep(1500 * time.Millisecond)
	s.send(t, `{"v":1,"id":2,"type":"status"}`)
	st := s.next(t, 5*time.Second)
	if st["id"] != 2.0 || body(st)["policy"].(map[string]any)["revision"] != 2.0 {
		t.Fatalf("after a broken rewrite: %v", st)
	}
	if !strings.Contains(s.stderr.String(), "policy reload failed") {
		t.Errorf("the failed reload was not logged:\n%s", s.stderr)
	}
}

// SIGHUP re-reads the policy and, unlike its default action, does not end the host.
func TestHangUpBinary(t *testing.T) {
	dir := t.TempDir()
	base, _ := os.ReadFile("../../../policy-models/baseline.json")
	file := filepath.Join(dir, "p.json")
	os.WriteFile(file, base, 0o644)
	logFile := filepath.Join(dir, "host.log")
	s := startSession(t, hostEnv("MPSURF_POLICY="+file, "MPSURF_LOG="+logFile))
	s.send(t, `{"v":1,"id":1,"type":"status"}`)
	s.next(t, 5*time.Second)
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	s.send(t, `{"v":1,"id":2,"type":"status"}`)
	if st := s.next(t, 5*time.Second); st["id"] != 2.0 || st["ok"] != true {
		t.Fatalf("after SIGHUP: %v", st)
	}
	if s.stderr.String() != "" {
		t.Errorf("logged to stderr with MPSURF_LOG set: %s", s.stderr)
	}
	if log, _ := os.ReadFile(logFile); !strings.Contains(string(log), "policy_source="+file) {
		t.Errorf("log file:\n%s", log)
	}
}

// With stdout closed by the browser, a reply is a logged write error and an exit, not a death by SIGPIPE.
func TestClosedStdoutBinary(t *testing.T) {
	s := startSession(t, hostEnv())
	s.out.Close()
	s.send(t, `{"v":1,"id":1,"type":"status"}`)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("host still running after its stdout closed")
	}
	ws := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("killed by %v", ws.Signal())
	}
	if ws.ExitStatus() != 1 || !strings.Contains(s.stderr.String(), "broken pipe") {
		t.Errorf("exit %d, stderr:\n%s", ws.ExitStatus(), s.stderr)
	}
}
