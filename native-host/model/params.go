package model

import (
	"github.com/mpsurf/mpsurf/native-host/radio"
)

// Params are the model's numbers: policy-models/model.json plus the radio files it names and the baseline θ1.
type Params struct {
	ID      string
	Version int64

	Transport Transport
	Multipath MultipathParams
	Modes     map[string]Weights // "performance", "balanced", "battery_saver"
	Defaults  Defaults
	Quota     QuotaParams
	HTTP1     HTTP1Params
	Search    SearchParams
	Page      PageParams

	// Radios maps a technology ("lte", "3g", "wifi") to its power model.
	Radios map[string]*radio.Model
	// BaselineTheta1 is θ1 of the seed policy (policy-models/baseline.json), used when no path is measured;
	// BaselineID and BaselineVersion name that file.
	BaselineTheta1  int64
	BaselineID      string
	BaselineVersion int64

	Sources map[string]string
}

// Transport describes a new HTTPS connection.
type Transport struct {
	MSSBytes       float64 // payload bytes per segment
	InitialWindow  float64 // segments (IW10)
	HandshakeRTTs  float64 // TCP
	TLSRTTs        float64 // TLS 1.3
	RequestRTTs    float64 // request up and the first response byte back
	MathisC        float64 // constant of the loss bound
	JoinRTTs       float64 // MP_JOIN on the secondary path
	MaxSlowStartRs int     // rounds after which slow start is assumed over
}

// MultipathParams are MPTCP's scheduler terms.
type MultipathParams struct {
	HOLDiscount float64 // share of the secondary subflow's bytes that count towards completion
}

// Weights value time, early bytes, energy and cellular data against each other, in seconds-equivalent.
type Weights struct {
	TimePerS   float64 // per second saved
	BytesPerMB float64 // per MB more delivered within the deadline
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

// HTTP1Params: HTTP/1.1 origins gain little from multipath (seed 000 §4, seed 001 §3).
type HTTP1Params struct {
	PerformanceMinUtility float64 // in performance mode, multipath for HTTP/1.1 only when U ≥ this
}

// PageParams are the browser's processing time outside the network. They add alike to single-path and multipath
// loads, so Evaluate does not need them; page-load predictions (e2e/calibrate) do.
type PageParams struct {
	ProcessingMS          float64 // per page
	ProcessingMSPerObject float64 // per object after the first
}

// SearchParams bound the θ1 search.
type SearchParams struct {
	MinBytes, MaxBytes float64
	GridPoints         int
	BisectSteps        int
}
