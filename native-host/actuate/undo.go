package actuate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// UndoFile is the undo record's name inside the state directory.
const UndoFile = "undo.json"

// Scopes of undo entries. Lease entries are undone when the client's lease ends; session entries (the path
// manager choice made at start) only when the helper stops. A crash leaves both for the next start.
const (
	ScopeLease   = "lease"
	ScopeSession = "session"
)

// Entry is the prior state of one thing the helper changed.
type Entry struct {
	Scope string `json:"scope"`
	Kind  string `json:"kind"` // "sysctl" or "endpoint"
	// sysctl: a file name under SysctlDir and its prior content.
	Key   string `json:"key,omitempty"`
	Prior string `json:"prior,omitempty"`
	// endpoint: the prior endpoint with this ID, or none (Present false: the helper created it).
	ID      uint8  `json:"id,omitempty"`
	Present bool   `json:"present,omitempty"`
	Addr    string `json:"addr,omitempty"`
	Port    uint16 `json:"port,omitempty"`
	Flags   uint32 `json:"flags,omitempty"`
	IfIndex int32  `json:"ifindex,omitempty"`
}

// recordVersion is the undo record's format.
const recordVersion = 1

type record struct {
	Version int     `json:"version"`
	Pid     int     `json:"pid"`
	Entries []Entry `json:"entries"`
}

// Journal keeps the undo record on disk, written before each change so that a crash between the change and
// the write cannot lose a prior value. It records the first prior value per key only: that is the state to
// go back to however many changes follow.
type Journal struct {
	mu        sync.Mutex
	path      string
	sysctlDir string
	entries   []Entry
}

// SysctlDir is where the MPTCP sysctls of the calling thread's network namespace live.
const SysctlDir = "/proc/sys/net/mptcp"

// OpenJournal opens the record in dir, restoring first whatever an earlier run left there (a crash).
func OpenJournal(dir, sysctlDir string) (*Journal, []Entry, error) {
	j := &Journal{path: filepath.Join(dir, UndoFile), sysctlDir: sysctlDir}
	left, err := j.load()
	if err != nil {
		return nil, nil, err
	}
	if len(left) > 0 {
		j.entries = left
		if err := j.Restore(""); err != nil {
			return nil, left, fmt.Errorf("restoring the record a previous run left: %w", err)
		}
	}
	return j, left, nil
}

// Bounds of an undo record. The helper writes a handful of entries (the path manager, net.mptcp.enabled, an
// endpoint or two); anything larger was not written by it.
const (
	maxRecordBytes = 64 << 10
	maxEntries     = 64
	maxPriorLen    = 32
)

// undoableSysctl reports whether key is an MPTCP sysctl the helper changes: the only names an undo record may
// hold, so that a forged record cannot make the helper write anywhere else (with CAP_NET_ADMIN it could write
// every net.* sysctl).
func undoableSysctl(key string) bool {
	switch key {
	case "enabled", "path_manager", "pm_type":
		return true
	}
	return false
}

// sysctlName is a plain file name under SysctlDir: lower case letters, digits and '_'.
func sysctlName(key string) bool {
	if key == "" || len(key) > 64 {
		return false
	}
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// sysctlValue is a value the helper writes or restores: 1 to maxPriorLen of [a-z0-9_].
func sysctlValue(v string) bool { return len(v) <= maxPriorLen && sysctlName(v) }

// check validates one entry of a record read from disk.
func (e Entry) check() error {
	if e.Scope != ScopeLease && e.Scope != ScopeSession {
		return fmt.Errorf("scope %.20q", e.Scope)
	}
	switch e.Kind {
	case "sysctl":
		if !undoableSysctl(e.Key) {
			return fmt.Errorf("sysctl %.80q is not one the helper changes", e.Key)
		}
		if !sysctlValue(e.Prior) {
			return fmt.Errorf("sysctl %s: prior value %.40q", e.Key, e.Prior)
		}
		if e.ID != 0 || e.Present || e.Addr != "" || e.Port != 0 || e.Flags != 0 || e.IfIndex != 0 {
			return fmt.Errorf("sysctl %s with endpoint fields", e.Key)
		}
	case "endpoint":
		if e.ID == 0 || e.Key != "" || e.Prior != "" {
			return fmt.Errorf("endpoint %d with sysctl fields or no ID", e.ID)
		}
		if !e.Present {
			if e.Addr != "" || e.Port != 0 || e.Flags != 0 || e.IfIndex != 0 {
				return fmt.Errorf("absent endpoint %d with an address", e.ID)
			}
			return nil
		}
		if a, err := netip.ParseAddr(e.Addr); err != nil || a.Zone() != "" {
			return fmt.Errorf("endpoint %d: address %.60q", e.ID, e.Addr)
		}
		if e.Flags > 0xff || e.IfIndex < 0 {
			return fmt.Errorf("endpoint %d: flags %#x ifindex %d", e.ID, e.Flags, e.IfIndex)
		}
	default:
		return fmt.Errorf("kind %.20q", e.Kind)
	}
	return nil
}

// load reads the record a previous run left, if any. It refuses the whole record, restoring nothing from it,
// unless it is the helper's own file (not a symlink, its owner, writable by no one else), at most
// maxRecordBytes of one known version with at most maxEntries valid, distinct entries.
func (j *Journal) load() ([]Entry, error) {
	b, err := readOwn(j.path, maxRecordBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("undo record: %w; nothing was restored from it", err)
	}
	return parseRecord(j.path, b)
}

// parseRecord decodes and checks an undo record's bytes (load).
func parseRecord(path string, b []byte) ([]Entry, error) {
	var r record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	refuse := func(format string, args ...any) ([]Entry, error) {
		return nil, fmt.Errorf("undo record %s refused (%s); nothing was restored from it: inspect it and remove it by hand",
			path, fmt.Sprintf(format, args...))
	}
	if err := dec.Decode(&r); err != nil {
		return refuse("corrupt: %v", err)
	}
	if dec.More() {
		return refuse("corrupt: data after the record")
	}
	if r.Version != recordVersion {
		return refuse("version %d", r.Version)
	}
	if len(r.Entries) > maxEntries {
		return refuse("%d entries, at most %d", len(r.Entries), maxEntries)
	}
	seen := map[string]bool{}
	for i, e := range r.Entries {
		if err := e.check(); err != nil {
			return refuse("entry %d: %v", i, err)
		}
		k := fmt.Sprint(e.Kind, "/", e.Key, "/", e.ID)
		if seen[k] {
			return refuse("entry %d: %s %s%d twice", i, e.Kind, e.Key, e.ID)
		}
		seen[k] = true
	}
	return r.Entries, nil
}

// save writes the record atomically: a reader (the restore mode) sees the old or the new record, never half.
func (j *Journal) save() error {
	if len(j.entries) == 0 {
		err := os.Remove(j.path)
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		return err
	}
	b, err := json.Marshal(record{Version: recordVersion, Pid: os.Getpid(), Entries: j.entries})
	if err != nil {
		return err
	}
	// A fresh file, never through a symlink a crash (or someone) left at the temporary name.
	tmp := j.path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, j.path)
}

func (j *Journal) has(kind, key string, id uint8) bool {
	for _, e := range j.entries {
		if e.Kind == kind && e.Key == key && e.ID == id {
			return true
		}
	}
	return false
}

// SetSysctl records the prior value of key (once) and then writes value.
func (j *Journal) SetSysctl(scope, key, value string) error {
	if !undoableSysctl(key) || !sysctlValue(value) {
		return fmt.Errorf("sysctl %.80q=%.40q is not one the helper changes", key, value)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	path := filepath.Join(j.sysctlDir, key)
	if !j.has("sysctl", key, 0) {
		prior, err := readSysctl(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		p := strings.TrimSpace(string(prior))
		if !sysctlValue(p) {
			return fmt.Errorf("%s holds %.40q, which the undo record could not restore", path, p)
		}
		j.entries = append(j.entries, Entry{Scope: scope, Kind: "sysctl", Key: key, Prior: p})
		if err := j.save(); err != nil {
			j.entries = j.entries[:len(j.entries)-1]
			return fmt.Errorf("write undo record: %w", err)
		}
	}
	if err := writeSysctl(path, value); err != nil {
		return fmt.Errorf("write %s=%s: %w", path, value, err)
	}
	return nil
}

// ReadSysctl reads one MPTCP sysctl.
func (j *Journal) ReadSysctl(key string) (string, error) {
	if !sysctlName(key) {
		return "", fmt.Errorf("bad sysctl name %.80q", key)
	}
	b, err := readSysctl(filepath.Join(j.sysctlDir, key))
	return strings.TrimSpace(string(b)), err
}

// NoteEndpoint records the endpoint with this ID as it is now (prior nil: absent) before the caller changes it.
func (j *Journal) NoteEndpoint(scope string, id uint8, prior *mptcp.Endpoint) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.has("endpoint", "", id) {
		return nil
	}
	e := Entry{Scope: scope, Kind: "endpoint", ID: id}
	if prior != nil {
		e.Present, e.Addr, e.Port, e.Flags, e.IfIndex = true, prior.Addr.String(), prior.Port, uint32(prior.Flags), prior.IfIndex
	}
	j.entries = append(j.entries, e)
	if err := j.save(); err != nil {
		j.entries = j.entries[:len(j.entries)-1]
		return fmt.Errorf("write undo record: %w", err)
	}
	return nil
}

// Restore puts back every entry of scope ("" for all), newest first, and drops the restored entries from the
// record. It tries every entry and reports all failures; entries that failed stay in the record.
func (j *Journal) Restore(scope string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var errs []error
	var keep []Entry
	var pm *mptcp.Client
	defer func() {
		if pm != nil {
			pm.Close()
		}
	}()
	for i := len(j.entries) - 1; i >= 0; i-- {
		e := j.entries[i]
		if scope != "" && e.Scope != scope {
			keep = append([]Entry{e}, keep...)
			continue
		}
		var err error
		switch e.Kind {
		case "sysctl":
			err = writeSysctl(filepath.Join(j.sysctlDir, e.Key), e.Prior)
		case "endpoint":
			if pm == nil {
				pm, err = mptcp.Dial(0)
			}
			if err == nil {
				err = restoreEndpoint(pm, e)
			}
		default:
			err = fmt.Errorf("unknown kind %q", e.Kind)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s %s%d: %w", e.Kind, e.Key, e.ID, err))
			keep = append([]Entry{e}, keep...)
		}
	}
	j.entries = keep
	if err := j.save(); err != nil {
		errs = append(errs, fmt.Errorf("write undo record: %w", err))
	}
	return errors.Join(errs...)
}

func restoreEndpoint(pm *mptcp.Client, e Entry) error {
	cur, err := pm.Endpoint(e.ID)
	exists := err == nil
	if !e.Present {
		if exists {
			return pm.DeleteEndpoint(e.ID)
		}
		return nil
	}
	addr, perr := netip.ParseAddr(e.Addr)
	if perr != nil {
		return perr
	}
	want := mptcp.Endpoint{ID: e.ID, Addr: addr, Port: e.Port, Flags: mptcp.Flags(e.Flags), IfIndex: e.IfIndex}
	if exists && cur == want {
		return nil
	}
	if exists {
		if err := pm.DeleteEndpoint(e.ID); err != nil {
			return err
		}
	}
	return pm.AddEndpoint(want)
}

// Pending reports how many entries the record holds.
func (j *Journal) Pending() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.entries)
}
