package model

import "github.com/mpsurf/mpsurf/native-host/protocol"

// Path is one network path as PROTOCOL.md's Path object (status --json prints these). Rates are bits per second,
// loss a probability. A path without an RTT or a downlink rate is taken from the priors of its kind.
type Path struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"` // wifi, cellular, ethernet, other
	Up        bool     `json:"up"`
	Addrs     []string `json:"addrs,omitempty"`
	RTTMS     *float64 `json:"rtt_ms"`
	DownBps   *float64 `json:"down_bps"`
	UpBps     *float64 `json:"up_bps"`
	Loss      *float64 `json:"loss"`
	RTTSource *string  `json:"rtt_source,omitempty"`
	// Spread is the uncertainty of DownBps, the standard deviation of its logarithm (0: taken as exact). A probe
	// that could only bound the rate, or a rate that moved between measurements, has one.
	Spread float64 `json:"spread,omitempty"`
	// DownAgeS is how many seconds before the decision DownBps was measured (nil: just now, or unknown). On a
	// cellular path the model moves an old rate towards the prior (Params.RateMemory).
	DownAgeS *float64 `json:"down_age_s,omitempty"`
	// DownMeanBps is the path's long-run downlink rate, the mean of its own measurements, and DownMeanN how many
	// it rests on (0: none). An old cellular rate moves towards it rather than all the way to the prior.
	DownMeanBps *float64 `json:"down_mean_bps,omitempty"`
	DownMeanN   int64    `json:"down_mean_n,omitempty"`
	// DownBound says DownBps is only a lower bound (a probe too short for the link, windows with pauses on a
	// WiFi path): where the prior's median is higher, the prior stands.
	DownBound bool `json:"down_bound,omitempty"`
	// DownSustainedBps is what a bulk flow held on the path in its last long busy period with losses (the median
	// of its one-second windows), measured DownSustainedAgeS seconds before the decision. The log keeps it for
	// replay; the weighing does not use it: taking DownBps down to it made the testbed's decisions beside lossy
	// WiFi worse (one slow load sets it, and pages of the same link ran twice as fast; e2e/RESULTS.md, Decisions).
	DownSustainedBps  *float64 `json:"down_sustained_bps,omitempty"`
	DownSustainedAgeS *float64 `json:"down_sustained_age_s,omitempty"`
}

// measured says whether the path has what the model needs without priors: an RTT and a downlink rate.
func (p *Path) measured() bool {
	return p != nil && p.RTTMS != nil && p.DownBps != nil
}

// RRC is the cellular radio's state (PROTOCOL.md's RRC object). State is a state name of the technology's power
// file ("idle", "promotion", "continuous", "long_drx", "fach", ...); SinceMS how long it has been in it.
type RRC struct {
	Interface string `json:"interface,omitempty"`
	Tech      string `json:"tech"` // lte or 3g
	State     string `json:"state"`
	SinceMS   int64  `json:"since_ms"`
	Source    string `json:"source,omitempty"`
	// Spread, when the state is not sure (the host resumed after packets it did not see): the states the radio
	// may be in with their probabilities (summing to 1); the model weighs each. State is then the least awake.
	Spread []RRCShare `json:"spread,omitempty"`
}

// RRCShare is one state of RRC.Spread: its name, how long the radio has been in it, its probability.
type RRCShare struct {
	State   string  `json:"state"`
	SinceMS int64   `json:"since_ms"`
	P       float64 `json:"p"`
}

// Battery is the device's battery as /sys/class/power_supply reports it.
type Battery struct {
	Present  bool    `json:"present"`
	Percent  float64 `json:"percent"`
	Charging bool    `json:"charging"`
}

// Usage is the cellular data used in the current billing cycle.
type Usage struct {
	UsedBytes int64 `json:"used_bytes"`
	DaysLeft  int64 `json:"days_left"`
}

// Size is what is known of the page's size (PROTOCOL.md Decision.size): the loads observed of its path class
// (Points) and of the rest of its origin (Origin), newest first. The model shrinks each level towards the next and
// the last towards the page-size prior; Median, P10 and P90 summarise the observed level for people.
type Size struct {
	Known   bool   `json:"known"`
	Median  *int64 `json:"median"`
	P10     *int64 `json:"p10,omitempty"`
	P90     *int64 `json:"p90"`
	Samples int64  `json:"samples"`
	Source  string `json:"source"`
	// Points are the transferred bytes of this path class's loads; Origin those of the origin's other classes.
	Points []int64 `json:"points,omitempty"`
	Origin []int64 `json:"origin,omitempty"`
	// Others are the user's latest page loads on other origins: what a page never seen is likely to weigh for this
	// user, before the landing-page prior.
	Others []int64 `json:"others,omitempty"`
	// Objects is the median number of objects of the observed loads (0: unknown), for the page-load predictions.
	Objects int64 `json:"objects,omitempty"`
	// Exact says Median is the transfer's size itself (a download's announced length), not a prediction.
	Exact bool `json:"exact,omitempty"`
}

// Correction is what the origin's measured page loads taught (PROTOCOL.md terms learned_*): measured over predicted
// page-load time of its single-path and of its multipath loads, exponentially weighted, with how many loads each.
type Correction struct {
	SP     float64 `json:"sp"`
	MP     float64 `json:"mp"`
	SPLoad int64   `json:"sp_loads"`
	MPLoad int64   `json:"mp_loads"`
}

// Protocols an origin may speak.
const (
	H2      = "h2"
	HTTP1   = "http/1.1"
	H3      = "h3"
	Unknown = "unknown"
)

// Input is everything one evaluation depends on. Its JSON form (without Params) is what the decision log keeps,
// so that a logged decision can be evaluated again under other parameters (mpsurf-host replay).
type Input struct {
	Origin    string          `json:"origin"`
	Protocol  string          `json:"protocol"` // h2, http/1.1, h3 or unknown ("" counts as unknown)
	Size      Size            `json:"size"`
	Primary   *Path           `json:"primary"`   // the path the connection starts on (WiFi, else wired); nil: from priors
	Secondary *Path           `json:"secondary"` // the cellular path; nil: from priors; Up false: none usable
	RRC       *RRC            `json:"rrc"`       // the cellular radio; nil: assumed idle
	Prefs     *protocol.Prefs `json:"prefs"`
	Battery   *Battery        `json:"battery"`
	Usage     *Usage          `json:"usage"`
	// Conns is how many parallel connections the page used to its origin (0: unknown; HTTP/1.1 then assumes
	// http1.connections).
	Conns int64 `json:"conns,omitempty"`
	// Learned is the origin's correction from measured loads; nil: none yet.
	Learned *Correction `json:"learned,omitempty"`
	// Override is the user's rule for this site: OverrideAlways, OverrideNever, or "" (the model decides).
	Override string  `json:"override,omitempty"`
	Params   *Params `json:"-"`
}

// The user's per-site rules (PROTOCOL.md Prefs.overrides); "auto" is the empty string here.
const (
	OverrideAlways = protocol.RuleAlways
	OverrideNever  = protocol.RuleNever
)

// Term is one line of the explanation (PROTOCOL.md Decision.terms).
type Term struct {
	Name  string   `json:"name"`
	Value *float64 `json:"value"`
	Unit  string   `json:"unit"`
	Note  string   `json:"note"`
}

// Output is the model's decision for the origin, now.
type Output struct {
	// Multipath says whether this page is expected to go multipath: θ1 is 0, or the page's observed size lies
	// above θ1. A page of unknown size starts single path and goes multipath only if the site's connections pass θ1 together.
	Multipath bool
	// Theta1 is the bytes a connection must have received before its cellular subflow opens; nil: never.
	Theta1     *int64
	Theta2     *int64 // nil: no cap
	DeadlineMS int64
	Reason     string
	Terms      []Term
	Size       Size
	Protocol   string // what the model assumed
	// Rule is true when a rule decided rather than the weighing: the user's site rule, the battery floor, an
	// exhausted quota, no cellular path, or h3.
	Rule bool
	// Prior is true when at least one link came from the priors.
	Prior bool
	// Trial is true when the decision is multipath to learn: the weighing came out just short, within the
	// model's own error (LearningParams.TrialError), and the origin has too few multipath loads to correct it.
	Trial bool
	// PreferCellular: once a connection's cellular subflow is up, its WiFi subflow becomes a backup, so that the
	// page flows over the cellular path alone (the helper's prefer_cellular); only with Multipath or θ1 set.
	PreferCellular bool
	// Mode is the preference mode the weights came from.
	Mode string
	// Expected is the expected utility at θ1 (seconds-equivalent; 0 for never).
	Expected float64
	// PredictedMS are the predicted page-load times (transfer plus the browser's processing) of this page's
	// typical size, single path and with the decision carried out, for the learned corrections.
	PredictedSPMS, PredictedMPMS float64
}
