package actuate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The journal logic on a stand-in sysctl directory: prior values survive a "crash" and come back.
func TestJournalRestoresAfterCrash(t *testing.T) {
	state, sys := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(sys, "enabled"), []byte("1\n"), 0o644)
	os.WriteFile(filepath.Join(sys, "path_manager"), []byte("kernel\n"), 0o644)
	j, left, err := OpenJournal(state, sys)
	if err != nil || len(left) != 0 {
		t.Fatal(left, err)
	}
	if err := j.SetSysctl(ScopeSession, "path_manager", "userspace"); err != nil {
		t.Fatal(err)
	}
	if err := j.SetSysctl(ScopeLease, "enabled", "0"); err != nil {
		t.Fatal(err)
	}
	if err := j.SetSysctl(ScopeLease, "enabled", "1"); err != nil {
		t.Fatal(err)
	}
	if err := j.SetSysctl(ScopeLease, "enabled", "0"); err != nil {
		t.Fatal(err)
	}
	if err := j.SetSysctl(ScopeLease, "../x", "0"); err == nil {
		t.Fatal("path in sysctl name accepted")
	}
	read := func(k string) string {
		b, _ := os.ReadFile(filepath.Join(sys, k))
		return strings.TrimSpace(string(b))
	}
	// Lease over: only the lease entry goes back.
	if err := j.Restore(ScopeLease); err != nil {
		t.Fatal(err)
	}
	if read("enabled") != "1" || read("path_manager") != "userspace" || j.Pending() != 1 {
		t.Fatalf("after lease restore: enabled %s pm %s pending %d", read("enabled"), read("path_manager"), j.Pending())
	}
	// Crash: a new journal on the same directory restores the rest at open.
	j.SetSysctl(ScopeLease, "enabled", "0")
	_, left, err = OpenJournal(state, sys)
	if err != nil || len(left) != 2 {
		t.Fatal(left, err)
	}
	if read("enabled") != "1" || read("path_manager") != "kernel" {
		t.Fatalf("after crash restore: enabled %s pm %s", read("enabled"), read("path_manager"))
	}
	if _, err := os.Stat(filepath.Join(state, UndoFile)); !os.IsNotExist(err) {
		t.Fatalf("undo record left after a full restore: %v", err)
	}
}

func TestJournalCorruptRecord(t *testing.T) {
	state := t.TempDir()
	os.WriteFile(filepath.Join(state, UndoFile), []byte("{"), 0o600)
	if _, _, err := OpenJournal(state, t.TempDir()); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt record: %v", err)
	}
}
