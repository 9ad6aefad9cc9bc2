package limit

import (
	"container/list"
	"time"
)

// Bucket is a token bucket: Burst tokens at once, then Rate per second. The zero value is empty; Full makes
// a full one.
type Bucket struct {
	tokens float64
	last   time.Time
}

// Full is a bucket holding burst tokens at now.
func Full(burst float64, now time.Time) Bucket { return Bucket{tokens: burst, last: now} }

// Take refills the bucket to now and takes one token if there is one; otherwise it says how long until there is.
func (b *Bucket) Take(now time.Time, rate, burst float64) (bool, time.Duration) {
	b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	if rate <= 0 {
		return false, time.Hour
	}
	return false, time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// Keyed keeps a Bucket per key in a map of at most Max keys. When it is full, the least recently used key is
// forgotten; a forgotten key starts again with a full burst, so Max must exceed the number of keys that can be
// active at once for the limit to hold. Not safe for concurrent use.
type Keyed[K comparable] struct {
	Rate, Burst float64
	Max         int
	keys        map[K]*list.Element
	lru         *list.List // of *entry[K], most recent first
}

type entry[K comparable] struct {
	key K
	b   Bucket
}

// NewKeyed makes an empty Keyed.
func NewKeyed[K comparable](rate, burst float64, max int) *Keyed[K] {
	return &Keyed[K]{Rate: rate, Burst: burst, Max: max, keys: map[K]*list.Element{}, lru: list.New()}
}

// Allow takes one token of key's bucket; when there is none it says how long until there is.
func (l *Keyed[K]) Allow(key K, now time.Time) (bool, time.Duration) {
	e, ok := l.keys[key]
	if ok {
		l.lru.MoveToFront(e)
	} else {
		if l.lru.Len() >= l.Max {
			old := l.lru.Back()
			delete(l.keys, old.Value.(*entry[K]).key)
			l.lru.Remove(old)
		}
		e = l.lru.PushFront(&entry[K]{key: key, b: Full(l.Burst, now)})
		l.keys[key] = e
	}
	return e.Value.(*entry[K]).b.Take(now, l.Rate, l.Burst)
}

// Len is how many keys are remembered.
func (l *Keyed[K]) Len() int { return len(l.keys) }
