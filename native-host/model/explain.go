package model

import (
	"math"
	"strconv"
	"strings"
)

// explain fills the decision's flag, reason, terms and predictions from the chosen θ1 (nil: never).
func (e *evaluation) explain(out *Output, theta *float64, eu float64) {
	sc := e.central()
	st := e.typical
	var a at
	pOver := 0.0
	if theta == nil {
		// What multipath from the first byte would have given, for the terms.
		mp, t0 := e.mpCurve(sc, 0)
		a = e.eval(sc, &mp, t0, st, sc.primSP.inv(st))
		out.Expected = e.expected(0)
	} else {
		for i, s := range e.sizes.s {
			if s > *theta {
				pOver += e.sizes.w[i]
			}
		}
		if st > *theta {
			mp, t0 := e.mpCurve(sc, *theta)
			a = e.eval(sc, &mp, t0, st, sc.primSP.inv(st))
		} else {
			a = at{s: st, tSP: sc.primSP.inv(st)}
			a.tMP, a.pltSP = a.tSP, (a.tSP+e.process)*e.rSP
			a.pltMP = a.pltSP
		}
	}
	out.PredictedSPMS, out.PredictedMPMS, _ = e.predict(theta, st)

	page := "this page (" + HumanBytes(st) + ", " + e.evidence(out.Size) + ")"
	gain := "saves " + strconv.FormatFloat(a.saved, 'f', 2, 64) + " s for " + strconv.FormatFloat(a.cellJ, 'f', 1, 64) +
		" J and " + HumanBytes(a.cellBytes) + " cellular"
	switch {
	case theta == nil:
		out.Multipath = false
		out.Reason = "single path: multipath is not worth its cost for this page's likely sizes (" + page + " would save " +
			strconv.FormatFloat(a.saved, 'f', 2, 64) + " s for " + strconv.FormatFloat(a.cellJ, 'f', 1, 64) + " J)"
	case *theta == 0: // only for a page seen before (candidates)
		out.Multipath = true
		out.Reason = "multipath from the first byte: " + page + " " + gain
	case e.observed && st > *theta:
		out.Multipath = true
		out.Reason = "multipath once the site has sent θ1 = " + HumanBytes(*theta) + ": " + page + " " + gain
	case e.observed:
		out.Multipath = false
		out.Reason = "single path: " + page + " stays under θ1 = " + HumanBytes(*theta) +
			"; past it, cellular joins"
	default:
		out.Multipath = false
		out.Reason = "size unknown: single path until the site has sent θ1 = " + HumanBytes(*theta) +
			", then multipath (" + strconv.FormatFloat(100*pOver, 'f', 0, 64) + " % likely)"
	}
	if out.PreferCellular && theta != nil {
		out.Reason += "; WiFi as backup once cellular joins: the cellular path alone (" + mbit(sc.sec.rate) +
			") is faster than both together beside a " + mbit(sc.prim.rate) + " WiFi"
	}
	if e.prior {
		out.Reason += "; links partly from priors"
	}
	w := e.w
	out.Terms = []Term{
		term("size", st, "B", "the page's typical size: "+e.evidence(out.Size)),
		term("p_over_theta1", pOver, "", "probability that the page's connections pass θ1 (0 for never)"),
		term("expected_utility", eu, "s", "expected utility at θ1 over link scenarios and likely sizes; never when none is positive"),
		term("time_sp", a.tSP, "s", "transfer over the primary path alone (new HTTPS connection)"),
		term("time_mp", a.tMP, "s", "transfer with the decision carried out: the secondary joins after ESTABLISHED or θ1, the radio and the join"),
		term("plt_sp", a.pltSP, "s", "page-load time, single path, with the browser's processing and what was learned"),
		term("plt_mp", a.pltMP, "s", "page-load time with the decision carried out"),
		term("time_saved", a.saved, "s", "plt_sp - plt_mp"),
		term("late_saved", a.late, "s", "seconds saved past the tolerance T"),
		term("cellular_bytes", a.cellBytes, "B", "bytes the cellular subflow carries (capped at θ2)"),
		term("cellular_energy", a.cellJ, "J", "promotion, join, active and tail at the margin of RRC state "+sc.rrc+e.spreadNote()),
		term("wifi_energy", a.wifiJ, "J", "WiFi active time saved (negative: a saving)"),
		term("primary_rate", sc.prim.rate*8, "bit/s", "primary path's rate cap (link rate or loss bound)"+e.linkNote(0)),
		term("primary_rtt", sc.prim.rtt*1000, "ms", "primary path's RTT"),
		term("secondary_rate", sc.sec.rate*8, "bit/s", "cellular path's rate cap"+e.linkNote(1)),
		term("secondary_rtt", sc.sec.rtt*1000, "ms", "cellular path's RTT"),
		term("prefer_cellular", b2f(out.PreferCellular), "", "1: the WiFi subflow becomes a backup once the cellular one is up"),
		term("learned_mp", e.rMP, "", "this origin's multipath loads over what its single-path loads' error predicts (1 until both kinds were measured)"),
		term("weight_time", w.TimePerS, "1/s", "mode weight of a second saved"),
		term("weight_late", w.LatePerS, "1/s", "mode weight of a second saved past T, on top"),
		term("weight_energy", w.EnergyPerJ, "1/J", "mode weight of a joule (0 when charging and energy is free)"),
		term("weight_cellular", w.CellPerMB, "1/MB", "mode weight of a cellular MB, raised as the quota runs out"),
	}
}

// evidence says where the typical size comes from.
func (e *evaluation) evidence(sz Size) string {
	switch {
	case len(sz.Points) > 0:
		return strconv.Itoa(len(sz.Points)) + " loads of this page"
	case len(sz.Origin) > 0:
		return strconv.Itoa(len(sz.Origin)) + " loads of this site"
	case sz.Known && sz.Median != nil:
		return "given"
	}
	return "never seen: prior"
}

func (e *evaluation) linkNote(i int) string {
	if !e.prior || len(e.scens) == 1 {
		return ""
	}
	return "; the central one of the scenarios the priors span"
}

func term(name string, v float64, unit, note string) Term {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return Term{Name: name, Unit: unit, Note: note + " (never)"}
	}
	return Term{Name: name, Value: &v, Unit: unit, Note: note}
}

// humanBytes writes n in SI units with at most one decimal: 200000 -> "200 kB".
func HumanBytes(n float64) string {
	if n < 1000 {
		return strconv.FormatFloat(math.Round(n), 'f', 0, 64) + " B"
	}
	units := []string{"kB", "MB", "GB", "TB", "PB"}
	u := -1
	for n >= 1000 && u < len(units)-1 {
		n /= 1000
		u++
	}
	return strconv.FormatFloat(math.Round(n*10)/10, 'f', -1, 64) + " " + units[u]
}

// mbit writes a rate in bytes per second as Mbit/s with one decimal.
func mbit(bps float64) string { return strconv.FormatFloat(bps*8/1e6, 'f', 1, 64) + " Mbit/s" }

// HumanBits writes a rate in bits per second with an SI prefix and at most one decimal: 7040000 -> "7 Mbit/s".
func HumanBits(bps float64) string {
	units := []string{"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"}
	u := 0
	for math.Abs(bps) >= 1000 && u < len(units)-1 {
		bps /= 1000
		u++
	}
	return strconv.FormatFloat(math.Round(bps*10)/10, 'f', -1, 64) + " " + units[u]
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// spreadNote names the radio's states and their probabilities when the model weighed more than one.
func (e *evaluation) spreadNote() string {
	if len(e.states) < 2 {
		return ""
	}
	parts := make([]string, len(e.states))
	for i, st := range e.states {
		parts[i] = st.s.name + " " + strconv.FormatFloat(100*st.w, 'f', 0, 64) + " %"
	}
	return " (the radio unsure, each weighed: " + strings.Join(parts, ", ") + ")"
}
