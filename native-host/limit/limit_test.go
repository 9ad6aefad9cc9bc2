package limit

import (
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	b := Full(3, now)
	n := 0
	for range 10 {
		if ok, _ := b.Take(now, 2, 3); ok {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d of 10 at once with a burst of 3", n)
	}
	if ok, wait := b.Take(now, 2, 3); ok || wait != 500*time.Millisecond {
		t.Fatalf("empty at 2/s: ok %v, wait %v, want 500ms", ok, wait)
	}
	if ok, _ := b.Take(now.Add(500*time.Millisecond), 2, 3); !ok {
		t.Fatal("no token after 500 ms at 2/s")
	}
	if ok, _ := b.Take(now.Add(time.Hour), 2, 3); !ok {
		t.Fatal("no token after an hour")
	}
}

func TestKeyed(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewKeyed[uint32](1, 2, 4)
	for range 5 {
		l.Allow(7, now)
	}
	if ok, _ := l.Allow(7, now); ok {
		t.Fatal("key 7 over its burst allowed")
	}
	if ok, _ := l.Allow(8, now); !ok {
		t.Fatal("key 8 shares key 7's bucket")
	}
	for k := range uint32(100) {
		l.Allow(100+k, now)
		if l.Len() > 4 {
			t.Fatalf("%d keys remembered, max 4", l.Len())
		}
	}
	// Key 7 was forgotten (least recently used): it starts with a full burst again.
	if ok, _ := l.Allow(7, now); !ok {
		t.Fatal("a forgotten key did not start again")
	}
}
