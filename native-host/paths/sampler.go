package paths

import (
	"time"

	"github.com/mpsurf/mpsurf/native-host/radio"
	"github.com/mpsurf/mpsurf/native-host/rrc"
)

// Config says what a Sampler measures and how often.
type Config struct {
	Root        string            // prefix of /proc and /sys; "" is the live system
	Names       map[string]string // interface name -> kind, over what sysfs says
	ProbeTarget string            // host:port for the active RTT probe; "" = no probe
	// RateProbeURL is the https object the rate probe fetches (at most RateProbeBytes of it) over a path with no
	// rate yet; "" = no rate probe. RateProbePins, when given, are the base64 SHA-256 SPKI hashes the server's
	// certificate must have one of (instead of the system roots). CellularProbes lets it run on a cellular path
	// whose radio is idle (it wakes the radio: a promotion and a tail).
	RateProbeURL   string
	RateProbePins  []string
	CellularProbes bool
	Cellular       *radio.Model  // RRC model of the cellular interface (LTE or 3G); nil = no RRC inference
	CellEvery      time.Duration // counter period while a cellular path exists; 0 = 50 ms
	Every          time.Duration // counter period otherwise; 0 = 200 ms
}

// Timing of the slower parts, chosen so that they cost next to nothing: interfaces and addresses change
// rarely; one sock_diag dump a second is enough for RTT and loss, which move on the scale of seconds; a probe
// only when a path has had no passive sample for ProbeAfter, at most every ProbeEvery.
const (
	DiscoverEvery = 5 * time.Second
	DiagEvery     = time.Second
	ProbeAfter    = 10 * time.Second
	ProbeEvery    = 5 * time.Second
	ProbeTimeout  = 2 * time.Second
	ProbeConnects = 3 // connects per RTT probe, the least taken
	RateSpan      = time.Second
	// CellRateSpan: a cellular path's windows are shorter. Its traffic is a multipath subflow's, which runs at the
	// link's rate only between its slow start and the end of the page: beside 20 Mbit/s WiFi, on 20 Mbit/s LTE,
	// the subflow delivered 16-20 Mbit/s for 0.5-0.75 s of each 1.2-5 MB page, its best
	// 1 s window 8.8 Mbit/s, and the model, seeing a link half as fast as it was, kept those pages on WiFi alone. Half
	// a second is seven round trips of the testbed's and Huang et al.'s LTE (70 ms) and ten of the host's 50 ms
	// cellular samples (CellEvery).
	CellRateSpan = 500 * time.Millisecond
	RateHorizon  = 30 * time.Second
	// RateStall: the longest pause a busy period survives. In Mahimahi's Verizon EVDO driving trace (Winstein,
	// Sivaraman, Balakrishnan, NSDI 2013; traces/Verizon-EVDO-driving.down in Mahimahi's repository) 99 % of the
	// gaps between delivery opportunities are 225 ms or less; in its AT&T and T-Mobile LTE traces 12-19 ms, so
	// LTE links are measured as before.
	RateStall = 250 * time.Millisecond
	// RTTHold: a passive RTT sample above the path's lowest replaces it only once that is this old. A subflow that
	// joins a cellular link during an outage, or lives in its full queue, reports a minimum RTT of seconds (872 ms
	// on the AT&T trace link, whose idle RTT is 70 ms), and the model then sees a far worse link than the next page
	// will get. A minute spans a page load and its neighbours; a real change of network outlasts it.
	RTTHold = time.Minute
	// SharedBytes: a path carried data in a sample interval when it moved at least this many bytes either way, two
	// full-size segments; ACKs and keepalives alone stay under it.
	SharedBytes = 3000
)

// MinLossSegs is the fewest segments a loss ratio is taken from. The model caps a prior rate by the loss (Mathis
// et al.), so a ratio from a handful of segments, two retransmitted SYNs among 19 segments on a cellular trace
// link, made a 9 Mbit/s prior into 0.5 Mbit/s and kept the link from ever carrying the traffic that would have
// measured it. From 1000 segments a 1 % loss is known within ±0.3 % (one binomial standard error).
const MinLossSegs = 1000

// CellProbeEvery spaces RTT probes on a cellular path. A probe is never sent to a sleeping radio, but one sent in
// its tail restarts the tail: LTE's lasts 11.6 s (policy-models/power-lte.json, Huang et al. MobiSys 2012), longer
// than ProbeAfter + ProbeEvery, so probing every ProbeEvery would keep the radio out of idle for good, at about
// 1 W. Once per RateProbeEvery bounds that to one restarted tail (about 12 J) per 10 minutes.
const CellProbeEvery = RateProbeEvery

// rttProbeDue says whether a path is due an RTT probe now: it has had no passive RTT sample for ProbeAfter, its
// last probe is ProbeEvery old (CellProbeEvery on a cellular path), and a cellular radio is not asleep.
func rttProbeDue(cellular, radioIdle bool, now, lastPassive, lastProbe time.Time) bool {
	every := ProbeEvery
	if cellular {
		if radioIdle {
			// Waking it would cost a promotion and a whole tail (about 13 J on LTE), more than most decisions are
			// worth; the last estimate stands until real traffic renews it.
			return false
		}
		every = CellProbeEvery
	}
	return now.Sub(lastPassive) >= ProbeAfter && now.Sub(lastProbe) >= every
}

// allQuiet says whether every path has carried nothing since quietSince: a rate probe waits for that, not only on
// its own path, as "never beside a page load" means. A cellular probe beside a page that loads over WiFi would
// wake nothing the page needs, but it would add its bytes to the interface's during the page, which is what the
// testbed and a user's data counter see.
func allQuiet(active []time.Time, quietSince time.Time) bool {
	for _, a := range active {
		if a.After(quietSince) {
			return false
		}
	}
	return true
}

// Seed is what an earlier host kept of a path: nil fields are unknown.
type Seed struct {
	DownBPS, UpBPS, RTTMS *float64
	At                    time.Time
	// DownAt is when the rates were measured, when that is known and earlier than At (an estimate kept again
	// by a host that did not measure it anew); zero: At.
	DownAt time.Time
	// DownMeanBPS and DownMeanN are the kept long-run mean of the downlink rate (Rate.SeedMean).
	DownMeanBPS *float64
	DownMeanN   int
	// DownSustainedBPS is the kept held rate (Rate.SeedSustained), measured at DownSustainedAt.
	DownSustainedBPS *float64
	DownSustainedAt  time.Time
}

// ageMS is how long before now a number was measured, nil when it has no time; never negative.
func ageMS(now, at time.Time) *int64 {
	if at.IsZero() {
		return nil
	}
	v := max(now.Sub(at).Milliseconds(), 0)
	return &v
}

// windowedMin is the passive RTT's floor after sample v at now: a sample at or below the floor replaces it, one
// above only once the floor is RTTHold old.
func windowedMin(floor *float64, at time.Time, v float64, now time.Time) (*float64, time.Time) {
	if floor == nil || v <= *floor || now.Sub(at) >= RTTHold {
		return &v, now
	}
	return floor, at
}

// Snapshot is what the sampler knows now.
type Snapshot struct {
	Paths []Path    `json:"paths"`
	RRC   *rrc.Info `json:"rrc"`
}
