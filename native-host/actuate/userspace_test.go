package actuate

import (
	"testing"
	"time"
)

// A waiting connection is read as often as it could get near θ1 at four times its last rate, between pollEvery
// and pollIdle; an idle one every pollIdle; one past θ1 at once.
func TestNextPoll(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rx, theta1 uint64
		rate       float64
		want       time.Duration
	}{
		{"idle, far from θ1", 60_000, 256_000, 0, pollIdle},
		{"slow, far from θ1", 0, 256_000, 100_000, pollIdle},          // 640 ms away at 4x
		{"7 Mbit/s, 200 kB left", 56_000, 256_000, 875_000, pollIdle}, // 57 ms away at 4x: capped
		{"fast, near θ1", 250_000, 256_000, 1_250_000, pollEvery},     // 1.2 ms away
		{"at θ1", 256_000, 256_000, 0, pollEvery},
		{"10 Mbit/s, 100 kB left", 156_000, 256_000, 1_250_000, 20 * time.Millisecond},
	} {
		want := tc.want
		if got := nextPoll(tc.rx, tc.theta1, tc.rate); got != want {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
	}
}
