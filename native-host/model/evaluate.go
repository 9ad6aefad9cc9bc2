package model

import (
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"math"
	"strconv"
	"strings"
)

// scene is everything about one evaluation that does not depend on the transfer size.
type scene struct {
	p          *Params
	w          Weights
	deadline   float64 // s
	prim, sec  link
	primSP     plf // primary alone, a new connection
	secSP      plf // secondary alone, a new connection (after any promotion)
	mp         plf // primary + discounted secondary subflow
	secMP      plf // the secondary subflow's raw bytes
	secReady   float64
	radio      radioState
	wifiW      float64 // WiFi active power
	margin     float64
	primaryWiF bool
}

// at is the model at size s (bytes): every term and the utility.
type at struct {
	s, tPrim, tSec, tSP, tMP, saved, dBT, cellBytes, cellJ, wifiJ, u float64
}

func (sc *scene) eval(s float64) at {
	var a at
	a.s = s
	a.tPrim = sc.primSP.inv(s)
	a.tSec = sc.secSP.inv(s)
	// Without multipath the device browses over its primary path (WiFi, as in the seeds), so that is the single
	// path multipath is measured against, for benefit and costs alike (seed 001 §4.2: costs 'compared to SPTCP
	// over WiFi'). The secondary alone is reported, not chosen: switching the primary is not this model's decision.
	a.tSP = a.tPrim
	a.tMP = sc.mp.inv(s)
	a.saved = a.tSP - a.tMP
	a.dBT = math.Min(s, sc.mp.at(sc.deadline)) - math.Min(s, sc.primSP.at(sc.deadline))
	a.cellBytes = math.Max(0, s-sc.primSP.at(a.tMP))

	// Cellular energy at the margin of the RRC state: the join wakes the radio even when no data follows; then
	// the radio is active while it carries its share at the secondary's rate, and runs its tail.
	m := sc.radio.model
	active := sc.p.Transport.JoinRTTs*sc.sec.rtt + a.cellBytes/sc.sec.rate
	a.cellJ = sc.radio.promotionJ + activeW(m, sc.sec.rate*8)*active + sc.radio.tailExtensionJ()
	// WiFi stays on for the whole single-path transfer; multipath ends it sooner.
	a.wifiJ = -sc.wifiW * math.Max(0, a.tPrim-a.tMP)

	w := sc.w
	a.u = w.TimePerS*a.saved + w.BytesPerMB*a.dBT/1e6 - w.EnergyPerJ*(a.cellJ+a.wifiJ) - w.CellPerMB*a.cellBytes/1e6 - sc.margin
	return a
}

// theta1 is the smallest size whose utility is positive: a log-grid scan for the first positive point, then
// bisection in its bracket. ok is false when no size up to search.max_bytes is worth it.
func (sc *scene) theta1() (float64, bool) {
	s := &sc.p.Search
	lo := s.MinBytes
	if sc.eval(lo).u > 0 {
		return lo, true
	}
	step := math.Pow(s.MaxBytes/s.MinBytes, 1/float64(s.GridPoints-1))
	prev := lo
	for i := 1; i < s.GridPoints; i++ {
		x := s.MinBytes * math.Pow(step, float64(i))
		if i == s.GridPoints-1 {
			x = s.MaxBytes
		}
		if sc.eval(x).u > 0 {
			a, b := prev, x
			for j := 0; j < s.BisectSteps; j++ {
				mid := math.Sqrt(a * b)
				if sc.eval(mid).u > 0 {
					b = mid
				} else {
					a = mid
				}
			}
			return math.Ceil(b), true
		}
		prev = x
	}
	return s.MaxBytes, false
}

// Evaluate decides for one origin, now. It reads nothing but its input. A user's site rule (Input.Override)
// has the last word, but the terms still show what the model would have weighed.
func Evaluate(in Input) Output {
	out := evaluate(in)
	switch in.Override {
	case OverrideAlways:
		if out.Protocol == H3 {
			out.Reason = "your site rule says always, but " + out.Reason
			return out
		}
		out.Multipath, out.Theta1, out.Fallback, out.Rule = true, 0, false, true
		out.Reason = "your site rule: always multipath on this site"
	case OverrideNever:
		out.Multipath, out.Fallback, out.Rule = false, false, true
		out.Reason = "your site rule: never multipath on this site"
	}
	return out
}

func evaluate(in Input) Output {
	p := in.Params
	prefs := protocol.Prefs{Mode: p.Defaults.Mode, DeadlineMS: p.Defaults.DeadlineMS,
		BatteryFloorPercent: p.Defaults.BatteryFloorPercent, ChargingUnlimited: p.Defaults.ChargingUnlimited}
	if in.Prefs != nil {
		prefs = *in.Prefs
	}
	w, ok := p.Modes[prefs.Mode]
	if !ok {
		prefs.Mode = p.Defaults.Mode
		w = p.Modes[prefs.Mode]
	}
	out := Output{DeadlineMS: prefs.DeadlineMS, Size: in.Size, Mode: prefs.Mode, Theta1: p.BaselineTheta1}
	var notes []string
	switch in.Protocol {
	case H2, HTTP1, H3:
		out.Protocol = in.Protocol
	default:
		out.Protocol = Unknown
		notes = append(notes, "protocol unknown, assumed h2")
	}
	if !in.Size.Known || in.Size.Median == nil {
		out.Size.Known = false
	}

	if out.Protocol == H3 {
		out.Rule = true
		out.Reason = "h3: QUIC runs over UDP, not TCP, so MPTCP does not apply; not decided, single path"
		out.Terms = []Term{{Name: "protocol", Unit: "", Note: "h3 (QUIC): MPTCP is a TCP extension; nothing to decide"}}
		return out
	}

	// θ2 and the weight of a cellular megabyte, from the quota.
	if prefs.QuotaBytes != nil {
		used, days := int64(0), int64(1)
		if in.Usage != nil {
			used = in.Usage.UsedBytes
			days = max(in.Usage.DaysLeft, 1)
		}
		remaining := max(*prefs.QuotaBytes-used, 0)
		cap := int64(float64(remaining) / float64(days) / p.Quota.PagesPerDay)
		out.Theta2 = &cap
		scarcity := p.Quota.ScarcityMax
		if remaining > 0 {
			scarcity = math.Min(scarcity, float64(*prefs.QuotaBytes)/float64(remaining))
		}
		w.CellPerMB *= math.Max(1, scarcity)
	} else if prefs.Mode == BatterySaver {
		cap := p.Quota.BatterySaverCapBytes
		out.Theta2 = &cap
	}
	charging := in.Battery != nil && in.Battery.Present && in.Battery.Charging
	if charging && prefs.ChargingUnlimited {
		w.EnergyPerJ = 0
	}

	if b := in.Battery; b != nil && b.Present && !b.Charging && b.Percent < float64(prefs.BatteryFloorPercent) {
		out.Rule = true
		out.Reason = "on battery at " + strconv.FormatFloat(b.Percent, 'f', 0, 64) + " %, below the floor of " +
			strconv.FormatInt(prefs.BatteryFloorPercent, 10) + " %: single path"
		out.Terms = []Term{term("battery_percent", b.Percent, "%", "below the user's floor: no multipath")}
		return out
	}
	if out.Theta2 != nil && *out.Theta2 == 0 {
		out.Rule = true
		out.Reason = "cellular quota used up: single path"
		out.Terms = []Term{term("theta2", 0, "B", "no cellular bytes left this cycle")}
		return out
	}
	if !in.Primary.measured() || !in.Secondary.measured() {
		out.Fallback = true
		out.Multipath = true
		out.Reason = "no path measurement yet: seed 001 §4.2 baseline, multipath for transfers of at least " +
			humanBytes(float64(p.BaselineTheta1))
		out.Terms = []Term{{Name: "paths", Note: "not measured yet; the baseline policy applies"}}
		return out
	}

	tech := in.Secondary.Kind
	if in.RRC != nil {
		tech = in.RRC.Tech
	}
	rm, ok := p.Radios[tech]
	if !ok {
		rm = p.Radios["lte"]
		notes = append(notes, "cellular technology unknown, assumed LTE")
	}
	rs, known := stateOf(rm, in.RRC)
	if !known {
		notes = append(notes, "RRC state unknown, assumed idle")
	}
	tr := &p.Transport
	sc := scene{p: p, w: w, deadline: float64(prefs.DeadlineMS) / 1000, radio: rs}
	sc.prim, sc.sec = linkOf(in.Primary, tr), linkOf(in.Secondary, tr)
	sc.primSP = curve(sc.prim, firstByte(sc.prim.rtt, tr), tr)
	sc.secSP = curve(sc.sec, rs.delay+firstByte(sc.sec.rtt, tr), tr)
	sc.secReady = tr.HandshakeRTTs*sc.prim.rtt + rs.delay
	// The join's last ACK reaches the server half an RTT after the client's, and data needs another half back.
	secStart := math.Max(firstByte(sc.prim.rtt, tr), sc.secReady+(tr.JoinRTTs+1)*sc.sec.rtt)
	sc.secMP = curve(sc.sec, secStart, tr)
	sc.mp = sum(&sc.primSP, &sc.secMP, p.Multipath.HOLDiscount)
	if wm, ok := p.Radios["wifi"]; ok && in.Primary.Kind == "wifi" {
		sc.wifiW = activeW(wm, 0)
	}
	if out.Protocol == HTTP1 {
		if prefs.Mode != Performance {
			t1, _ := sc.theta1()
			out.Theta1 = int64(t1)
			out.Reason = "http/1.1 gains little from multipath (seed 000 §4: median -0.1 %): single path"
			out.Terms = sc.terms(sc.eval(t1), w, "at θ1 as if h2")
			return out
		}
		sc.margin = p.HTTP1.PerformanceMinUtility
		notes = append(notes, "http/1.1: multipath only for a large benefit")
	}

	t1, worth := sc.theta1()
	out.Theta1 = int64(t1)
	var a at
	if out.Size.Known {
		a = sc.eval(float64(*in.Size.Median))
		out.Multipath = a.u > 0
		if out.Multipath {
			out.Reason = "multipath: " + humanBytes(a.s) + " page saves " + strconv.FormatFloat(a.saved, 'f', 2, 64) +
				" s for " + strconv.FormatFloat(a.cellJ, 'f', 1, 64) + " J and " + humanBytes(a.cellBytes) + " cellular"
		} else {
			out.Reason = "single path: " + humanBytes(a.s) + " page is below θ1 = " + humanBytes(t1) +
				" (saves " + strconv.FormatFloat(a.saved, 'f', 2, 64) + " s, costs " +
				strconv.FormatFloat(a.cellJ, 'f', 1, 64) + " J)"
		}
		out.Terms = sc.terms(a, w, "at the predicted median size")
	} else {
		a = sc.eval(t1)
		out.Multipath = worth
		if worth {
			out.Reason = "page size unknown: multipath once " + humanBytes(t1) + " have flowed (θ1, enforced at run time)"
		} else {
			out.Reason = "page size unknown: no size up to " + humanBytes(t1) + " is worth multipath now"
		}
		out.Terms = sc.terms(a, w, "at θ1, where the utility crosses zero")
	}
	if !worth && out.Size.Known {
		out.Reason = "single path: no size up to " + humanBytes(p.Search.MaxBytes) + " is worth multipath now"
	}
	if len(notes) > 0 {
		out.Reason += "; " + strings.Join(notes, "; ")
	}
	if len(out.Reason) > 256 {
		out.Reason = out.Reason[:253] + "..."
	}
	return out
}

func term(name string, v float64, unit, note string) Term {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return Term{Name: name, Unit: unit, Note: note + " (never)"}
	}
	return Term{Name: name, Value: &v, Unit: unit, Note: note}
}

func (sc *scene) terms(a at, w Weights, where string) []Term {
	return []Term{
		term("size", a.s, "B", where),
		term("time_sp", a.tSP, "s", "completion over the primary path alone (new HTTPS connection)"),
		term("time_secondary_alone", a.tSec, "s", "completion over the secondary alone, for comparison"),
		term("time_mp", a.tMP, "s", "completion over MPTCP, WiFi primary"),
		term("time_saved", a.saved, "s", "time_sp - time_mp"),
		term("bytes_by_deadline_gain", a.dBT, "B", "B^T_MP - B^T_SP within the deadline (seed 001 §4.1)"),
		term("cellular_bytes", a.cellBytes, "B", "multipath share carried by cellular"),
		term("cellular_energy", a.cellJ, "J", "promotion, active and tail at the margin of RRC state "+sc.radio.name),
		term("wifi_energy", a.wifiJ, "J", "WiFi active time saved (negative: a saving)"),
		term("weight_time", w.TimePerS, "1/s", "mode weight of a second saved"),
		term("weight_bytes", w.BytesPerMB, "1/MB", "mode weight of a MB delivered within the deadline"),
		term("weight_energy", w.EnergyPerJ, "1/J", "mode weight of a joule (0 when charging and energy is free)"),
		term("weight_cellular", w.CellPerMB, "1/MB", "mode weight of a cellular MB, raised as the quota runs out"),
		term("utility", a.u, "s", "weighted benefit minus costs; multipath when positive"),
	}
}

// humanBytes writes n in SI units with at most one decimal: 200000 -> "200 kB".
func humanBytes(n float64) string {
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
