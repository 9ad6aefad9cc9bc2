package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/battery"
	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/paths"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/radio"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// Environment of a serving host (Chrome passes its own environment on to the host it starts).
const (
	EnvNames       = "MPSURF_NAMES"        // interface kinds over what sysfs says, e.g. wlan0=wifi,wwan0=cellular
	EnvProbeTarget = "MPSURF_PROBE_TARGET" // host:port for the active RTT probe when a path has no traffic
	EnvCell        = "MPSURF_CELL"         // the cellular radio's technology: lte (default) or 3g
	EnvNoMeasure   = "MPSURF_NO_MEASURE"   // 1: do not measure paths (the model then falls back to the baseline)
)

// usageEvery is how often cellular counters go into the store: usage moves on the scale of a billing cycle.
const usageEvery = time.Minute

// Path estimates are kept in the store every estimateEvery and used by a later host (the browser starts one per
// session) for what its own sampler has not measured yet, while younger than estimateMaxAge: long enough to
// bridge a browser restart, short enough that a move to another network is not decided with the old one's.
const (
	estimateEvery  = 10 * time.Second
	estimateMaxAge = 10 * time.Minute
)

// storePrefs is the part of PROTOCOL.md's Prefs the feed reads from the store.
type storePrefs struct {
	model.Prefs
	Overrides []struct {
		Host string `json:"host"`
		Rule string `json:"rule"`
	} `json:"overrides"`
}

// feed turns what the serving host measures (paths, the RRC state, the battery) and remembers (size and
// protocol per origin, preferences, cellular usage) into the model's input for each decision.
type feed struct {
	sampler *paths.Sampler // nil when paths are not measured
	db      *store.Store   // nil without a store
	log     *slog.Logger
	root    string // prefix of /sys for the battery and counters ("" = live)

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

// startFeed starts path measurement (unless disabled or unsupported) and installs the decision inputs and status
// extras in the host. It never fails: what cannot be measured is left out, and the model says so.
func startFeed(ctx context.Context, db *store.Store, log *slog.Logger) *feed {
	f := &feed{db: db, log: log}
	if os.Getenv(EnvNoMeasure) != "1" {
		if s, err := f.newSampler(); err != nil {
			log.Warn("paths not measured; decisions use the baseline policy", "err", err)
		} else {
			f.sampler = s
			go func() {
				if err := s.Run(ctx); err != nil && ctx.Err() == nil {
					log.Warn("path measurement stopped", "err", err)
				}
			}()
			if db != nil {
				f.loadEstimates(ctx)
				go f.countUsage(ctx)
				go f.keepEstimates(ctx)
			}
		}
	}
	host.SetInputs(f.input)
	host.SetStatusExtra(f.extra)
	return f
}

func (f *feed) newSampler() (*paths.Sampler, error) {
	names, err := paths.ParseNames(os.Getenv(EnvNames))
	if err != nil {
		return nil, err
	}
	cell := os.Getenv(EnvCell)
	if cell == "" {
		cell = radio.LTE
	}
	m, err := loadRadio(os.Getenv(policy.EnvModels), cell, "")
	if err != nil {
		return nil, err
	}
	return paths.NewSampler(paths.Config{Names: names, ProbeTarget: os.Getenv(EnvProbeTarget), Cellular: m})
}

// input is the host.Inputs function: one origin's model input, now.
func (f *feed) input(origin string) model.Input {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var in model.Input
	if f.sampler != nil {
		snap := f.sampler.Snapshot()
		in.Primary, in.Secondary = pickPaths(snap.Paths)
		f.fillFromKept(in.Primary)
		f.fillFromKept(in.Secondary)
		if snap.RRC != nil {
			in.RRC = &model.RRC{Interface: snap.RRC.Interface, Tech: snap.RRC.Tech, State: snap.RRC.State,
				SinceMS: max(time.Now().UnixMilli()-snap.RRC.SinceMS, 0), Source: snap.RRC.Source}
		}
	}
	if b, err := battery.Read(f.root); err == nil && b.Present {
		in.Battery = &model.Battery{Present: true, Percent: b.Percent, Charging: b.Charging}
	}
	if f.db == nil {
		return in
	}
	if size, err := f.db.Predict(ctx, origin); err == nil {
		in.Size = model.Size{Known: size.Known, Median: size.Median, P90: size.P90, Samples: size.Samples, Source: size.Source}
	}
	if proto, err := f.db.Protocol(ctx, origin); err == nil && proto != "" {
		in.Protocol = proto
	}
	prefs := f.prefs(ctx)
	if prefs != nil {
		in.Prefs = &prefs.Prefs
		in.Override = overrideFor(prefs, origin)
		if start := cycleStart(time.Now(), prefs.BillingDay); prefs.QuotaBytes != nil {
			if rx, tx, err := f.db.Usage(ctx, start); err == nil {
				in.Usage = &model.Usage{UsedBytes: rx + tx, DaysLeft: daysLeft(time.Now(), prefs.BillingDay)}
			}
		}
	}
	return in
}

func (f *feed) prefs(ctx context.Context) *storePrefs {
	raw, err := f.db.Prefs(ctx)
	if err != nil || raw == nil {
		return nil
	}
	var p storePrefs
	if err := json.Unmarshal(raw, &p); err != nil {
		f.log.Warn("stored preferences unreadable; defaults apply", "err", err)
		return nil
	}
	return &p
}

// overrideFor returns the user's rule for origin's host or a parent domain of it, "" for auto or none.
func overrideFor(p *storePrefs, origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	// A rule covers the site and its subdomains, as the options page says; the most specific rule wins.
	host, best, rule := u.Hostname(), -1, ""
	for _, o := range p.Overrides {
		if host != o.Host && !strings.HasSuffix(host, "."+o.Host) {
			continue
		}
		if len(o.Host) > best {
			best, rule = len(o.Host), o.Rule
		}
	}
	if rule == model.OverrideAlways || rule == model.OverrideNever {
		return rule
	}
	return ""
}

// pickPaths chooses the primary path (WiFi, else wired: the seeds' primary) and the cellular secondary among the
// paths that are up.
func pickPaths(ps []paths.Path) (primary, secondary *model.Path) {
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

func toModel(p paths.Path) *model.Path {
	return &model.Path{Name: p.Name, Kind: p.Kind, Up: p.Up, Addrs: p.Addrs, RTTMS: p.RTTMS, DownBps: p.DownBPS,
		UpBps: p.UpBPS, Loss: p.Loss, RTTSource: p.RTTSource}
}

// cycleStart is the start of the billing cycle that contains now, for a quota renewing on billingDay (clamped to
// the month's last day, so 31 means the last day of short months).
func cycleStart(now time.Time, billingDay int64) time.Time {
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

// daysLeft counts the days from now to the next renewal, at least 1.
func daysLeft(now time.Time, billingDay int64) int64 {
	start := cycleStart(now, billingDay)
	next := cycleStart(start.AddDate(0, 1, 7), billingDay) // a date safely inside the next cycle
	return max(int64(next.Sub(now).Hours()/24+0.999), 1)
}

// loadEstimates reads the path estimates a previous host kept.
func (f *feed) loadEstimates(ctx context.Context) {
	kept, err := f.db.Paths(ctx, time.Now().Add(-estimateMaxAge))
	if err != nil {
		f.log.Warn("kept path estimates unreadable", "err", err)
		return
	}
	m := map[string]keptPath{}
	for _, k := range kept {
		var p model.Path
		if json.Unmarshal(k.Estimate, &p) == nil {
			m[k.Name] = keptPath{at: k.Time, path: p}
		}
	}
	f.mu.Lock()
	f.kept = m
	f.mu.Unlock()
}

// fillFromKept completes a live path that has no RTT or rate yet with the kept estimate of the same interface,
// if it is young enough; the path's source fields say where each number came from.
func (f *feed) fillFromKept(p *model.Path) {
	if p == nil {
		return
	}
	f.mu.Lock()
	k, ok := f.kept[p.Name]
	f.mu.Unlock()
	if !ok || time.Since(k.at) > estimateMaxAge {
		return
	}
	if p.RTTMS == nil && k.path.RTTMS != nil {
		p.RTTMS = k.path.RTTMS
		src := "kept"
		p.RTTSource = &src
	}
	if p.DownBps == nil {
		p.DownBps = k.path.DownBps
	}
	if p.UpBps == nil {
		p.UpBps = k.path.UpBps
	}
	if p.Loss == nil {
		p.Loss = k.path.Loss
	}
}

// close keeps the last path estimates; the serving host calls it when the browser closes the port.
func (f *feed) close() {
	if f.sampler == nil || f.db == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	f.saveEstimates(ctx)
}

// keepEstimates stores the measured paths every estimateEvery and once more when the host stops.
func (f *feed) keepEstimates(ctx context.Context) {
	t := time.NewTicker(estimateEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.saveEstimates(ctx)
		}
	}
}

func (f *feed) saveEstimates(ctx context.Context) {
	now := time.Now()
	est := map[string]json.RawMessage{}
	kept := map[string]keptPath{}
	for _, p := range f.sampler.Snapshot().Paths {
		if !p.Up || (p.RTTMS == nil && p.DownBPS == nil) {
			continue
		}
		mp := toModel(p)
		f.fillFromKept(mp) // a number measured before and not since stays
		b, err := json.Marshal(mp)
		if err != nil {
			continue
		}
		est[p.Name], kept[p.Name] = b, keptPath{at: now, path: *mp}
	}
	if err := f.db.SavePaths(ctx, now, est); err != nil {
		f.log.Warn("path estimates not kept", "err", err)
		return
	}
	f.mu.Lock()
	if f.kept == nil {
		f.kept = map[string]keptPath{}
	}
	for k, v := range kept {
		f.kept[k] = v
	}
	f.mu.Unlock()
}

// countUsage adds the cellular interface's byte counters to the store every usageEvery, so that the options page
// and the model see the data used this cycle. Counter resets (an interface that came back) count from zero.
func (f *feed) countUsage(ctx context.Context) {
	t := time.NewTicker(usageEvery)
	defer t.Stop()
	f.sampleUsage(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.sampleUsage(ctx)
		}
	}
}

func (f *feed) sampleUsage(ctx context.Context) {
	var iface string
	for _, p := range f.sampler.Snapshot().Paths {
		if p.Kind == paths.Cellular {
			iface = p.Name
			break
		}
	}
	if iface == "" {
		return
	}
	rx, okRx := readCounter(f.root, iface, "rx_bytes")
	tx, okTx := readCounter(f.root, iface, "tx_bytes")
	if !okRx || !okTx {
		return
	}
	f.mu.Lock()
	prevIface, prevRx, prevTx := f.cellIface, f.cellRx, f.cellTx
	f.cellIface, f.cellRx, f.cellTx = iface, rx, tx
	f.mu.Unlock()
	if prevIface != iface {
		return // the first reading of this interface is the baseline
	}
	dRx, dTx := delta(prevRx, rx), delta(prevTx, tx)
	if dRx == 0 && dTx == 0 {
		return
	}
	if err := f.db.AddUsage(ctx, iface, time.Now(), int64(dRx), int64(dTx)); err != nil {
		f.log.Warn("cellular usage not stored", "err", err)
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

// extra is the host.SetStatusExtra function: what status reports beyond the required fields.
func (f *feed) extra() host.StatusExtra {
	var x host.StatusExtra
	if f.sampler != nil {
		snap := f.sampler.Snapshot()
		x.Paths = snap.Paths
		if snap.RRC != nil {
			x.RRC = snap.RRC
		}
	}
	if f.db == nil {
		return x
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if raw, err := f.db.Prefs(ctx); err == nil && raw != nil {
		x.Prefs = raw
	}
	if d, o, err := f.db.Counts(ctx); err == nil {
		x.Store = &host.StoreStatus{Path: f.db.Path(), Decisions: d, Observations: o}
	}
	var billingDay int64 = 1
	var quota *int64
	if p := f.prefs(ctx); p != nil {
		billingDay, quota = p.BillingDay, p.QuotaBytes
	}
	f.mu.Lock()
	iface := f.cellIface
	f.mu.Unlock()
	start := cycleStart(time.Now(), billingDay)
	if rx, tx, err := f.db.Usage(ctx, start); err == nil {
		x.Usage = &host.UsageStatus{Interface: iface, SinceMS: start.UnixMilli(), UsedBytes: rx + tx, QuotaBytes: quota}
	}
	return x
}
