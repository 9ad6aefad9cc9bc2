// Package model is MPSurf's cost-benefit model (seed 001 §4): for one origin, now, is Multipath TCP over WiFi and
// cellular worth its costs, what is the smallest transfer worth it (θ1) and how many cellular bytes a page may use
// (θ2).
//
// Evaluate is a pure function: no I/O, no clock (time comes in as the RRC state's age), safe for concurrent use.
// Its numbers come from policy-models/model.json (each with a source there) and from the radio power files
// power-lte.json, power-3g.json and power-wifi.json, read through native-host/radio; Load reads and checks them.
//
// Per path it builds B(t), the bytes a new HTTPS connection has delivered by time t (TCP and TLS 1.3 handshakes,
// the request, slow start from IW10 up to the smaller of the link rate and the Mathis et al. loss bound) as a
// piecewise-linear function; the completion time T(S) is its inverse. Multipath adds the secondary subflow's bytes,
// discounted for head-of-line blocking, from the moment its join can carry data (after the primary's handshake, the
// radio's promotion and the MP_JOIN round trip). The utility of multipath for a size S, in seconds-equivalent, is
//
//	U(S) = w_t·(T_SP − T_MP) + w_b·(B^T_MP − B^T_SP) − w_e·ΔE − w_d·cellular MB − margin
//
// with the weights of the user's mode. U grows with S, so θ1 is where it crosses zero, found by a log-grid scan
// and bisection.
package model
