package actuate

import (
	"container/list"
	"time"
)

// bucket is a token bucket: burst at once, then rate per second.
type bucket struct {
	tokens float64
	last   time.Time
}

// take refills the bucket to now and takes one token if there is one.
func (b *bucket) take(now time.Time, rate, burst float64) bool {
	b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// wait is how long until the bucket holds a token again.
func (b *bucket) wait(rate float64) time.Duration {
	if b.tokens >= 1 || rate <= 0 {
		return 0
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// limiter keeps a token bucket per key (a uid) in a bounded map. When it is full, the least recently used key is
// forgotten; a forgotten key starts again with a full burst, so the bound must exceed the number of keys that can
// be active at once (uids with a connection, which the connection limits bound) for the limit to hold.
type limiter struct {
	rate, burst float64
	max         int
	keys        map[uint32]*list.Element
	lru         *list.List // of *limEntry, most recent first
}

type limEntry struct {
	key uint32
	b   bucket
}

func newLimiter(rate, burst float64, max int) *limiter {
	return &limiter{rate: rate, burst: burst, max: max, keys: map[uint32]*list.Element{}, lru: list.New()}
}

// allow takes one token of key's bucket; when there is none it says how long until there is.
func (l *limiter) allow(key uint32, now time.Time) (bool, time.Duration) {
	e, ok := l.keys[key]
	if ok {
		l.lru.MoveToFront(e)
	} else {
		if l.lru.Len() >= l.max {
			old := l.lru.Back()
			delete(l.keys, old.Value.(*limEntry).key)
			l.lru.Remove(old)
		}
		e = l.lru.PushFront(&limEntry{key: key, b: bucket{tokens: l.burst, last: now}})
		l.keys[key] = e
	}
	b := &e.Value.(*limEntry).b
	if b.take(now, l.rate, l.burst) {
		return true, 0
	}
	return false, b.wait(l.rate)
}

// size is how many keys the limiter holds.
func (l *limiter) size() int { return len(l.keys) }
