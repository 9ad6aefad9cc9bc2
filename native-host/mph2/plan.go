package mph2

import (
	"math"
	"time"
)

// Delta is seed 003's δ (§3.5): the scheduler stops moving work once the paths' predicted completion times differ
// by less than this.
const Delta = 50 * time.Millisecond

// MinChunk is the smallest range worth a request of its own: below it, a request's round trip costs more than
// the bytes it moves save (seed 003 §3.2, Fig. 5: 128 KB chunks were the fastest fixed size; smaller ones lost to
// request overhead).
const MinChunk = 64 << 10

// Split is seed 003's Eq. 1: the bytes D_i of an object of d bytes that path i should fetch so that both paths,
// each starting with one request, finish at once: RTT_i + D_i/BW_i = RTT_j + D_j/BW_j with D_i + D_j = d.
// Rates are in bytes per second. The result is clamped to [0, d].
func Split(d int64, bwI, bwJ float64, rttI, rttJ time.Duration) int64 {
	if bwI <= 0 || bwJ <= 0 {
		return d / 2
	}
	di := (float64(d)*bwI + bwI*bwJ*(rttJ-rttI).Seconds()) / (bwI + bwJ)
	return clampBytes(di, d)
}

// Takeover is Algorithm 1's line 5: of r bytes the slow path j still has to receive, the bytes the fast path i
// should take with a new request, so that both finish at once: the new request's first byte arrives one RTT_i
// from now (RTT_i + D_i/BW_i = (r − D_i)/BW_j; the slow path needs no new request, so no RTT_j). Clamped to
// [0, r].
func Takeover(r int64, bwJ, bwI float64, rttI time.Duration) int64 {
	if bwI <= 0 || bwJ <= 0 {
		return r / 2
	}
	di := (float64(r)*bwI - rttI.Seconds()*bwI*bwJ) / (bwI + bwJ)
	return clampBytes(di, r)
}

func clampBytes(x float64, hi int64) int64 {
	if math.IsNaN(x) || x <= 0 {
		return 0
	}
	if x >= float64(hi) {
		return hi
	}
	return int64(x)
}

// PathView is what Algorithm 1 reads of one path.
type PathView struct {
	// Remaining is the bytes its open streams still have to receive (bytesToDL).
	Remaining int64
	// BW is the bandwidth estimate in bytes per second, 0 when unknown.
	BW float64
	// RTT is the application-layer RTT estimate, 0 when unknown.
	RTT time.Duration
	// Streams is how many of its streams are open.
	Streams int
	// TailStart and TailEnd bound what may still be taken from its last stream: from the first byte the server
	// has not been allowed to send yet (flow-control credit granted, or bytes in flight) to the stream's end.
	TailStart, TailEnd int64
	// Cap is how many more bytes the path may be given (θ2 on cellular); negative means no cap.
	Cap int64
}

// Step is Algorithm 1 for a path `this` that just received data, against the `other` path. When this path should
// take work, it returns the offset from which it takes the rest of other's last stream, [split, other.TailEnd),
// and true. delta is δ, minChunk the smallest range worth a request.
func Step(this, other PathView, delta time.Duration, minChunk int64) (split int64, ok bool) {
	if this.Streams >= 2 || other.Streams == 0 || other.TailEnd-other.TailStart < minChunk || this.Cap == 0 {
		return 0, false
	}
	if this.BW <= 0 || other.BW <= 0 {
		// Bootstrapping (§3.3): until both rates are measured, only a path that has run dry helps, with half of
		// what the other may give.
		if this.Remaining > 0 {
			return 0, false
		}
		d := (other.TailEnd - other.TailStart) / 2
		return finishStep(other.TailEnd-d, this, other, minChunk)
	}
	thisT := time.Duration(float64(this.Remaining) / this.BW * float64(time.Second))
	otherT := time.Duration(float64(other.Remaining) / other.BW * float64(time.Second))
	if otherT-thisT <= delta {
		return 0, false
	}
	// Pipelining (§3.4.1): ask when the current chunk ends within one RTT, so the next one's first byte follows it.
	if thisT > this.RTT {
		return 0, false
	}
	d := Takeover(other.Remaining, other.BW, this.BW, this.RTT)
	return finishStep(other.TailEnd-d, this, other, minChunk)
}

func finishStep(split int64, this, other PathView, minChunk int64) (int64, bool) {
	split = max(split, other.TailStart)
	if this.Cap > 0 {
		split = max(split, other.TailEnd-this.Cap)
	}
	if other.TailEnd-split < minChunk {
		return 0, false
	}
	return split, true
}

// StartSplit is the known-size start (seed 003 §3.6, MP-H2+FS): with the object's size known before any response,
// the primary path asks for [0, split) and the secondary for [split, size) at once. Eq. 1 shares the object by
// what is known of the two paths (Split halves it while a rate is unknown). The secondary's share stays within its
// cap (secondary.Cap ≥ 0, θ2); the primary keeps at least minChunk, since its request is the one that comes first;
// and a secondary share below minChunk is not worth a request: then split = size and the primary asks for all.
func StartSplit(size int64, primary, secondary PathView, minChunk int64) int64 {
	split := Split(size, primary.BW, secondary.BW, primary.RTT, secondary.RTT)
	if secondary.Cap >= 0 {
		split = max(split, size-secondary.Cap)
	}
	split = max(split, min(minChunk, size))
	if size-split < minChunk {
		return size
	}
	return split
}
