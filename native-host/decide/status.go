package decide

import (
	"context"
	"time"

	"github.com/mpsurf/mpsurf/native-host/paths"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/rrc"
)

// Status is what the pipeline reports beyond the protocol's required status fields (PROTOCOL.md §4: paths, rrc,
// prefs, store, usage); each is omitted when unknown.
type Status struct {
	Paths []paths.Path    `json:"paths,omitempty"`
	RRC   *rrc.Info       `json:"rrc,omitempty"`
	Prefs *protocol.Prefs `json:"prefs,omitempty"`
	Store *StoreStatus    `json:"store,omitempty"`
	Usage *UsageStatus    `json:"usage,omitempty"`
	Model *ModelStatus    `json:"model,omitempty"`
}

// StoreStatus is the decision log's place and size.
type StoreStatus struct {
	Path         string `json:"path"`
	Decisions    int64  `json:"decisions"`
	Observations int64  `json:"observations"`
	// Unlogged is filled in by the serving host: the decisions it replied with since it started that are not in
	// the log (its write queue was full, or the store refused the row).
	Unlogged int64 `json:"unlogged"`
}

// UsageStatus is the cellular data measured on the cellular interface since the billing cycle began.
type UsageStatus struct {
	Interface  string `json:"interface"`
	SinceMS    int64  `json:"since_ms"` // unix ms of the cycle's start
	UsedBytes  int64  `json:"used_bytes"`
	QuotaBytes *int64 `json:"quota_bytes"`
	// TodayBytes is the cellular data since local midnight: the extension's daily cap.
	TodayBytes *int64 `json:"today_bytes,omitempty"`
}

// ModelStatus names the model the Decider evaluates, or why it has none.
type ModelStatus struct {
	ID      string `json:"id,omitempty"`
	Version int64  `json:"version,omitempty"`
	Source  string `json:"source"`
	Error   string `json:"error,omitempty"`
}

// Status reports the pipeline's inputs now, for the status reply.
func (d *Decider) Status(ctx context.Context) Status {
	var st Status
	ms := &ModelStatus{Source: d.cfg.ParamsSource}
	if p := d.cfg.Params; p != nil {
		ms.ID, ms.Version = p.ID, p.Version
	} else if d.cfg.ParamsErr != nil {
		ms.Error = d.cfg.ParamsErr.Error()
	}
	st.Model = ms
	iface := ""
	if d.cfg.Links != nil {
		ls := d.cfg.Links.Status()
		st.Paths, st.RRC, iface = ls.Paths, ls.RRC, ls.CellInterface
	}
	mem, ok := d.cfg.Memory.(statusMemory)
	if !ok {
		return st
	}
	ctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	prefs, _ := mem.Prefs(ctx)
	st.Prefs = prefs
	if n, o, err := mem.Counts(ctx); err == nil {
		st.Store = &StoreStatus{Path: mem.Path(), Decisions: n, Observations: o}
	}
	var billingDay int64 = 1
	var quota *int64
	if prefs != nil {
		billingDay, quota = prefs.BillingDay, prefs.QuotaBytes
	}
	start := CycleStart(d.cfg.Now(), billingDay)
	if rx, tx, err := mem.Usage(ctx, start); err == nil {
		st.Usage = &UsageStatus{Interface: iface, SinceMS: start.UnixMilli(), UsedBytes: rx + tx, QuotaBytes: quota}
		now := d.cfg.Now()
		if trx, ttx, err := mem.Usage(ctx, time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())); err == nil {
			today := trx + ttx
			st.Usage.TodayBytes = &today
		}
	}
	return st
}

// statusMemory is the store's view status needs beyond Memory.
type statusMemory interface {
	Memory
	Counts(ctx context.Context) (decisions, observations int64, err error)
	Path() string
}
