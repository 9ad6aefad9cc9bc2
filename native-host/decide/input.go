package decide

import (
	"context"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/paths"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/rrc"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// View is what Links knows now: the primary path (WiFi, else wired), the cellular secondary, and its radio.
type View struct {
	Primary, Secondary *model.Path
	RRC                *model.RRC
}

// Links measures the device's paths. Meter is the real one.
type Links interface {
	View() View
	// Status is the measurement as status reports it.
	Status() LinkStatus
	// CellRx is the cellular interface's received-bytes counter now; false when there is none.
	CellRx() (int64, bool)
}

// LinkStatus is the sampler's own view: every path, the RRC state, and the cellular interface whose usage counts.
type LinkStatus struct {
	Paths         []paths.Path
	RRC           *rrc.Info
	CellInterface string
}

// Memory is what the host remembers across decisions and sessions. *store.Store is the real one.
type Memory interface {
	// History is the page's size history, with the protocol of the origin's latest load, the measured loads of
	// the page's class (store.PredictWindow of them) and the user's preferences as Prefs returns them.
	History(ctx context.Context, origin, class string) (store.History, error)
	Prefs(ctx context.Context) (*protocol.Prefs, error)
	Usage(ctx context.Context, from time.Time) (rx, tx int64, err error)
}

// Input assembles the model's input for origin's page of path class (store.PathClass; "" unknown), now, from
// every source the Decider has.
func (d *Decider) Input(ctx context.Context, origin, class string) model.Input {
	in := model.Input{Origin: origin, Params: d.cfg.Params}
	if d.cfg.Links != nil {
		v := d.cfg.Links.View()
		in.Primary, in.Secondary, in.RRC = v.Primary, v.Secondary, v.RRC
	}
	if d.cfg.Battery != nil {
		in.Battery = d.cfg.Battery()
	}
	m := d.cfg.Memory
	if m == nil {
		return in
	}
	var prefs *protocol.Prefs
	h, err := m.History(ctx, origin, class)
	if err == nil {
		in.Size, in.Conns = sizeOf(h, class), h.Conns
		if h.Protocol != "" {
			in.Protocol = h.Protocol
		}
		if len(h.Measured) > 0 {
			in.Learned = learned(h.Measured, d.cfg.Params.Learning.HalfLifeLoads)
		}
		prefs, err = h.Prefs, h.PrefsErr
	} else {
		prefs, err = m.Prefs(ctx)
	}
	if err != nil {
		d.cfg.Log.Warn("stored preferences unreadable; defaults apply", "err", err)
	}
	if prefs != nil {
		in.Prefs = prefs
		in.Override = prefs.RuleFor(origin)
		if now := d.cfg.Now(); prefs.QuotaBytes != nil {
			if rx, tx, err := m.Usage(ctx, CycleStart(now, prefs.BillingDay)); err == nil {
				in.Usage = &model.Usage{UsedBytes: rx + tx, DaysLeft: DaysLeft(now, prefs.BillingDay)}
			}
		}
	}
	return in
}

// CycleStart is the start of the billing cycle that contains now, for a quota renewing on billingDay (clamped to
// the month's last day, so 31 means the last day of short months).
func CycleStart(now time.Time, billingDay int64) time.Time {
	if billingDay < 1 || billingDay > 31 {
		billingDay = 1
	}
	day := func(y int, m time.Month) time.Time {
		last := time.Date(y, m+1, 0, 0, 0, 0, 0, now.Location()).Day()
		return time.Date(y, m, min(int(billingDay), last), 0, 0, 0, 0, now.Location())
	}
	start := day(now.Year(), now.Month())
	if start.After(now) {
		start = day(now.Year(), now.Month()-1)
	}
	return start
}

// DaysLeft counts the days from now to the next renewal, at least 1.
func DaysLeft(now time.Time, billingDay int64) int64 {
	start := CycleStart(now, billingDay)
	next := CycleStart(start.AddDate(0, 1, 7), billingDay) // a date safely inside the next cycle
	return max(int64(next.Sub(now).Hours()/24+0.999), 1)
}

// Given is Links and Memory with values given up front: what `mpsurf-host decide` reads from its command line.
type Given struct {
	Paths    View
	Sizes    store.History
	Proto    string
	Settings *protocol.Prefs
}

func (g *Given) View() View            { return g.Paths }
func (g *Given) Status() LinkStatus    { return LinkStatus{} }
func (g *Given) CellRx() (int64, bool) { return 0, false }
func (g *Given) History(context.Context, string, string) (store.History, error) {
	h := g.Sizes
	h.Protocol, h.Prefs = g.Proto, g.Settings
	return h, nil
}
func (g *Given) Prefs(context.Context) (*protocol.Prefs, error)         { return g.Settings, nil }
func (g *Given) Usage(context.Context, time.Time) (int64, int64, error) { return 0, 0, nil }

// sizeOf is the model's view of a page's size history, summarised (median, p10, p90 by nearest rank) from the
// nearest level that has loads.
func sizeOf(h store.History, class string) model.Size {
	sz := model.Size{Points: h.Class, Origin: h.Origin, Others: h.Others, Objects: h.Objects, Samples: int64(h.Samples()),
		Source: "prior: never seen"}
	level := h.Class
	switch {
	case len(h.Class) > 0:
		sz.Source = strconv.Itoa(len(h.Class)) + " loads of path class " + class
	case len(h.Origin) > 0:
		level, sz.Source = h.Origin, strconv.Itoa(len(h.Origin))+" loads of the origin's other pages"
	}
	if len(level) == 0 {
		return sz
	}
	s := slices.Clone(level)
	slices.Sort(s)
	q := func(f float64) *int64 {
		v := s[max(int(math.Ceil(f*float64(len(s))))-1, 0)]
		return &v
	}
	sz.Known, sz.P10, sz.Median, sz.P90 = true, q(0.1), q(0.5), q(0.9)
	return sz
}

// learned is the correction the measured loads of the origin's path class teach, by kind (single path,
// multipath): the geometric mean of measured over predicted page-load time, each load weighing half as much as
// the one after it halfLife loads later (newest first in ms).
func learned(ms []store.Measured, halfLife float64) *model.Correction {
	var c model.Correction
	var sum, wsum [2]float64
	var n [2]int64
	for _, m := range ms {
		if m.PLTms <= 0 || m.PredictedMS <= 0 {
			continue
		}
		k := 0
		if m.MPUsed {
			k = 1
		}
		w := math.Pow(0.5, float64(n[k])/halfLife)
		sum[k] += w * math.Log(m.PLTms/m.PredictedMS)
		wsum[k] += w
		n[k]++
	}
	c.SP, c.MP, c.SPLoad, c.MPLoad = 1, 1, n[0], n[1]
	if wsum[0] > 0 {
		c.SP = math.Exp(sum[0] / wsum[0])
	}
	if wsum[1] > 0 {
		c.MP = math.Exp(sum[1] / wsum[1])
	}
	return &c
}
