package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/paths"
	"github.com/mpsurf/mpsurf/native-host/radio"
	"github.com/mpsurf/mpsurf/native-host/rrc"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// MeterConfig is how the serving host's Meter measures; cmd/mpsurf-host reads it from its environment.
type MeterConfig struct {
	// Off: measure no path (the model then goes by its priors).
	Off bool
	// Names are interface kinds over what sysfs says, e.g. wlan0=wifi (paths.ParseNames).
	Names map[string]string
	// Cell is the cellular radio's technology: radio.LTE ("" too) or radio.ThreeG.
	Cell string
	// ProbeTarget is host:port for the active RTT probe when a path has no traffic; "": none.
	ProbeTarget string
	// ProbeURL is the https object the rate probe fetches over a path with no rate yet (at most 64 KiB of it, once
	// per 10 minutes per path); "": no rate probe. ProbePins are base64 SHA-256 SPKI hashes its server's
	// certificate must have one of (a testbed's self-signed origin). ProbeCellular lets it wake an idle cellular
	// radio, which otherwise it never does.
	ProbeURL      string
	ProbePins     []string
	ProbeCellular bool
	// UsageEvery is how often the cellular usage goes into the store (1s to 1h; 0: usageEvery): a test knob, so
	// that a cap is seen as soon as it is passed.
	UsageEvery time.Duration
}

// NewMeterFrom makes the serving host's Meter as cfg says, with the RRC model of the cellular technology in p. It
// never fails: when the paths cannot be measured it says why and returns a Meter that measures nothing, so
// decisions go on from what the store kept and from priors.
func NewMeterFrom(cfg MeterConfig, p *model.Params, db *store.Store, log *slog.Logger) *Meter {
	m := NewMeter(nil, db, log)
	if cfg.UsageEvery != 0 {
		m.usageEvery = cfg.UsageEvery
	}
	if cfg.Off {
		return m
	}
	s, err := newSampler(cfg, p)
	if err != nil {
		m.log.Warn("paths not measured", "err", err)
		return m
	}
	m.sampler = s
	return m
}

func newSampler(cfg MeterConfig, p *model.Params) (*paths.Sampler, error) {
	cell := cfg.Cell
	if cell == "" {
		cell = radio.LTE
	}
	if p == nil {
		return nil, fmt.Errorf("no model parameters, so no RRC model for %s", cell)
	}
	rm, ok := p.Radios[cell]
	if !ok || (cell != radio.LTE && cell != radio.ThreeG) {
		return nil, fmt.Errorf("cellular technology %q: want %s or %s", cell, radio.LTE, radio.ThreeG)
	}
	return paths.NewSampler(paths.Config{Names: cfg.Names, ProbeTarget: cfg.ProbeTarget, Cellular: rm,
		RateProbeURL: cfg.ProbeURL, RateProbePins: cfg.ProbePins, CellularProbes: cfg.ProbeCellular})
}

// usageEvery is how often cellular counters go into the store: usage moves on the scale of a billing cycle.
const usageEvery = time.Minute

// Path estimates are kept in the store every estimateEvery and used by a later host (the browser starts one per
// session) for what its own sampler has not measured yet, while younger than estimateMaxAge: long enough to
// bridge a browser restart, short enough that a move to another network is not decided with the old one's.
const (
	estimateEvery  = 10 * time.Second
	EstimateMaxAge = 10 * time.Minute
)

// Meter is the real Links: the path sampler of native-host/paths, completed by the estimates an earlier host kept
// in the store, and the cellular usage it counts into the store for the quota.
type Meter struct {
	sampler *paths.Sampler
	db      *store.Store // nil: nothing kept, nothing counted
	log     *slog.Logger
	root    string // prefix of /sys for the counters ("" = live)

	usageEvery time.Duration // how often usage goes into the store: usageEvery unless MeterConfig says

	mu        sync.Mutex
	cellIface string
	cellRx    uint64
	cellTx    uint64
	kept      map[string]keptPath // path estimates from the store, by interface name
}

type keptPath struct {
	at   time.Time
	path model.Path
}

// NewMeter wraps a sampler (nil: the paths are not measured); db (nil: none) keeps estimates across hosts.
func NewMeter(s *paths.Sampler, db *store.Store, log *slog.Logger) *Meter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Meter{sampler: s, db: db, log: log, usageEvery: usageEvery}
}

// HoldCellular keeps the sampler's own probes off the cellular path while held (multipath paused, a cap
// reached: paths.Sampler.HoldCellular).
func (m *Meter) HoldCellular(held bool) {
	if m != nil && m.sampler != nil {
		m.sampler.HoldCellular(held)
	}
}

// Run samples until ctx ends, keeping estimates and counting cellular usage in the store as it goes.
func (m *Meter) Run(ctx context.Context) {
	if m.sampler == nil {
		return
	}
	if m.db != nil {
		m.loadEstimates(ctx)
		go m.every(ctx, m.usageEvery, m.sampleUsage, true)
		go m.every(ctx, estimateEvery, m.saveEstimates, false)
	}
	if err := m.sampler.Run(ctx); err != nil && ctx.Err() == nil {
		m.log.Warn("path measurement stopped", "err", err)
	}
}

func (m *Meter) every(ctx context.Context, d time.Duration, f func(context.Context), now bool) {
	t := time.NewTicker(d)
	defer t.Stop()
	if now {
		f(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}

// Close keeps the last path estimates; the serving host calls it when the browser closes the port.
func (m *Meter) Close() {
	if m.sampler == nil || m.db == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m.saveEstimates(ctx)
}

// View is the paths and RRC state now, live numbers first and young kept ones where the sampler has none yet.
func (m *Meter) View() View {
	var v View
	if m.sampler == nil {
		return v
	}
	snap := m.sampler.Snapshot()
	v.Primary, v.Secondary = PickPaths(snap.Paths)
	if v.Secondary == nil && m.sampler.Ticks() > 0 {
		// The sampler has looked and found no cellular path up: that is known, not unmeasured.
		v.Secondary = &model.Path{Name: "none", Kind: paths.Cellular, Up: false}
	}
	m.fillFromKept(v.Primary)
	m.fillFromKept(v.Secondary)
	if snap.RRC != nil {
		now := time.Now().UnixMilli()
		v.RRC = &model.RRC{Interface: snap.RRC.Interface, Tech: snap.RRC.Tech, State: snap.RRC.State,
			SinceMS: max(now-snap.RRC.SinceMS, 0), Source: snap.RRC.Source}
		for _, sh := range snap.RRC.Spread {
			v.RRC.Spread = append(v.RRC.Spread, model.RRCShare{State: sh.State, SinceMS: max(now-sh.SinceMS, 0), P: sh.P})
		}
	}
	return v
}

// Status is the sampler's own view; empty when the paths are not measured.
func (m *Meter) Status() LinkStatus {
	var ls LinkStatus
	if m.sampler != nil {
		snap := m.sampler.Snapshot()
		ls.Paths, ls.RRC = snap.Paths, snap.RRC
	}
	m.mu.Lock()
	ls.CellInterface = m.cellIface
	m.mu.Unlock()
	return ls
}

// CellRx is the cellular interface's received-bytes counter now (sysfs), false when there is no cellular path.
func (m *Meter) CellRx() (int64, bool) {
	if m.sampler == nil {
		return 0, false
	}
	for _, p := range m.sampler.Snapshot().Paths {
		if p.Kind == paths.Cellular {
			n, ok := readCounter(m.root, p.Name, "rx_bytes")
			return int64(n), ok
		}
	}
	return 0, false
}

// IsCellular says whether a is one of the cellular interface's local addresses, from the paths the sampler
// found (the relay counts a tunnel's cellular bytes by its subflows' local addresses).
func (m *Meter) IsCellular(a netip.Addr) bool {
	if m.sampler == nil {
		return false
	}
	for _, p := range m.sampler.Snapshot().Paths {
		if p.Kind != paths.Cellular {
			continue
		}
		for _, s := range p.Addrs {
			if pa, err := netip.ParsePrefix(s); err == nil && pa.Addr() == a {
				return true
			}
			if pa, err := netip.ParseAddr(s); err == nil && pa == a {
				return true
			}
		}
	}
	return false
}

// Sample runs the sampler for d, for tools that want one look at the paths.
func (m *Meter) Sample(d time.Duration) {
	if m.sampler == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	m.sampler.Run(ctx)
}

// PickPaths chooses the primary path (WiFi, else wired: the seeds' primary) and the cellular secondary among the
// paths that are up.
func PickPaths(ps []paths.Path) (primary, secondary *model.Path) {
	for _, kind := range []string{paths.WiFi, paths.Ethernet} {
		for i := range ps {
			if primary == nil && ps[i].Up && ps[i].Kind == kind {
				primary = toModel(ps[i])
			}
		}
	}
	for i := range ps {
		if secondary == nil && ps[i].Up && ps[i].Kind == paths.Cellular {
			secondary = toModel(ps[i])
		}
	}
	return primary, secondary
}

// toModel is a measured path as the model reads it. A rate that could only be bounded from below (by the probe,
// or by windows with pauses on a WiFi path) goes as a bound: the model takes the prior's rate where it is higher.
func toModel(p paths.Path) *model.Path {
	m := &model.Path{Name: p.Name, Kind: p.Kind, Up: p.Up, Addrs: p.Addrs, RTTMS: p.RTTMS, DownBps: p.DownBPS,
		UpBps: p.UpBPS, Loss: p.Loss, RTTSource: p.RTTSource}
	if p.DownSource != nil && (*p.DownSource == paths.SourceProbeBound || *p.DownSource == paths.SourcePassiveBound) {
		m.DownBound = true
	}
	if m.DownBps != nil && p.DownAgeMS != nil {
		age := float64(*p.DownAgeMS) / 1000
		m.DownAgeS = &age
	}
	if p.DownMeanBPS != nil && p.DownMeanN > 0 {
		m.DownMeanBps, m.DownMeanN = p.DownMeanBPS, int64(p.DownMeanN)
	}
	if p.DownSustainedBPS != nil && p.DownSustainedAgeMS != nil {
		age := float64(*p.DownSustainedAgeMS) / 1000
		m.DownSustainedBps, m.DownSustainedAgeS = p.DownSustainedBPS, &age
	}
	return m
}

// loadEstimates reads the path estimates a previous host kept.
func (m *Meter) loadEstimates(ctx context.Context) {
	kept, err := m.db.Paths(ctx, time.Now().Add(-EstimateMaxAge))
	if err != nil {
		m.log.Warn("kept path estimates unreadable", "err", err)
		return
	}
	k := map[string]keptPath{}
	for _, e := range kept {
		var p model.Path
		if json.Unmarshal(e.Estimate, &p) == nil {
			k[e.Name] = keptPath{at: e.Time, path: p}
			if m.sampler != nil {
				// A bound is no rate to start from: the next host's estimator would take it for a measurement.
				down := p.DownBps
				if p.DownBound {
					down = nil
				}
				if down != nil {
					m.sampler.Known(e.Name, e.Time) // no rate probe while a kept rate is young
				}
				// The live estimators start from it: this host's own windows move it as paths.Rate.Seed says. The
				// rate is as old as its measurement, not as the host that kept it last.
				sd := paths.Seed{DownBPS: down, UpBPS: p.UpBps, RTTMS: p.RTTMS, At: e.Time}
				if p.DownAgeS != nil {
					sd.DownAt = e.Time.Add(-time.Duration(*p.DownAgeS * float64(time.Second)))
				}
				if p.DownMeanBps != nil && p.DownMeanN > 0 {
					sd.DownMeanBPS, sd.DownMeanN = p.DownMeanBps, int(p.DownMeanN) // Rate.SeedMean bounds it
				}
				if p.DownSustainedBps != nil && p.DownSustainedAgeS != nil {
					sd.DownSustainedBPS = p.DownSustainedBps
					sd.DownSustainedAt = e.Time.Add(-time.Duration(*p.DownSustainedAgeS * float64(time.Second)))
				}
				m.sampler.Seed(e.Name, sd)
			}
		}
	}
	m.mu.Lock()
	m.kept = k
	m.mu.Unlock()
	if m.sampler == nil {
		return
	}
	marks, err := m.db.Radios(ctx, time.Now().Add(-EstimateMaxAge))
	if err != nil {
		m.log.Warn("kept radio state unreadable", "err", err)
		return
	}
	for iface, b := range marks {
		var mk rrc.Mark
		if err := json.Unmarshal(b, &mk); err != nil {
			m.log.Warn("kept radio state unreadable", "interface", iface, "err", err)
			continue
		}
		m.sampler.ResumeRadio(iface, mk)
	}
}

// fillFromKept completes a live path that has no RTT or rate yet with the kept estimate of the same interface,
// if it is young enough; the path's source fields say where each number came from.
func (m *Meter) fillFromKept(p *model.Path) {
	if p == nil {
		return
	}
	m.mu.Lock()
	k, ok := m.kept[p.Name]
	m.mu.Unlock()
	if !ok || time.Since(k.at) > EstimateMaxAge {
		return
	}
	if p.RTTMS == nil && k.path.RTTMS != nil {
		p.RTTMS = k.path.RTTMS
		src := "kept"
		p.RTTSource = &src
	}
	// A kept rate's age: what it had when kept, and the time since.
	age := time.Since(k.at).Seconds()
	if k.path.DownAgeS != nil {
		age += *k.path.DownAgeS
	}
	// A live bound gives way to a kept measurement, and to a faster kept bound still within the memory a live
	// estimator gives its own (paths.BoundHorizon): a host started for one page would otherwise know its WiFi only by
	// that page's burst.
	if k.path.DownBps != nil && (p.DownBps == nil || (p.DownBound && (!k.path.DownBound ||
		(*k.path.DownBps > *p.DownBps && age <= paths.BoundHorizon.Seconds())))) {
		p.DownBps, p.DownBound = k.path.DownBps, k.path.DownBound
		p.DownAgeS = &age
	}
	if p.DownMeanBps == nil && k.path.DownMeanBps != nil {
		p.DownMeanBps, p.DownMeanN = k.path.DownMeanBps, k.path.DownMeanN
	}
	if p.DownSustainedBps == nil && k.path.DownSustainedBps != nil && k.path.DownSustainedAgeS != nil {
		if held := time.Since(k.at).Seconds() + *k.path.DownSustainedAgeS; held <= paths.BoundHorizon.Seconds() {
			p.DownSustainedBps, p.DownSustainedAgeS = k.path.DownSustainedBps, &held
		}
	}
	if p.UpBps == nil {
		p.UpBps = k.path.UpBps
	}
	if p.Loss == nil {
		p.Loss = k.path.Loss
	}
}

func (m *Meter) saveEstimates(ctx context.Context) {
	now := time.Now()
	est := map[string]json.RawMessage{}
	kept := map[string]keptPath{}
	for _, p := range m.sampler.Snapshot().Paths {
		if !p.Up || (p.RTTMS == nil && p.DownBPS == nil) {
			continue
		}
		mp := toModel(p)
		m.fillFromKept(mp) // a number measured before and not since stays
		b, err := json.Marshal(mp)
		if err != nil {
			continue
		}
		est[p.Name], kept[p.Name] = b, keptPath{at: now, path: *mp}
	}
	if iface, mk, ok := m.sampler.RadioMark(); ok {
		if b, err := json.Marshal(mk); err == nil {
			if err := m.db.SaveRadio(ctx, now, iface, b); err != nil {
				m.log.Warn("radio state not kept", "err", err)
			}
		}
	}
	if err := m.db.SavePaths(ctx, now, est); err != nil {
		m.log.Warn("path estimates not kept", "err", err)
		return
	}
	m.mu.Lock()
	if m.kept == nil {
		m.kept = map[string]keptPath{}
	}
	for k, v := range kept {
		m.kept[k] = v
	}
	m.mu.Unlock()
}

// sampleUsage adds the cellular interface's byte counters to the store, so that the options page and the model see
// the data used this cycle. Counter resets (an interface that came back) count from zero.
func (m *Meter) sampleUsage(ctx context.Context) {
	var iface string
	for _, p := range m.sampler.Snapshot().Paths {
		if p.Kind == paths.Cellular {
			iface = p.Name
			break
		}
	}
	if iface == "" {
		return
	}
	rx, okRx := readCounter(m.root, iface, "rx_bytes")
	tx, okTx := readCounter(m.root, iface, "tx_bytes")
	if !okRx || !okTx {
		return
	}
	m.mu.Lock()
	prevIface, prevRx, prevTx := m.cellIface, m.cellRx, m.cellTx
	m.cellIface, m.cellRx, m.cellTx = iface, rx, tx
	m.mu.Unlock()
	if prevIface != iface {
		return // the first reading of this interface is the baseline
	}
	dRx, dTx := delta(prevRx, rx), delta(prevTx, tx)
	if dRx == 0 && dTx == 0 {
		return
	}
	if err := m.db.AddUsage(ctx, iface, time.Now(), int64(dRx), int64(dTx)); err != nil {
		m.log.Warn("cellular usage not stored", "err", err)
	}
}

func delta(prev, now uint64) uint64 {
	if now < prev {
		return now
	}
	return now - prev
}

func readCounter(root, iface, name string) (uint64, bool) {
	b, err := os.ReadFile(filepath.Join(root, "/sys/class/net", iface, "statistics", name))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}
