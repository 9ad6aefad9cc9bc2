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

// A record the helper did not write is refused whole: nothing in it is carried out. The stand-in sysctl directory
// sits beside a canary that a key escaping it would reach.
func TestJournalRefusesForgedRecords(t *testing.T) {
	entry := func(fields string) string {
		return `{"version":1,"pid":1,"entries":[` + fields + `]}`
	}
	long := strings.Repeat("1", maxPriorLen+1)
	many := strings.Repeat(`{"scope":"lease","kind":"endpoint","id":1},`, maxEntries) + `{"scope":"lease","kind":"endpoint","id":2}`
	for _, c := range []struct{ name, record, want string }{
		{"key leaving the directory", entry(`{"scope":"lease","kind":"sysctl","key":"../canary","prior":"1"}`), "not one the helper changes"},
		{"absolute key", entry(`{"scope":"lease","kind":"sysctl","key":"/etc/passwd","prior":"1"}`), "not one the helper changes"},
		{"another net sysctl", entry(`{"scope":"lease","kind":"sysctl","key":"ip_forward","prior":"1"}`), "not one the helper changes"},
		{"value with a newline", entry(`{"scope":"lease","kind":"sysctl","key":"enabled","prior":"1\n0"}`), "prior value"},
		{"value too long", entry(`{"scope":"lease","kind":"sysctl","key":"enabled","prior":"` + long + `"}`), "prior value"},
		{"empty value", entry(`{"scope":"lease","kind":"sysctl","key":"enabled","prior":""}`), "prior value"},
		{"unknown kind", entry(`{"scope":"lease","kind":"shell","key":"enabled","prior":"1"}`), "kind"},
		{"unknown scope", entry(`{"scope":"forever","kind":"sysctl","key":"enabled","prior":"1"}`), "scope"},
		{"unknown field", entry(`{"scope":"lease","kind":"sysctl","key":"enabled","prior":"1","path":"/x"}`), "unknown field"},
		{"endpoint without id", entry(`{"scope":"lease","kind":"endpoint"}`), "no ID"},
		{"endpoint bad address", entry(`{"scope":"lease","kind":"endpoint","id":3,"present":true,"addr":"10.0.0.300"}`), "address"},
		{"endpoint bad flags", entry(`{"scope":"lease","kind":"endpoint","id":3,"present":true,"addr":"10.0.0.3","flags":4096}`), "flags"},
		{"sysctl twice", entry(`{"scope":"lease","kind":"sysctl","key":"enabled","prior":"1"},{"scope":"lease","kind":"sysctl","key":"enabled","prior":"0"}`), "twice"},
		{"too many entries", entry(many), "entries, at most"},
		{"other version", `{"version":2,"pid":1,"entries":[]}`, "version 2"},
		{"trailing data", entry(``) + `{}`, "data after"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			state, sys := filepath.Join(root, "state"), filepath.Join(root, "sys")
			os.Mkdir(state, 0o700)
			os.Mkdir(sys, 0o755)
			os.WriteFile(filepath.Join(sys, "enabled"), []byte("1\n"), 0o644)
			os.WriteFile(filepath.Join(root, "canary"), []byte("0\n"), 0o644)
			os.WriteFile(filepath.Join(state, UndoFile), []byte(c.record), 0o600)
			_, _, err := OpenJournal(state, sys)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was restored") {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			for _, f := range []string{filepath.Join(root, "canary"), filepath.Join(sys, "enabled")} {
				if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) == "" || (f == filepath.Join(sys, "enabled") && string(b) != "1\n") || (strings.HasSuffix(f, "canary") && string(b) != "0\n") {
					t.Fatalf("%s changed to %q", f, b)
				}
			}
		})
	}
	// A name SetSysctl would take is one of the helper's own, with a plain value.
	state, sys := t.TempDir(), t.TempDir()
	j, _, err := OpenJournal(state, sys)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"../x", "0"}, {"ip_forward", "1"}, {"enabled", "1\n0"}, {"enabled", ""}} {
		if err := j.SetSysctl(ScopeLease, kv[0], kv[1]); err == nil {
			t.Errorf("SetSysctl(%q, %q) accepted", kv[0], kv[1])
		}
	}
}

// FuzzUndoRecord: whatever bytes are in the undo record, a record the helper takes holds valid entries only: MPTCP
// sysctls it changes with plain values, endpoints with their fields in range (TestJournalRefusesForgedRecords shows
// that a refused record changes nothing).
func FuzzUndoRecord(f *testing.F) {
	f.Add([]byte(`{"version":1,"pid":1,"entries":[{"scope":"lease","kind":"sysctl","key":"enabled","prior":"1"}]}`))
	f.Add([]byte(`{"version":1,"pid":1,"entries":[{"scope":"session","kind":"sysctl","key":"../canary","prior":"1"}]}`))
	f.Add([]byte(`{"version":1,"pid":1,"entries":[{"scope":"lease","kind":"endpoint","id":3,"present":true,"addr":"192.0.2.3","flags":2}]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseRecord("undo.json", b)
		if err != nil {
			if !strings.Contains(err.Error(), "nothing was restored") {
				t.Fatalf("refusal without saying so: %v", err)
			}
			return
		}
		if len(entries) > maxEntries {
			t.Fatalf("%d entries taken", len(entries))
		}
		for _, e := range entries {
			if cerr := e.check(); cerr != nil {
				t.Fatalf("took an invalid entry %+v: %v", e, cerr)
			}
			if e.Kind == "sysctl" && (!undoableSysctl(e.Key) || !sysctlValue(e.Prior)) {
				t.Fatalf("took sysctl %q=%q", e.Key, e.Prior)
			}
		}
	})
}
