package policy

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// PollInterval is how often a policy file on disk is checked for changes.
const PollInterval = time.Second

// Snapshot is one loaded policy: the file, where it came from, and the network-wide policy with its revision.
type Snapshot struct {
	File   File
	Source Source
	Policy protocol.Policy
}

// Store holds the current policy. A failed reload keeps the previous one.
type Store struct {
	src Source

	mu    sync.Mutex
	snap  *Snapshot // nil until a load succeeds
	err   error     // the last load's error, nil after a success
	stamp stamp
}

// NewStore loads src once. A failure is not fatal: Snapshot reports it until a reload succeeds.
func NewStore(src Source) *Store {
	s := &Store{src: src}
	s.Reload(true)
	return s
}

// Source is where the store reads from.
func (s *Store) Source() Source { return s.src }

// Snapshot returns the current policy, or the load error when no load has succeeded yet.
func (s *Store) Snapshot() (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap == nil {
		return nil, s.err
	}
	return s.snap, nil
}

// Reload re-reads the file (unless force is false and its size, mtime and inode are unchanged). It returns the new
// network-wide policy and changed=true when that policy differs from the one held, in which case the revision went
// up by one. On error the held policy stays.
func (s *Store) Reload(force bool) (p protocol.Policy, changed bool, err error) {
	st, err := s.src.stat()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && !force && s.snap != nil && st == s.stamp {
		return s.snap.Policy, false, nil
	}
	var f File
	if err == nil {
		f, err = s.src.Load()
	}
	if err != nil {
		s.err = err
		// Forget the stamp so that the file is read again once it is back, even with its old size and mtime.
		s.stamp = stamp{}
		if s.snap != nil {
			return s.snap.Policy, false, err
		}
		return protocol.Policy{}, false, err
	}
	s.err, s.stamp = nil, st
	rev := int64(1)
	if s.snap != nil {
		rev = s.snap.Policy.Revision
	}
	next := Decide(Input{Model: f, Source: s.src, Revision: rev}).Policy(rev)
	changed = s.snap == nil
	if s.snap != nil && !next.SameAs(s.snap.Policy) {
		next = Decide(Input{Model: f, Source: s.src, Revision: rev + 1}).Policy(rev + 1)
		changed = true
	}
	s.snap = &Snapshot{File: f, Source: s.src, Policy: next}
	return next, changed, nil
}

// Watch reloads every interval (only when the file is on disk) and whenever hup delivers, until ctx ends. It calls
// onChange with each new network-wide policy, and logs a failed reload once per distinct error.
func (s *Store) Watch(ctx context.Context, interval time.Duration, hup <-chan struct{}, log *slog.Logger,
	onChange func(protocol.Policy)) {
	var tick <-chan time.Time
	if s.src.OnDisk() && interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	var lastErr string
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-hup:
			force = true
		}
		p, changed, err := s.Reload(force)
		if err != nil {
			if err.Error() != lastErr {
				log.Error("policy reload failed; keeping the previous policy", "source", s.src.String(), "err", err)
				lastErr = err.Error()
			}
			continue
		}
		if lastErr != "" {
			log.Info("policy reloads again", "source", s.src.String())
			lastErr = ""
		}
		if changed {
			log.Info("policy changed", "revision", p.Revision, "source", s.src.String())
			onChange(p)
		}
	}
}
