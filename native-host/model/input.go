package model

import "github.com/mpsurf/mpsurf/native-host/protocol"

// Path is one network path as PROTOCOL.md's Path object (status --json prints these). Rates are bits per second,
// loss a probability.
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
}

// measured says whether the path has what the model needs: up, an RTT and a downlink rate.
func (p *Path) measured() bool {
	return p != nil && p.Up && p.RTTMS != nil && *p.RTTMS > 0 && p.DownBps != nil && *p.DownBps > 0
}

// RRC is the cellular radio's state (PROTOCOL.md's RRC object). State is a state name of the technology's power
// file ("idle", "promotion", "continuous", "long_drx", "fach", ...); SinceMS how long it has been in it.
type RRC struct {
	Interface string `json:"interface,omitempty"`
	Tech      string `json:"tech"` // lte or 3g
	State     string `json:"state"`
	SinceMS   int64  `json:"since_ms"`
	Source    string `json:"source,omitempty"`
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

// Size is the page-size prediction (PROTOCOL.md Decision.size).
type Size struct {
	Known   bool   `json:"known"`
	Median  *int64 `json:"median"`
	P90     *int64 `json:"p90"`
	Samples int64  `json:"samples"`
	Source  string `json:"source"`
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
	Primary   *Path           `json:"primary"`   // the path the connection starts on (WiFi, as in the seeds); nil when not measured
	Secondary *Path           `json:"secondary"` // the cellular path; nil when not measured
	RRC       *RRC            `json:"rrc"`       // the cellular radio; nil: assumed idle
	Prefs     *protocol.Prefs `json:"prefs"`
	Battery   *Battery        `json:"battery"`
	Usage     *Usage          `json:"usage"`
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
	Multipath  bool
	Theta1     int64
	Theta2     *int64 // nil: no cap
	DeadlineMS int64
	Reason     string
	Terms      []Term
	Size       Size
	Protocol   string // what the model assumed
	// Fallback is true when no path is measured and the decision is the baseline policy's.
	Fallback bool
	// Rule is true when a rule decided rather than the weighing: the user's site rule, the battery floor, an
	// exhausted quota, or h3.
	Rule bool
	// Mode is the preference mode the weights came from.
	Mode string
}
