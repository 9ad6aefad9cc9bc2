package linkem

import (
	"bufio"
	"os"
	"strconv"
	"sync"
	"time"
)

// Timeline appends one line per packet, `t_unix_ns,dir,bytes`, to a file.
// It is safe for concurrent use; writes are buffered and flushed by Flush,
// Close, and at least every FlushEvery.
type Timeline struct {
	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	line    []byte
	err     error
	stop    chan struct{}
	stopped chan struct{}
}

// FlushEvery is the longest time a logged packet stays in memory.
const FlushEvery = 100 * time.Millisecond

// CreateTimeline creates (or truncates) the file at path.
func CreateTimeline(path string) (*Timeline, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	t := &Timeline{f: f, w: bufio.NewWriterSize(f, 64<<10), line: make([]byte, 0, 48),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	go t.flushLoop()
	return t, nil
}

// Log records a packet of n bytes in direction dir ('d' or 'u') now.
func (t *Timeline) Log(dir byte, n int) {
	now := time.Now().UnixNano()
	t.mu.Lock()
	b := strconv.AppendInt(t.line[:0], now, 10)
	b = append(b, ',', dir, ',')
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '\n')
	t.line = b
	if _, err := t.w.Write(b); err != nil && t.err == nil {
		t.err = err
	}
	t.mu.Unlock()
}

// Flush writes buffered lines to the file.
func (t *Timeline) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.w.Flush(); err != nil && t.err == nil {
		t.err = err
	}
	return t.err
}

func (t *Timeline) flushLoop() {
	defer close(t.stopped)
	tick := time.NewTicker(FlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.Flush()
		case <-t.stop:
			return
		}
	}
}

// Close flushes and closes the file; it returns the first write error.
func (t *Timeline) Close() error {
	close(t.stop)
	<-t.stopped
	err := t.Flush()
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	return err
}
