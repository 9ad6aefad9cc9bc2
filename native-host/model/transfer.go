package model

import "fmt"

// Curves are the model's transfer curves for one pair of measured paths, exported for tools that predict whole
// page loads from them (e2e/calibrate compares those predictions with the testbed). Evaluate builds the same
// curves; the radio is taken as already connected, so no promotion delay is added (the testbed's links emulate
// none).
type Curves struct {
	sc scene
}

// NewCurves builds the curves of a new HTTPS connection over primary alone, over secondary alone, and over
// MPTCP with primary as the first subflow, using p's transport and multipath numbers.
func NewCurves(p *Params, primary, secondary *Path) (*Curves, error) {
	if !primary.measured() || !secondary.measured() {
		return nil, fmt.Errorf("model: both paths need an RTT and a downlink rate")
	}
	tr := &p.Transport
	c := &Curves{sc: scene{p: p}}
	sc := &c.sc
	sc.prim, sc.sec = linkOf(primary, tr), linkOf(secondary, tr)
	sc.primSP = curve(sc.prim, firstByte(sc.prim.rtt, tr), tr)
	sc.secSP = curve(sc.sec, firstByte(sc.sec.rtt, tr), tr)
	sc.secReady = tr.HandshakeRTTs * sc.prim.rtt
	secStart := max(firstByte(sc.prim.rtt, tr), sc.secReady+(tr.JoinRTTs+1)*sc.sec.rtt)
	sc.secMP = curve(sc.sec, secStart, tr)
	sc.mp = sum(&sc.primSP, &sc.secMP, p.Multipath.HOLDiscount)
	return c, nil
}

// Primary is when s bytes have arrived over a new connection on the primary path alone, in seconds from its SYN.
func (c *Curves) Primary(s float64) float64 { return c.sc.primSP.inv(s) }

// Secondary is the same over the secondary path alone.
func (c *Curves) Secondary(s float64) float64 { return c.sc.secSP.inv(s) }

// Multipath is the same over MPTCP, primary first, the secondary's bytes discounted for head-of-line blocking.
func (c *Curves) Multipath(s float64) float64 { return c.sc.mp.inv(s) }

// RTTs are the two paths' round-trip times in seconds, primary first.
func (c *Curves) RTTs() (primary, secondary float64) { return c.sc.prim.rtt, c.sc.sec.rtt }

// Rates are the two paths' rate caps in bytes per second (link rate or loss bound), primary first.
func (c *Curves) Rates() (primary, secondary float64) { return c.sc.prim.rate, c.sc.sec.rate }
