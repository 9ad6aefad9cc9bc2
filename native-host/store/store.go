package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Retention defaults: 100,000 decisions is years of browsing at a few hundred page loads a day, and about 100 MB at
// the ~1 KB a row takes; 90 days covers three billing cycles for the cellular plan view and a season of research logs.
const (
	DefaultMaxRows = 100000
	DefaultMaxAge  = 90 * 24 * time.Hour
)

// Synchronous levels of SQLite's PRAGMA synchronous that Open accepts.
const (
	SyncFull   = "FULL"
	SyncNormal = "NORMAL"
)

// Options tune a Store. The zero value means the defaults.
type Options struct {
	MaxRows int64         // decisions and observations kept, each; 0 means DefaultMaxRows
	MaxAge  time.Duration // older rows are deleted on insert; 0 means DefaultMaxAge
	// Sync is the PRAGMA synchronous level; "" means SyncFull (see the package doc). NORMAL exists for the benchmark.
	Sync string
	// Now returns the current time; nil means time.Now. Tests set it.
	Now func() time.Time
}

// Timeout bounds one call of a serving host into the store, so that a locked database never hangs a reply.
const Timeout = 10 * time.Second

// Store is an open database. It is safe for concurrent use.
type Store struct {
	path string
	opt  Options

	mu sync.RWMutex // held for writing while DeleteAll swaps db and st
	db *sql.DB
	st *prepared // db's statements (stmts.go), closed with it

	recent   recent   // the latest observations, in memory (recent.go)
	measured measured // the latest measured decisions, in memory (measured.go)
}

// Open opens (creating it and its directory if needed) the database at path and brings its schema up to date.
func Open(path string, opt Options) (*Store, error) {
	if opt.MaxRows <= 0 {
		opt.MaxRows = DefaultMaxRows
	}
	if opt.MaxAge <= 0 {
		opt.MaxAge = DefaultMaxAge
	}
	switch opt.Sync {
	case "":
		opt.Sync = SyncFull
	case SyncFull, SyncNormal:
	default:
		return nil, fmt.Errorf("store: synchronous level %q: must be FULL or NORMAL", opt.Sync)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	// Kept absolute: "delete all" removes this file (and -wal, -shm) whatever the working directory is then.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	s := &Store{path: path, opt: opt}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) open() error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	// The file holds the user's browsing history by origin: only the user may read it. Creating it 0600 before SQLite
	// does matters, since SQLite gives the -wal and -shm files the database file's mode.
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	err = f.Chmod(0o600) // a file made by an older host or by hand
	f.Close()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	// The pragmas go in the DSN so that every pooled connection gets them, not just the first.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+s.opt.Sync+")")
	q.Set("_txlock", "immediate") // writers take the lock at BEGIN, so two writers never deadlock on upgrade
	db, err := sql.Open("sqlite", fileURI(s.path)+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("store: %s: %w", s.path, err)
	}
	if err := migrate(context.Background(), db); err != nil {
		db.Close()
		return fmt.Errorf("store: %s: %w", s.path, err)
	}
	st, err := prepare(context.Background(), db)
	if err != nil {
		db.Close()
		return fmt.Errorf("store: %s: %w", s.path, err)
	}
	s.db, s.st = db, st
	return nil
}

// fileURI is path as an SQLite URI filename that names that file and no other: absolute, with '?', '#', '%' and
// the like percent-encoded, which SQLite decodes. A path pasted after "file:" as it is would end at its first '?'
// or '#', the rest read as URI parameters (MPSURF_DB=/x/a?b.db opened /x/a).
func fileURI(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	return s.closeDB()
}

// closeDB closes the statements, then the database; the caller holds mu for writing.
func (s *Store) closeDB() error {
	err := errors.Join(s.st.close(), s.db.Close())
	s.db, s.st = nil, nil
	return err
}

// stmt is the prepared statement k of the open database; the caller holds mu (inside with or tx).
func (s *Store) stmt(k stmt) *sql.Stmt { return s.st[k] }

// txStmt is the prepared statement k bound to tx's connection (prepared there once, then reused).
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, k stmt) *sql.Stmt {
	return tx.StmtContext(ctx, s.st[k])
}

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("store: closed")

// with runs f with the database under the read lock, so DeleteAll cannot swap it away meanwhile.
func (s *Store) with(f func(db *sql.DB) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	return f(s.db)
}

// DeleteAll deletes everything: it closes the database, removes the file with its -wal and -shm files, and opens a
// new empty one at the same path. Deleting rows would leave their bytes in free pages and in the WAL.
func (s *Store) DeleteAll() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil {
		if err := s.closeDB(); err != nil {
			return fmt.Errorf("store: closing before delete: %w", err)
		}
	}
	s.recent.mu.Lock()
	s.recent.reset()
	s.recent.mu.Unlock()
	s.measured.mu.Lock()
	s.measured.reset()
	s.measured.mu.Unlock()
	for _, p := range []string{s.path, s.path + "-wal", s.path + "-shm", s.path + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("store: %w", err)
		}
	}
	return s.open()
}

// tx runs f in one write transaction and commits it; the commit is the durability point.
func (s *Store) tx(ctx context.Context, f func(tx *sql.Tx) error) error { return s.txThen(ctx, f, nil) }

// txThen is tx, and runs committed (unless nil) once the transaction has committed, before DeleteAll or Close can
// swap the database away.
func (s *Store) txThen(ctx context.Context, f func(tx *sql.Tx) error, committed func()) error {
	return s.with(func(db *sql.DB) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if err := f(tx); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("store: commit: %w", err)
		}
		if committed != nil {
			committed()
		}
		return nil
	})
}
