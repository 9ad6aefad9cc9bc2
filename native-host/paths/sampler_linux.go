package paths

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/common"
	psnet "github.com/shirou/gopsutil/v4/net"

	"github.com/mpsurf/mpsurf/native-host/diag"
	"github.com/mpsurf/mpsurf/native-host/rrc"
)

// Sampler measures every path in one goroutine (Run); Snapshot may be called from any goroutine.
type Sampler struct {
	cfg  Config
	ctx  context.Context // carries Root to gopsutil
	diag *diag.Conn

	mu     sync.Mutex
	paths  map[string]*pathState
	order  []string
	cell   *rrc.Machine
	cellIf string
	ticks  uint64
	known  map[string]time.Time // rates known from elsewhere (kept by an earlier host), by interface
	seeds  map[string]Seed      // estimates an earlier host kept, for paths not yet discovered
	marks  map[string]rrc.Mark  // RRC marks an earlier host kept, by interface, until its first sample here
	// cellHeld: no probe of the sampler's own goes over a cellular path (HoldCellular: multipath paused, a
	// cellular cap reached).
	cellHeld bool
}

// HoldCellular stops (held) or lets again the sampler's own probes over cellular paths: the RTT probe's connects
// and the rate probe's fetch. While the user's cap is reached or multipath is paused, MPSurf sends nothing of its
// own over cellular; passive measurement goes on.
func (s *Sampler) HoldCellular(held bool) {
	s.mu.Lock()
	s.cellHeld = held
	s.mu.Unlock()
}

type pathState struct {
	iface       Iface
	addrs       []netip.Addr
	down, up    *Rate
	rtt, loss   *float64
	rttSource   string
	lastPassive time.Time
	lastProbe   time.Time
	probing     bool
	// The rate probe's: when it last ran, its estimate (nil: none), and whether that is only a lower bound.
	rateProbing   bool
	lastRateProbe time.Time
	probeBPS      *float64
	probeBound    bool
	probeAt       time.Time
	// seen is when the path was discovered; rxBytes and active the last received-bytes count and when it moved;
	// txBytes the last sent-bytes count.
	seen             time.Time
	rxBytes, txBytes uint64
	active           time.Time
	// rttFloor is the passive RTT's windowed minimum, measured at rttFloorAt.
	rttFloor   *float64
	rttFloorAt time.Time
	// ooo is each of the path's sockets' out-of-order segment count at the last diagnostics round.
	ooo map[sockPair]uint32
}

// sockPair names one socket by its two ends.
type sockPair struct{ local, remote netip.AddrPort }

type rateResult struct {
	name string
	r    RateProbe
	err  error
}

type probeResult struct {
	name string
	rtt  time.Duration
	err  error
}

// NewSampler checks the configuration and opens the socket diagnostics.
func NewSampler(cfg Config) (*Sampler, error) {
	if cfg.CellEvery <= 0 {
		cfg.CellEvery = 50 * time.Millisecond
	}
	if cfg.Every <= 0 {
		cfg.Every = 200 * time.Millisecond
	}
	if cfg.ProbeTarget != "" {
		if _, _, err := net.SplitHostPort(cfg.ProbeTarget); err != nil {
			return nil, fmt.Errorf("paths: probe target %q: %w", cfg.ProbeTarget, err)
		}
	}
	root := cfg.Root
	if root == "" {
		root = "/"
	}
	cfg.Root = root
	d, err := diag.Open()
	if err != nil {
		return nil, err
	}
	ctx := context.WithValue(context.Background(), common.EnvKey,
		common.EnvMap{common.HostProcEnvKey: filepath.Join(root, "proc"), common.HostSysEnvKey: filepath.Join(root, "sys")})
	return &Sampler{cfg: cfg, ctx: ctx, diag: d, paths: map[string]*pathState{}}, nil
}

// Run samples until ctx ends, then closes the sampler.
func (s *Sampler) Run(ctx context.Context) error {
	defer s.diag.Close()
	probes := make(chan probeResult, 8)
	rates := make(chan rateResult, 8)
	var lastDiscover, lastDiag time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-probes:
			s.probeDone(r)
			continue
		case r := <-rates:
			s.rateDone(r)
			continue
		case <-timer.C:
		}
		now := time.Now()
		if now.Sub(lastDiscover) >= DiscoverEvery {
			if err := s.discover(now); err != nil {
				return err
			}
			lastDiscover = now
		}
		if err := s.counters(now); err != nil {
			return err
		}
		if now.Sub(lastDiag) >= DiagEvery {
			s.sockets(now)
			s.startProbes(ctx, now, probes)
			s.startRateProbes(ctx, now, rates)
			lastDiag = now
		}
		s.mu.Lock()
		s.ticks++
		every := s.cfg.Every
		if s.cellIf != "" {
			every = s.cfg.CellEvery
		}
		s.mu.Unlock()
		timer.Reset(every - time.Since(now))
	}
}

// Ticks is how many sampling rounds have run.
func (s *Sampler) Ticks() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ticks
}

func (s *Sampler) discover(now time.Time) error {
	ifs, err := Discover(s.cfg.Root, s.cfg.Names)
	if err != nil {
		return err
	}
	// Addresses from the live system (netlink through gopsutil), not from Root: sysfs has none.
	addrs := map[string][]netip.Addr{}
	if list, err := psnet.InterfacesWithContext(s.ctx); err == nil {
		for _, ifc := range list {
			for _, a := range ifc.Addrs {
				if p, err := netip.ParsePrefix(a.Addr); err == nil {
					addrs[ifc.Name] = append(addrs[ifc.Name], p.Addr().Unmap())
				}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	s.order = s.order[:0]
	cellIf := ""
	for _, ifc := range ifs {
		seen[ifc.Name] = true
		s.order = append(s.order, ifc.Name)
		ps := s.paths[ifc.Name]
		if ps == nil {
			span := RateSpan
			if ifc.Kind == Cellular {
				span = CellRateSpan
			}
			ps = &pathState{down: NewRate(span, RateHorizon, RateStall), up: NewRate(span, RateHorizon, RateStall), seen: now}
			ps.down.Short = ifc.Kind != Cellular
			// A cellular path's windows are nearly all shared with the WiFi (multipath subflows): its own level
			// and aging (Rate.Mean, model.RateMemory) stand for what it holds.
			ps.down.Sustain = ifc.Kind != Cellular
			if sd, ok := s.seeds[ifc.Name]; ok {
				ps.seed(sd, now)
			}
			s.paths[ifc.Name] = ps
		}
		ps.iface, ps.addrs = ifc, addrs[ifc.Name]
		if ifc.Kind == Cellular && cellIf == "" {
			cellIf = ifc.Name
		}
	}
	for n := range s.paths {
		if !seen[n] {
			delete(s.paths, n)
		}
	}
	if cellIf != s.cellIf {
		s.cellIf, s.cell = cellIf, nil
		if cellIf != "" && s.cfg.Cellular != nil {
			m, err := rrc.New(s.cfg.Cellular, cellIf, now)
			if err != nil {
				return err
			}
			s.cell = m
		}
	}
	return nil
}

func (s *Sampler) counters(now time.Time) error {
	stats, err := psnet.IOCountersWithContext(s.ctx, true)
	if err != nil {
		return fmt.Errorf("paths: counters: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Which paths carried data this interval: a path's windows while another one did are shared (Rate).
	carried := map[string]bool{}
	for _, st := range stats {
		if ps := s.paths[st.Name]; ps != nil && (st.BytesRecv >= ps.rxBytes+SharedBytes || st.BytesSent >= ps.txBytes+SharedBytes) {
			carried[st.Name] = true
		}
	}
	for _, st := range stats {
		ps := s.paths[st.Name]
		if ps == nil {
			continue
		}
		shared := len(carried) > 1 || (len(carried) == 1 && !carried[st.Name])
		ps.down.AddShared(now, st.BytesRecv, shared)
		ps.up.AddShared(now, st.BytesSent, shared)
		ps.txBytes = st.BytesSent
		if st.BytesRecv != ps.rxBytes {
			ps.rxBytes, ps.active = st.BytesRecv, now
		}
		if st.Name == s.cellIf && s.cell != nil {
			s.observeCell(now, rrc.Counters{RxPackets: st.PacketsRecv, TxPackets: st.PacketsSent, RxBytes: st.BytesRecv, TxBytes: st.BytesSent})
		}
	}
	return nil
}

// observeCell passes one sample of the cellular interface's counters to its RRC machine, the first one after an
// earlier host's mark (ResumeRadio), if there is one. Caller holds s.mu.
func (s *Sampler) observeCell(now time.Time, c rrc.Counters) {
	if mk, ok := s.marks[s.cellIf]; ok && s.cell.LastSample().IsZero() {
		s.cell.Resume(mk, c, now)
		delete(s.marks, s.cellIf)
	}
	s.cell.Observe(now, c)
}

// sockets groups established TCP sockets (MPTCP subflows included) by source address.
func (s *Sampler) sockets(now time.Time) {
	socks, err := s.diag.Dump(nil)
	if err != nil {
		return // diagnostics unavailable this round; passive values just age
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	owner := map[netip.Addr]*pathState{}
	for _, ps := range s.paths {
		for _, a := range ps.addrs {
			owner[a] = ps
		}
	}
	type agg struct {
		minRTT     uint32
		retr, segs uint64
		n          int
		ooo        map[sockPair]uint32
	}
	per := map[*pathState]*agg{}
	for _, sk := range socks {
		ps := owner[sk.Src]
		if ps == nil {
			continue
		}
		a := per[ps]
		if a == nil {
			a = &agg{}
			per[ps] = a
		}
		rtt := sk.MinRTTUS
		if rtt == 0 {
			rtt = sk.RTTUS
		}
		if rtt > 0 && (a.minRTT == 0 || rtt < a.minRTT) {
			a.minRTT = rtt
		}
		a.retr += uint64(sk.TotalRetrans)
		a.segs += uint64(sk.SegsOut)
		a.n++
		// A segment that arrived out of order since the last round (or on a socket new since then) is a loss on
		// the way in: the evidence Rate.MarkLoss wants.
		k := sockPair{sk.Local, sk.Remote}
		if prev, had := ps.ooo[k]; sk.RcvOOOPack > prev || (!had && sk.RcvOOOPack > 0) {
			ps.down.MarkLoss(now)
		}
		if a.ooo == nil {
			a.ooo = map[sockPair]uint32{}
		}
		a.ooo[k] = sk.RcvOOOPack
	}
	for _, ps := range s.paths {
		ps.ooo = nil
		if a := per[ps]; a != nil {
			ps.ooo = a.ooo
		}
	}
	for ps, a := range per {
		if a.minRTT > 0 {
			v := float64(a.minRTT) / 1000
			ps.rttFloor, ps.rttFloorAt = windowedMin(ps.rttFloor, ps.rttFloorAt, v, now)
			f := *ps.rttFloor
			ps.rtt, ps.rttSource, ps.lastPassive = &f, SourcePassive, now
		}
		if a.segs >= MinLossSegs {
			v := float64(a.retr) / float64(a.segs)
			ps.loss = &v
		}
	}
}

func (s *Sampler) startProbes(ctx context.Context, now time.Time, out chan<- probeResult) {
	if s.cfg.ProbeTarget == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, ps := range s.paths {
		if ps.probing || !ps.iface.Up || len(ps.addrs) == 0 {
			continue
		}
		idle := s.cell != nil && s.cell.State(now).State == "idle"
		if ps.iface.Kind == Cellular && s.cellHeld || !rttProbeDue(ps.iface.Kind == Cellular, idle, now, ps.lastPassive, ps.lastProbe) {
			continue
		}
		ps.probing, ps.lastProbe = true, now
		src := ps.addrs[0]
		// The connect blocks for a round trip; it runs beside the loop so that counter sampling keeps time. The
		// least of ProbeConnects connects: a busy machine adds its scheduling delay to some of them, never takes
		// any away.
		go func() {
			var best time.Duration
			var err error
			for range ProbeConnects {
				rtt, e := Probe(ctx, src, s.cfg.ProbeTarget, ProbeTimeout)
				if e != nil {
					err = e
					continue
				}
				if best == 0 || rtt < best {
					best = rtt
				}
			}
			if best > 0 {
				err = nil
			}
			out <- probeResult{name, best, err}
		}()
	}
}

func (s *Sampler) probeDone(r probeResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.paths[r.name]
	if ps == nil {
		return
	}
	ps.probing = false
	if r.err != nil || time.Since(ps.lastPassive) < ProbeAfter {
		return
	}
	v := float64(r.rtt.Microseconds()) / 1000
	ps.rtt, ps.rttSource = &v, SourceProbe
}

// downBound says whether the path's passive downlink estimate is only a lower bound (Rate.Bound; SourcePassiveBound):
// on WiFi and wired paths only, since a cellular path's own bursts make its pauses.
func (ps *pathState) downBound() bool { return ps.down.Bound() && ps.iface.Kind != Cellular }

// startRateProbes fetches the rate probe's object over each path that has no rate yet, as the package doc says:
// at most once per RateProbeEvery per path (kept estimates count), and on a cellular path only while its radio is
// already awake, unless the user allowed it.
func (s *Sampler) startRateProbes(ctx context.Context, now time.Time, out chan<- rateResult) {
	if s.cfg.RateProbeURL == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	active := make([]time.Time, 0, len(s.paths))
	for _, ps := range s.paths {
		active = append(active, ps.active)
	}
	if !allQuiet(active, now.Add(-RateProbeQuiet)) {
		return
	}
	for name, ps := range s.paths {
		// A passive lower bound on a WiFi or wired path is no rate yet: the probe may measure one.
		passive := ps.down.BPS() != nil && !ps.downBound()
		if ps.rateProbing || !ps.iface.Up || len(ps.addrs) == 0 || passive || ps.probeBPS != nil ||
			now.Sub(ps.lastRateProbe) < RateProbeEvery || now.Sub(s.known[name]) < RateProbeEvery {
			continue
		}
		// Never beside a page load: only while every path has carried nothing for RateProbeQuiet (allQuiet) and
		// this one has been watched that long, so the probe neither slows a page nor is slowed by one.
		if now.Sub(ps.seen) < RateProbeQuiet {
			continue
		}
		if ps.iface.Kind == Cellular && (s.cellHeld || !s.cfg.CellularProbes && (s.cell == nil || s.cell.State(now).State == "idle")) {
			continue
		}
		ps.rateProbing, ps.lastRateProbe = true, now
		src := ps.addrs[0]
		go func() {
			r, err := ProbeRate(ctx, src, s.cfg.RateProbeURL, s.cfg.RateProbePins, RateProbeTimeout)
			out <- rateResult{name, r, err}
		}()
	}
}

func (s *Sampler) rateDone(r rateResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.paths[r.name]
	if ps == nil {
		return
	}
	ps.rateProbing = false
	if r.err != nil || r.r.BPS <= 0 {
		return
	}
	v := r.r.BPS
	ps.probeBPS, ps.probeBound, ps.probeAt = &v, r.r.Bound, time.Now()
	if ps.rtt == nil && r.r.RTT > 0 {
		rtt := float64(r.r.RTT.Microseconds()) / 1000
		ps.rtt, ps.rttSource = &rtt, SourceProbe
	}
}

// Seed starts the named path's estimators from what an earlier host kept (Rate.Seed; the RTT as the floor of
// its windowed minimum, from sd.At), when the path is discovered. Call it before Run.
func (s *Sampler) Seed(name string, sd Seed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seeds == nil {
		s.seeds = map[string]Seed{}
	}
	s.seeds[name] = sd
	if ps := s.paths[name]; ps != nil {
		ps.seed(sd, sd.At)
	}
}

// ResumeRadio has the cellular interface's RRC inference go on from an earlier host's mark (rrc.Machine.Resume)
// at its first sample here. Call it before Run.
func (s *Sampler) ResumeRadio(iface string, m rrc.Mark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.marks == nil {
		s.marks = map[string]rrc.Mark{}
	}
	s.marks[iface] = m
}

// RadioMark is the cellular interface's RRC mark, for the next host (ResumeRadio); ok is false while there is
// none (no cellular interface, or no sample of it yet).
func (s *Sampler) RadioMark() (iface string, m rrc.Mark, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cell == nil {
		return "", rrc.Mark{}, false
	}
	m, ok = s.cell.Mark()
	return s.cellIf, m, ok
}

func (ps *pathState) seed(sd Seed, now time.Time) {
	measured := sd.DownAt
	if measured.IsZero() || measured.After(now) {
		measured = sd.At
	}
	if sd.DownBPS != nil {
		ps.down.Seed(*sd.DownBPS, measured)
	}
	if sd.DownMeanBPS != nil {
		ps.down.SeedMean(*sd.DownMeanBPS, sd.DownMeanN)
	}
	if sd.DownSustainedBPS != nil && ps.down.Sustain && !sd.DownSustainedAt.IsZero() && !sd.DownSustainedAt.After(now) {
		ps.down.SeedSustained(*sd.DownSustainedBPS, sd.DownSustainedAt)
	}
	if sd.UpBPS != nil {
		ps.up.Seed(*sd.UpBPS, measured)
	}
	if sd.RTTMS != nil && *sd.RTTMS > 0 && ps.rttFloor == nil {
		v := *sd.RTTMS
		at := sd.At
		if at.IsZero() || at.After(now) {
			at = now
		}
		ps.rttFloor, ps.rttFloorAt = &v, at
		// The kept RTT counts as this sampler's last probe. A host lives as long as the extension's connection
		// to it: a browser restart, an extension reload or a crash starts a new one (the testbed starts one per
		// load). Each would otherwise probe the cellular path at once, restarting the radio's tail every time
		// (CellProbeEvery's bound held only within one host), and then read the radio its own probe kept awake
		// as the one the page meets.
		ps.lastProbe = at
	}
}

// Known says a rate for the named path is known from elsewhere (an earlier host kept it at `at`): the rate probe
// waits RateProbeEvery from then.
func (s *Sampler) Known(name string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known == nil {
		s.known = map[string]time.Time{}
	}
	if at.After(s.known[name]) {
		s.known[name] = at
	}
}

// Probe times a TCP connect from src to target: SYN to SYN-ACK, one round trip.
func Probe(ctx context.Context, src netip.Addr, target string, timeout time.Duration) (time.Duration, error) {
	d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
	network := "tcp4"
	if src.Is6() {
		network = "tcp6"
	}
	start := time.Now()
	c, err := d.DialContext(ctx, network, target)
	if err != nil {
		return 0, fmt.Errorf("paths: probe %s from %s: %w", target, src, err)
	}
	rtt := time.Since(start)
	c.Close()
	return rtt, nil
}

// Snapshot returns the paths in name order and the cellular RRC state.
func (s *Sampler) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	out := Snapshot{Paths: []Path{}}
	for _, name := range s.order {
		ps := s.paths[name]
		p := Path{Name: name, Kind: ps.iface.Kind, Up: ps.iface.Up, Addrs: []string{}, RTTMS: ps.rtt,
			DownBPS: ps.down.BPS(), UpBPS: ps.up.BPS(), Loss: ps.loss}
		bound := ps.downBound()
		if p.DownBPS != nil && !(bound && ps.probeBPS != nil && !ps.probeBound) {
			src := SourcePassive
			if bound {
				src = SourcePassiveBound
			}
			p.DownSource, p.DownAgeMS = &src, ageMS(now, ps.down.At())
		} else if ps.probeBPS != nil {
			v, src := *ps.probeBPS, SourceProbe
			if ps.probeBound {
				src = SourceProbeBound
			}
			p.DownBPS, p.DownSource, p.DownAgeMS = &v, &src, ageMS(now, ps.probeAt)
		}
		if m, n := ps.down.Mean(); n > 0 {
			p.DownMeanBPS, p.DownMeanN = &m, n
		}
		if v, at, ok := ps.down.Sustained(); ok {
			p.DownSustainedBPS, p.DownSustainedAgeMS = &v, ageMS(now, at)
		}
		for _, a := range ps.addrs {
			p.Addrs = append(p.Addrs, a.String())
		}
		if ps.rtt != nil {
			src := ps.rttSource
			p.RTTSource = &src
		}
		out.Paths = append(out.Paths, p)
	}
	if s.cell != nil {
		// The state at the last counter sample, not extrapolated to now: while the sampler is late (a loaded
		// machine), extrapolating would walk the tail timers through traffic nobody has counted yet.
		at := s.cell.LastSample()
		if at.IsZero() {
			at = time.Now()
		}
		info := s.cell.State(at)
		out.RRC = &info
	}
	return out
}
