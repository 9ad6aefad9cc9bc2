package model

import (
	"fmt"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// Curves are the model's transfer curves for one pair of measured paths, exported for tools that predict whole
// page loads from them (e2e/calibrate compares those predictions with the testbed). Evaluate builds the same
// curves; the radio is taken as already connected, so no promotion delay is added (the testbed's links emulate
// none), and the secondary is asked for at ESTABLISHED (θ1 = 0, as the in-kernel path manager does).
type Curves struct {
	e  *evaluation
	mp plf
	sa plf // the secondary alone, a new connection
}

// NewCurves builds the curves of a new HTTPS connection over primary alone, over secondary alone, and over
// MPTCP with primary as the first subflow, using p's transport and multipath numbers.
func NewCurves(p *Params, primary, secondary *Path) (*Curves, error) {
	if !primary.measured() || !secondary.measured() {
		return nil, fmt.Errorf("model: both paths need an RTT and a downlink rate")
	}
	in := Input{Params: p, Protocol: H2, Primary: primary, Secondary: secondary}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	m := p.Radios["lte"]
	in.RRC = &RRC{Tech: "lte", State: m.Connected.Name}
	var notes []string
	e := newEvaluation(in, p.Modes[p.Defaults.Mode], protocol.Prefs{DeadlineMS: p.Defaults.DeadlineMS}, nil, false, &notes)
	c := &Curves{e: e}
	sc := &e.scens[0]
	c.mp, _ = e.mpCurve(sc, 0)
	c.sa = curve(sc.sec, firstByte(sc.sec.rtt, &p.Transport), &p.Transport, 1)
	return c, nil
}

// Primary is when s bytes have arrived over a new connection on the primary path alone, in seconds from its SYN.
func (c *Curves) Primary(s float64) float64 { return c.e.scens[0].primSP.inv(s) }

// Secondary is the same over the secondary alone.
func (c *Curves) Secondary(s float64) float64 { return c.sa.inv(s) }

// Multipath is the same over MPTCP, primary first, the secondary's bytes discounted for head-of-line blocking.
func (c *Curves) Multipath(s float64) float64 { return min(c.mp.inv(s), c.Primary(s)) }

// RTTs are the two paths' round-trip times in seconds, primary first.
func (c *Curves) RTTs() (primary, secondary float64) {
	return c.e.scens[0].prim.rtt, c.e.scens[0].sec.rtt
}

// Rates are the two paths' rate caps in bytes per second (link rate or loss bound), primary first.
func (c *Curves) Rates() (primary, secondary float64) {
	return c.e.scens[0].prim.rate, c.e.scens[0].sec.rate
}

// PredictLoad is the page-load time (transfer and the browser's processing, in ms) the model predicts for a page
// of size bytes with in's links, single path and with θ1 carried out (nil: never; preferCellular: WiFi as backup
// once cellular joins, Output.PreferCellular), and whether its cellular subflow would carry data: what a measured
// load is compared with to learn a correction.
func PredictLoad(in Input, theta1 *int64, preferCellular bool, size int64) (spMS, mpMS float64, used bool, err error) {
	if err := in.Validate(); err != nil {
		return 0, 0, false, err
	}
	prefs := protocol.Prefs{Mode: in.Params.Defaults.Mode, DeadlineMS: in.Params.Defaults.DeadlineMS}
	var notes []string
	e := newEvaluation(in, in.Params.Modes[prefs.Mode], prefs, nil, false, &notes)
	e.cellFirst = preferCellular
	var th *float64
	if theta1 != nil {
		v := float64(*theta1)
		th = &v
	}
	spMS, mpMS, used = e.predict(th, float64(size))
	return spMS, mpMS, used, nil
}
