package decide

import (
	"context"
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
}

// LinkStatus is the sampler's own view: every path, the RRC state, and the cellular interface whose usage counts.
type LinkStatus struct {
	Paths         []paths.Path
	RRC           *rrc.Info
	CellInterface string
}

// Memory is what the host remembers across decisions and sessions. *store.Store is the real one.
type Memory interface {
	Predict(ctx context.Context, origin string) (store.Size, error)
	Protocol(ctx context.Context, origin string) (string, error)
	Prefs(ctx context.Context) (*protocol.Prefs, error)
	Usage(ctx context.Context, from time.Time) (rx, tx int64, err error)
}

// Input assembles the model's input for origin, now, from every source the Decider has.
func (d *Decider) Input(ctx context.Context, origin string) model.Input {
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
	if size, err := m.Predict(ctx, origin); err == nil {
		in.Size = model.Size{Known: size.Known, Median: size.Median, P90: size.P90, Samples: size.Samples, Source: size.Source}
	}
	if proto, err := m.Protocol(ctx, origin); err == nil && proto != "" {
		in.Protocol = proto
	}
	prefs, err := m.Prefs(ctx)
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
	Size     store.Size
	Proto    string
	Settings *protocol.Prefs
}

func (g *Given) View() View         { return g.Paths }
func (g *Given) Status() LinkStatus { return LinkStatus{} }
func (g *Given) Predict(context.Context, string) (store.Size, error) {
	return g.Size, nil
}
func (g *Given) Protocol(context.Context, string) (string, error)       { return g.Proto, nil }
func (g *Given) Prefs(context.Context) (*protocol.Prefs, error)         { return g.Settings, nil }
func (g *Given) Usage(context.Context, time.Time) (int64, int64, error) { return 0, 0, nil }
