//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mpsurf/mpsurf/e2e/linkem"
	"github.com/mpsurf/mpsurf/e2e/profiles"
	"github.com/mpsurf/mpsurf/e2e/topo"
	"github.com/mpsurf/mpsurf/native-host/cli"
)

// Packet sizes of the probes, for the serialization time they add to an RTT:
// IPv4 header 20 bytes, TCP header 20 bytes + 12 bytes of timestamp option
// (Linux default), and for SYN/SYN-ACK 20 bytes of options (MSS, SACK-OK,
// timestamps, window scale).
const (
	pingPacketBytes = 20 + 32 + 1
	synPacketBytes  = 20 + 40
	// A full data segment carries 1500 - 52 = 1448 bytes of payload.
	payloadPerPacket = linkem.MTU - 52
)

// Tolerances of the accuracy check (the benchmark: wall clock, shared machine).
const (
	rttToleranceMs   = 2.0
	rateTolerancePct = 5.0
)

type rttRow struct {
	Profile      string  `json:"profile"`
	Iface        string  `json:"iface"`
	Tech         string  `json:"tech"`
	ConfiguredMs float64 `json:"configured_ms"` // sum of the one-way delays
	ExpectedMs   float64 `json:"expected_ms"`   // + serialization of the probe packets
	ConnectMs    float64 `json:"connect_ms"`    // TCP handshake, once
	MedianMs     float64 `json:"median_ms"`     // ping-pong
	P10Ms        float64 `json:"p10_ms"`
	P90Ms        float64 `json:"p90_ms"`
	ErrorMs      float64 `json:"error_ms"` // median - expected
	Samples      int     `json:"samples"`
	// The emulator's own clock over the ping-pong: the mean time it scheduled a packet to spend in each
	// direction (queue, serialization, delay), summed, and how late, on average, the machine let it deliver.
	EmulatorMs float64 `json:"emulator_ms"`
	LateMs     float64 `json:"late_ms"`
}

type goodputRow struct {
	RateMbit     float64 `json:"rate_mbit"`
	Dir          string  `json:"dir"` // down: server -> client, up: client -> server
	DelayMs      float64 `json:"one_way_delay_ms"`
	QueueBytes   int     `json:"queue_bytes"`
	WindowS      float64 `json:"window_s"`
	IPMbit       float64 `json:"ip_mbit"`      // IP bytes received by the far interface
	IPErrPct     float64 `json:"ip_err_pct"`   // vs the configured rate: the checked number
	BusyPct      float64 `json:"busy_pct"`     // share of the window the emulated transmitter was sending
	IPBusyMbit   float64 `json:"ip_busy_mbit"` // IP bytes over the time it was sending: the emulator's own rate
	PayloadMbit  float64 `json:"payload_mbit"`
	PayloadPct   float64 `json:"payload_pct_of_ideal"` // vs rate * 1448/1500
	QueueDrops   uint64  `json:"queue_drops"`
	CPUPctOfCore float64 `json:"cpu_pct_of_core"` // this process: emulator + both TCP endpoints
	// The whole transfer, once the link is idle again: IP bytes the emulator wrote and the receiving
	// interface counted, and the emulator's rate by its own clock (bytes over the time it spent sending them).
	EmulatorBytes uint64  `json:"emulator_bytes"`
	KernelBytes   uint64  `json:"kernel_bytes"`
	EmulatorMbit  float64 `json:"emulator_mbit"`
	LateMs        float64 `json:"late_ms"` // mean delivery lateness per packet
}

type accuracyReport struct {
	RTT     []rttRow     `json:"rtt"`
	Goodput []goodputRow `json:"goodput"`
}

// rig is a testbed plus the probe servers in its server namespace.
type rig struct {
	prefix  string
	tb      *topo.Testbed
	echo    net.Listener
	bulk    net.Listener
	stopAll chan struct{}
}

func newRig(prefix string) (*rig, error) {
	base, err := profiles.Load("baseline")
	if err != nil {
		return nil, err
	}
	tb, err := topo.Up(topo.Options{Prefix: prefix, Profile: base, Mode: topo.SPWiFi, Seed: 1})
	if err != nil {
		return nil, err
	}
	r := &rig{prefix: prefix, tb: tb, stopAll: make(chan struct{})}
	ns := tb.Names().Server
	if r.echo, err = listenIn(ns, topo.ServerAddr+":0", false, probeCC); err != nil {
		return nil, errors.Join(err, r.Close())
	}
	if r.bulk, err = listenIn(ns, topo.ServerAddr+":0", false, probeCC); err != nil {
		return nil, errors.Join(err, r.Close())
	}
	go echoServer(r.echo)
	go r.bulkServer()
	return r, nil
}

func (r *rig) Close() error {
	close(r.stopAll)
	for _, ln := range []net.Listener{r.echo, r.bulk} {
		if ln != nil {
			ln.Close()
		}
	}
	return r.tb.Close()
}

// bulkServer serves one transfer per connection: after a first byte 'd' it
// sends until the client closes; after 'u' it reads and discards.
func (r *rig) bulkServer() {
	for {
		c, err := r.bulk.Accept()
		if err != nil {
			return
		}
		go func() {
			defer abort(c)
			b := make([]byte, 1)
			if _, err := io.ReadFull(c, b); err != nil {
				return
			}
			if b[0] == 'd' {
				bulkSend(c, r.stopAll)
			} else {
				io.Copy(io.Discard, c)
			}
		}()
	}
}

// measureRTT probes one path of the profile in force.
func (r *rig) measureRTT(p *profiles.Profile, iface string, n int) (rttRow, error) {
	l := p.Links[iface]
	addr := map[string]string{topo.WiFiIf: topo.WiFiAddr, topo.CellIf: topo.CellAddr}[iface]
	row := rttRow{Profile: p.ID, Iface: iface, Tech: l.Tech, ConfiguredMs: l.RTTMs()}
	ser := func(bytes int) float64 {
		return (serMs(bytes, l.Down) + serMs(bytes, l.Up))
	}
	row.ExpectedMs = row.ConfiguredMs + ser(pingPacketBytes)
	c, took, err := dialIn(r.tb.Names().Client, addr, r.echo.Addr().String(), false, probeCC, 10*time.Second)
	if err != nil {
		return row, fmt.Errorf("%s %s: %w", p.ID, iface, err)
	}
	defer abort(c)
	row.ConnectMs = ms(took)
	// Two untimed exchanges let the server's accept and the first
	// scheduling settle.
	if _, err := pingPong(c, 2, 5*time.Second); err != nil {
		return row, err
	}
	st0 := r.tb.Stats()[iface]
	samples, err := pingPong(c, n, 5*time.Second)
	if err != nil {
		return row, fmt.Errorf("%s %s: ping-pong: %w", p.ID, iface, err)
	}
	st1 := r.tb.Stats()[iface]
	down, up := perPacket(st0.Down, st1.Down), perPacket(st0.Up, st1.Up)
	if down.n == 0 || up.n == 0 {
		return row, fmt.Errorf("%s %s: the emulator wrote %d packets down and %d up during the ping-pong", p.ID, iface, down.n, up.n)
	}
	row.EmulatorMs, row.LateMs = down.heldMs+up.heldMs, down.lateMs+up.lateMs
	slices.Sort(samples)
	row.Samples = len(samples)
	row.MedianMs = ms(samples[len(samples)/2])
	row.P10Ms = ms(samples[len(samples)/10])
	row.P90Ms = ms(samples[len(samples)*9/10])
	row.ErrorMs = row.MedianMs - row.ExpectedMs
	return row, nil
}

// packetMeans are per-packet means over the packets one direction wrote between two snapshots.
type packetMeans struct {
	n              uint64
	heldMs, lateMs float64
}

func perPacket(a, b linkem.DirStats) packetMeans {
	n := b.OutPackets - a.OutPackets
	if n == 0 {
		return packetMeans{}
	}
	return packetMeans{n: n, heldMs: float64(b.HeldNs-a.HeldNs) / float64(n) / 1e6, lateMs: float64(b.LateNs-a.LateNs) / float64(n) / 1e6}
}

func serMs(bytes int, d *profiles.Direction) float64 {
	if d.RateMbit == nil {
		return 0 // trace: depends on the opportunity; not used by the built-in profiles
	}
	return float64(bytes) * 8 / (*d.RateMbit * 1e6) * 1e3
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// goodputProfile is the baseline with wlan0 set to rate both ways, the
// baseline WiFi delay, and a queue of two bandwidth-delay products (at least
// the baseline's 75 kB), so that one CUBIC flow keeps the link busy: after a
// loss it backs off to 0.7 of a window of BDP + queue, still above one BDP,
// also when the slow-start overshoot costs it two back-offs.
func goodputProfile(rate float64) (*profiles.Profile, error) {
	p, err := profiles.Load("baseline")
	if err != nil {
		return nil, err
	}
	w := p.Links[topo.WiFiIf]
	delay := *w.Down.DelayMs
	bdp := int(rate * 1e6 / 8 * (2 * delay / 1000))
	q := max(w.QueueBytes, 2*bdp)
	r := rate
	p.ID = "goodput-" + strconv.FormatFloat(rate, 'g', -1, 64)
	p.Links[topo.WiFiIf] = &profiles.Link{Tech: w.Tech, QueueBytes: q,
		Down: &profiles.Direction{RateMbit: &r, DelayMs: &delay},
		Up:   &profiles.Direction{RateMbit: &r, DelayMs: &delay}}
	return p, nil
}

// measureGoodput runs one bulk TCP transfer over wlan0 at rate and measures,
// over the window after warm, the IP bytes the receiving interface got
// (kernel counter) and the TCP payload the application got.
func (r *rig) measureGoodput(rate float64, dir string, warm, window time.Duration) (goodputRow, error) {
	p, err := goodputProfile(rate)
	if err != nil {
		return goodputRow{}, err
	}
	if err := r.tb.SetProfile(p); err != nil {
		return goodputRow{}, err
	}
	w := p.Links[topo.WiFiIf]
	row := goodputRow{RateMbit: rate, Dir: dir, DelayMs: *w.Down.DelayMs, QueueBytes: w.QueueBytes, WindowS: window.Seconds()}
	n := r.tb.Names()
	// The receiving side's interface counts what the emulated link delivered.
	ctrNS, ctrIf := n.Client, topo.WiFiIf
	if dir == "up" {
		ctrNS, ctrIf = n.Router, topo.RouterWiFiIf
	}
	ctr, err := openDevCounter(ctrNS, ctrIf)
	if err != nil {
		return row, err
	}
	defer ctr.Close()
	if err := r.waitIdle(5 * time.Second); err != nil {
		return row, err
	}
	// Before and after the whole transfer, the link idle: what the emulator wrote and what the interface got.
	whole := func() (uint64, linkem.DirStats, error) {
		ip, err := ctr.rxBytes()
		st := r.tb.Stats()[topo.WiFiIf]
		if dir == "up" {
			return ip, st.Up, err
		}
		return ip, st.Down, err
	}
	ipBefore, emuBefore, err := whole()
	if err != nil {
		return row, err
	}
	c, _, err := dialIn(n.Client, topo.WiFiAddr, r.bulk.Addr().String(), false, probeCC, 10*time.Second)
	if err != nil {
		return row, err
	}
	defer abort(c)
	var app atomic.Uint64 // payload bytes received (down) or acknowledged-by-read (up)
	stop := make(chan struct{})
	done := make(chan error, 1)
	if dir == "down" {
		if _, err := c.Write([]byte{'d'}); err != nil {
			return row, err
		}
		go func() {
			buf := make([]byte, 64<<10)
			for {
				k, err := c.Read(buf)
				app.Add(uint64(k))
				if err != nil {
					done <- nil
					return
				}
			}
		}()
	} else {
		if _, err := c.Write([]byte{'u'}); err != nil {
			return row, err
		}
		// The payload that reached the server is what the router side
		// received minus headers; the app counter here counts what the
		// client's writes handed to TCP, so it is reported for
		// download only.
		go func() { done <- bulkSend(c, stop) }()
	}
	sample := func() (time.Time, uint64, uint64, linkem.Stats, time.Duration, error) {
		ip, err := ctr.rxBytes()
		st := r.tb.Stats()[topo.WiFiIf]
		return time.Now(), ip, app.Load(), st, cpuTime(), err
	}
	start := time.Now()
	time.Sleep(warm)
	t0, ip0, app0, st0, cpu0, err := sample()
	if err != nil {
		return row, err
	}
	time.Sleep(start.Add(warm + window).Sub(time.Now()))
	t1, ip1, app1, st1, cpu1, err := sample()
	close(stop)
	abort(c)
	<-done
	if err != nil {
		return row, err
	}
	secs := t1.Sub(t0).Seconds()
	row.IPMbit = float64(ip1-ip0) * 8 / secs / 1e6
	row.IPErrPct = (row.IPMbit/rate - 1) * 100
	idle := st1.Down.IdleNs - st0.Down.IdleNs
	if dir == "up" {
		idle = st1.Up.IdleNs - st0.Up.IdleNs
	}
	busy := t1.Sub(t0).Seconds() - float64(idle)/1e9
	row.BusyPct = busy / secs * 100
	if busy > 0 {
		row.IPBusyMbit = float64(ip1-ip0) * 8 / busy / 1e6
	}
	if dir == "down" {
		row.PayloadMbit = float64(app1-app0) * 8 / secs / 1e6
		row.PayloadPct = row.PayloadMbit / (rate * payloadPerPacket / linkem.MTU) * 100
		row.QueueDrops = st1.Down.Dropped - st0.Down.Dropped
	} else {
		row.QueueDrops = st1.Up.Dropped - st0.Up.Dropped
	}
	row.CPUPctOfCore = float64(cpu1-cpu0) / float64(t1.Sub(t0)) * 100

	if err := r.waitIdle(10 * time.Second); err != nil {
		return row, err
	}
	ipAfter, emuAfter, err := whole()
	if err != nil {
		return row, err
	}
	row.KernelBytes, row.EmulatorBytes = ipAfter-ipBefore, emuAfter.OutBytes-emuBefore.OutBytes
	if sending := emuAfter.SendNs - emuBefore.SendNs; sending > 0 {
		row.EmulatorMbit = float64(row.EmulatorBytes) * 8 / (float64(sending) / 1e9) / 1e6
	}
	row.LateMs = perPacket(emuBefore, emuAfter).lateMs
	return row, nil
}

// waitIdle waits until both links have carried or dropped every packet they
// took in, and stay so for 100 ms: a new measurement must not share the
// links with the tail of the previous one.
func (r *rig) waitIdle(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	quietSince := time.Time{}
	for time.Now().Before(deadline) {
		idle := true
		for _, st := range r.tb.Stats() {
			for _, d := range []linkem.DirStats{st.Down, st.Up} {
				if d.InPackets != d.OutPackets+d.Lost+d.Dropped+d.PoolDrops+d.Oversize+d.WriteErrors {
					idle = false
				}
			}
		}
		switch {
		case !idle:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		case time.Since(quietSince) >= 100*time.Millisecond:
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("links still busy after %v", timeout)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// accuracyPlan lists what to measure.
type accuracyPlan struct {
	profiles     []string
	rates        []float64
	dirs         []string
	pings        int
	warm, window time.Duration
}

func fullPlan() accuracyPlan {
	// RTTs are checked on the fixed-rate profiles: on a trace the wait for a delivery opportunity is part of the
	// trace, not an error of the emulator.
	var names []string
	for _, n := range profiles.Names() {
		if p, err := profiles.Load(n); err == nil && !p.HasTrace() {
			names = append(names, n)
		}
	}
	return accuracyPlan{profiles: names, rates: []float64{1, 2, 5, 10, 20, 50},
		dirs: []string{"down", "up"}, pings: 20, warm: time.Second, window: 2 * time.Second}
}

func quickPlan() accuracyPlan {
	return accuracyPlan{profiles: []string{"baseline", "3g"}, rates: []float64{1, 10, 50},
		dirs: []string{"down"}, pings: 10, warm: time.Second, window: 1500 * time.Millisecond}
}

func (r *rig) run(plan accuracyPlan, progress io.Writer) (accuracyReport, error) {
	var rep accuracyReport
	for _, name := range plan.profiles {
		p, err := profiles.Load(name)
		if err != nil {
			return rep, err
		}
		if err := r.tb.SetProfile(p); err != nil {
			return rep, err
		}
		for _, iface := range []string{topo.WiFiIf, topo.CellIf} {
			row, err := r.measureRTT(p, iface, plan.pings)
			if err != nil {
				return rep, err
			}
			fmt.Fprintf(progress, "rtt %s %s: %.2f ms (expected %.2f)\n", name, iface, row.MedianMs, row.ExpectedMs)
			rep.RTT = append(rep.RTT, row)
		}
	}
	for _, dir := range plan.dirs {
		for _, rate := range plan.rates {
			row, err := r.measureGoodput(rate, dir, plan.warm, plan.window)
			if err != nil {
				return rep, fmt.Errorf("goodput %g Mbit/s %s: %w", rate, dir, err)
			}
			fmt.Fprintf(progress, "goodput %g %s: IP %.3f Mbit/s (%+.2f %%)\n", rate, dir, row.IPMbit, row.IPErrPct)
			rep.Goodput = append(rep.Goodput, row)
		}
	}
	return rep, nil
}

func cmdAccuracy(args []string, w io.Writer) error {
	fs, prefix := newFlags("accuracy")
	// Its own namespaces by default, so it can run beside a live testbed.
	fs.Set("prefix", "mpsacc")
	asJSON := fs.Bool("json", false, "print JSON")
	quick := fs.Bool("quick", false, "fewer profiles and rates, downlink only")
	if err := cli.ParseNone(fs, args); err != nil {
		return err
	}
	plan := fullPlan()
	if *quick {
		plan = quickPlan()
	}
	r, err := newRig(*prefix)
	if err != nil {
		return err
	}
	rep, err := r.run(plan, io.Discard)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printReport(w, rep)
	if bad := rep.failures(); len(bad) > 0 {
		return fmt.Errorf("outside tolerance: %v", bad)
	}
	return nil
}

// failures lists the rows outside the tolerances.
func (rep accuracyReport) failures() []string {
	var bad []string
	for _, r := range rep.RTT {
		if math.Abs(r.ErrorMs) > rttToleranceMs {
			bad = append(bad, fmt.Sprintf("RTT %s %s %+.2f ms", r.Profile, r.Iface, r.ErrorMs))
		}
	}
	for _, g := range rep.Goodput {
		if math.Abs(g.IPErrPct) > rateTolerancePct {
			bad = append(bad, fmt.Sprintf("rate %g %s %+.2f %%", g.RateMbit, g.Dir, g.IPErrPct))
		}
	}
	return bad
}

func printReport(w io.Writer, rep accuracyReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "RTT (ms): configured = sum of one-way delays; expected = configured + serialization of the 53-byte probe packets;")
	fmt.Fprintln(w, "measured = median of 1-byte TCP ping-pongs; check |measured - expected| <= 2 ms;")
	fmt.Fprintln(w, "emulator = the round trip the emulator scheduled (its own clock), late = how late it delivered, per round trip")
	fmt.Fprintln(tw, "profile\tpath\ttech\tconfigured\texpected\tconnect\tmedian\tp10\tp90\terror\temulator\tlate\t")
	for _, r := range rep.RTT {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%+.2f\t%.2f\t%.2f\t\n",
			r.Profile, r.Iface, r.Tech, r.ConfiguredMs, r.ExpectedMs, r.ConnectMs, r.MedianMs, r.P10Ms, r.P90Ms, r.ErrorMs, r.EmulatorMs, r.LateMs)
	}
	tw.Flush()
	fmt.Fprintln(w)
	window := 0.0
	if len(rep.Goodput) > 0 {
		window = rep.Goodput[0].WindowS
	}
	fmt.Fprintf(w, "Bulk TCP (CUBIC) over wlan0: rate both ways, 25+25 ms delay, queue max(75 kB, 2 BDP); measured for %g s after 1 s of warm-up.\n", window)
	fmt.Fprintln(w, "IP = IP bytes counted by the receiving interface (checked: within 5 % of the rate);")
	fmt.Fprintln(w, "busy = share of the window the emulated transmitter was sending; IP/busy = IP Mbit/s over that time;")
	fmt.Fprintln(w, "payload = TCP payload read by the client, as % of the ideal rate*1448/1500 (download only);")
	fmt.Fprintln(w, "emulator = the whole transfer's IP bytes over the time the emulator spent sending them (its own clock).")
	fmt.Fprintln(tw, "rate\tdir\tqueue B\tIP Mbit/s\tIP error\tbusy\tIP/busy\tpayload Mbit/s\tof ideal\tqueue drops\tCPU % core\temulator Mbit/s\t")
	for _, g := range rep.Goodput {
		payload, pct := "-", "-"
		if g.Dir == "down" {
			payload, pct = fmt.Sprintf("%.3f", g.PayloadMbit), fmt.Sprintf("%.1f %%", g.PayloadPct)
		}
		fmt.Fprintf(tw, "%g\t%s\t%d\t%.3f\t%+.2f %%\t%.1f %%\t%.3f\t%s\t%s\t%d\t%.0f\t%.3f\t\n",
			g.RateMbit, g.Dir, g.QueueBytes, g.IPMbit, g.IPErrPct, g.BusyPct, g.IPBusyMbit, payload, pct, g.QueueDrops, g.CPUPctOfCore, g.EmulatorMbit)
	}
	tw.Flush()
}
