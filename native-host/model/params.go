package model

import (
	"math"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

// Params are the model's numbers: policy-models/model.json plus the radio files it names and the baseline policy.
type Params struct {
	ID      string
	Version int64

	Transport Transport
	Multipath MultipathParams
	Modes     map[string]Weights // "performance", "balanced", "battery_saver"
	Defaults  Defaults
	Quota     QuotaParams
	HTTP1     HTTP1Params
	Page      PageParams
	Theta     ThetaParams
	Sizes     SizeParams
	// Priors maps a technology ("wifi", "ethernet", "lte", "3g") to what a link of it is like before it is measured.
	Priors map[string]LinkPrior
	// RateMemory is how fast a measured cellular rate stops saying what the link does now.
	RateMemory RateMemory
	Learning   LearningParams

	// Radios maps a technology ("lte", "3g", "wifi") to its power model.
	Radios map[string]*radio.Model
	// BaselineID and BaselineVersion name the network-wide policy file (policy-models/baseline.json).
	BaselineID      string
	BaselineVersion int64
	// BaselineMultipath and BaselineTheta1 are that policy's decision: whether it takes multipath at all and the
	// bytes after which it asks for the cellular subflow. Battery-saver mode promises never to spend more cellular
	// data or radio energy than that policy would (evaluation.promised).
	BaselineMultipath bool
	BaselineTheta1    float64

	Sources map[string]string
}

// Transport describes a new HTTPS connection.
type Transport struct {
	MSSBytes        float64 // payload bytes per segment
	InitialWindow   float64 // segments (IW10)
	HandshakeRTTs   float64 // TCP
	TLSRTTs         float64 // TLS 1.3
	RequestRTTs     float64 // request up and the first response byte back
	MathisC         float64 // constant of the loss bound
	JoinRTTs        float64 // MP_JOIN on the secondary path, before the server may send on it
	EstablishedRTTs float64 // primary RTTs until the client's MPTCP connection is fully established
	MaxSlowStartRs  int     // rounds after which slow start is assumed over
}

// MultipathParams are MPTCP's scheduler terms and the helper's reaction.
type MultipathParams struct {
	HOLDiscount   float64 // share of the secondary subflow's bytes that count towards completion
	HOLDiscount3G float64 // the same for a 3G secondary
	// HOLRateRatio is the secondary-to-primary rate ratio HOLDiscount was measured at; HOLDiscountFast the share
	// measured beside a secondary HOLFastRateRatio times faster than the primary (HOL interpolates).
	HOLRateRatio, HOLDiscountFast, HOLFastRateRatio float64
	ReactMS                                         float64 // from the event (ESTABLISHED, θ1 bytes received) to the helper's SUBFLOW_CREATE
}

// Weights value time, lateness, energy and cellular data against each other, in seconds-equivalent.
type Weights struct {
	TimePerS   float64 // per second saved
	LatePerS   float64 // per second saved beyond the user's tolerance T, on top of TimePerS
	EnergyPerJ float64 // per joule of extra radio energy
	CellPerMB  float64 // per MB carried over cellular
}

// Defaults are the preferences used until the user sets them.
type Defaults struct {
	Mode                string
	DeadlineMS          int64
	BatteryFloorPercent int64
	ChargingUnlimited   bool
}

// QuotaParams turn a quota into θ2 and into the weight of a cellular megabyte.
type QuotaParams struct {
	PagesPerDay          float64 // a day's share of the remaining quota is spread over this many page loads
	ScarcityMax          float64 // the cellular weight grows as quota/remaining, up to this factor
	BatterySaverCapBytes int64   // θ2 in battery-saver mode when there is no quota
}

// HTTP1Params: an HTTP/1.1 page spreads over parallel persistent connections, each with its own θ1.
type HTTP1Params struct {
	Connections float64 // parallel connections per origin when none were measured
}

// PageParams are the browser's processing time outside the network. They add alike to single-path and multipath
// loads; they turn the transfer times into page-load times for the learned corrections and for e2e/calibrate.
type PageParams struct {
	ProcessingMS          float64 // per page
	ProcessingMSPerObject float64 // per object after the first
}

// ThetaParams bound and grid the θ1 choice.
type ThetaParams struct {
	MinBytes, MaxBytes float64
	GridRatio          float64 // candidates between observed sizes, this factor apart
	SizeMargin         float64 // θ1 just above an observed size is this much above it (a page's size varies a little)
	OverheadBytes      float64 // and this many bytes more: the connection's TLS flight, framing and headers
	IndifferenceS      float64 // expected utilities closer than this are ties, won by the larger θ1
	SmallPageBytes     float64 // no θ1 below this for a page never seen or seen smaller
}

// SizeParams are the page-size prior and how observed sizes shrink towards it.
type SizeParams struct {
	PriorP10, PriorP50, PriorP90 float64 // bytes, a never-seen page
	PseudoCount                  float64 // each level of the fallback (path class, origin, prior) weighs as this many loads
	PriorPoints                  int     // equal-weight quantile points the prior is evaluated at
	OthersPseudoCount            float64 // the prior weighs as this many loads against the user's loads elsewhere
	ClassPseudoCount             float64 // the levels below weigh as this many loads against the page's own
	// A page never seen by the host is, as often as not, one the browser has loaded before: WarmShare of the
	// prior is a warm-cache load, its median WarmP50, its spread the landing pages' (scaled to that median).
	WarmShare, WarmP50 float64
}

// LinkPrior is one technology's link before it is measured: the median downlink rate, the spread of ln(rate)
// (a log-normal), the RTT and the loss.
type LinkPrior struct {
	DownMbit float64
	Spread   float64
	RTTMS    float64
	Loss     float64
}

// RateMemory is the correlation of a cellular link's ln(rate) with itself age seconds later, as two exponentials:
// rho(age) = SlowShare e^(-age/SlowS) + (1 - SlowShare) e^(-age/FastS). The model reads a measured rate of that
// age as the conditional of a log-normal around the prior: median prior^(1-rho) x measured^rho, spread
// sqrt(rho^2 spread_measured^2 + (1 - rho^2) spread_prior^2). A fresh measurement stands; an old one is the prior,
// or, where the link's own measurements give a level (Path.DownMeanBps), that level weighed n/(n+MeanPseudoCount)
// against the prior's median.
type RateMemory struct {
	FastS, SlowS, SlowShare float64
	MeanPseudoCount         float64 // the prior's median weighs as this many of the link's own measurements
}

// Rho is the correlation at age seconds: 1 now, 0 long after.
func (m RateMemory) Rho(age float64) float64 {
	if age <= 0 {
		return 1
	}
	if m.FastS <= 0 || m.SlowS <= 0 {
		return 1 // no memory given: a measurement keeps
	}
	return m.SlowShare*math.Exp(-age/m.SlowS) + (1-m.SlowShare)*math.Exp(-age/m.FastS)
}

// LearningParams bound the corrections learned from measured page loads.
type LearningParams struct {
	HalfLifeLoads float64 // a load's weight halves after this many newer loads of the origin
	MaxFactor     float64 // a correction stays within [1/MaxFactor, MaxFactor]
	MinLoads      float64 // loads of a kind before its correction applies
	// TrialError is the model's measured error on a multipath page-load time (a fraction): where multipath is
	// predicted to lose by less than this share of the page's single-path time, the prediction cannot tell, and
	// the origin's first MinLoads multipath loads are tried so that their measurements decide. 0: never tried.
	TrialError float64
	// GainTrialMinRatio: a predicted saving within TrialError is tried only where the secondary's rate is at
	// least this share of the primary's: beside a much slower secondary the curves overstate what it adds
	// (head-of-line blocking), and a trial there costs time as well as energy.
	GainTrialMinRatio float64
}

// HOL is the share of the secondary's bytes that shorten a transfer when the secondary is ratio times as fast as
// the primary: HOLDiscount up to HOLRateRatio, HOLDiscountFast from HOLFastRateRatio, linear in the ratio's
// logarithm between. The faster the secondary, the more of the page waits behind what the scheduler still puts on
// the slow primary's queue.
func (m MultipathParams) HOL(ratio float64) float64 {
	lo, hi := m.HOLRateRatio, m.HOLFastRateRatio
	switch {
	case !(ratio > lo) || !(hi > lo):
		return m.HOLDiscount
	case ratio >= hi:
		return m.HOLDiscountFast
	}
	f := math.Log(ratio/lo) / math.Log(hi/lo)
	return m.HOLDiscount + f*(m.HOLDiscountFast-m.HOLDiscount)
}
