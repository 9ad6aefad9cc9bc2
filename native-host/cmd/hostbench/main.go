// Command hostbench measures decide round trips: in-process through the framing over io.Pipe with the real
// dispatcher, through a real mpsurf-host subprocess over pipes, and, as the baseline of the same run, a raw frame
// echo over io.Pipe without the dispatcher. It prints p50, p99 and mean per round trip and each against the
// baseline.
//
// The "serving host" lines decide as the host does on a navigation: the real Decider with the model, its input
// read from a real SQLite store that keeps 40 loads of the page's site (20 of its path class), every decision
// written to that store's log by the host's log writer after the reply went out (the load's report, untimed,
// waits for that row, as the host's reads of the log do), links not measured yet (priors), the radio sure (idle)
// or unsure of its state (three states weighed, as a host that resumes after cellular traffic it did not see). The
// store lives in -db-dir: on a RAM file system (the default, /dev/shm) or on a disk, whose synchronous writes
// (PRAGMA synchronous=FULL) the report then waits for, not the decision. Beside the wall clock they print the
// process's CPU time per round trip (both ends of the pipe, the host's goroutines and the collector): the part of
// a p99 on a shared machine that is the decision's own work rather than a wait for a core. A decision whose store
// reads missed the host's bound (decide's memoryTimeout) goes without the history, as the host does; those are
// counted and timed, and more than 1 % of them fails the run, since it would no longer time the decision with
// history.
//
//	go run ./native-host/cmd/hostbench [-n N] [-host dist/mpsurf-host] [-db-dir DIR] [-cpuprofile FILE] [-memprofile FILE]
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/mpsurf/mpsurf/native-host/carry"
	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
	"github.com/mpsurf/mpsurf/native-host/wire"
)

const warmup = 500

func main() {
	fs := cli.Flags("hostbench")
	n := fs.Int("n", 0, "round trips per measurement (default 20000 in-process, 5000 subprocess)")
	hostPath := fs.String("host", "dist/mpsurf-host", "the mpsurf-host binary for the subprocess measurement")
	dbDir := fs.String("db-dir", "/dev/shm", "where the serving host's store is made (and removed after)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the serving-host measurements to this file")
	memProfile := fs.String("memprofile", "", "write an allocation profile (go tool pprof -sample_index=alloc_space) of the whole run to this file")
	if err := cli.ParseNone(fs, os.Args[1:]); err != nil {
		os.Exit(cli.Exit(err, "hostbench", cli.Described(fs, "usage: hostbench [-n N] [-host BINARY] [-db-dir DIR] [-cpuprofile FILE] [-memprofile FILE]\n"), os.Stdout, os.Stderr))
	}
	// The collector as the serving host sets it: the serving lines run the host's code in this process.
	host.SetGC(os.Getenv)
	nIn, nSub := 20000, 5000
	if *n > 0 {
		nIn, nSub = *n, *n
	}
	if *memProfile != "" {
		// Every allocation sampled at 4 kB rather than the default 512 kB, so that one run's profile says where
		// the bytes of a round trip go.
		runtime.MemProfileRate = 4096
	}
	if err := run(nIn, nSub, *hostPath, *dbDir, *cpuProfile, *memProfile); err != nil {
		fmt.Fprintln(os.Stderr, "hostbench:", err)
		os.Exit(1)
	}
}

type stats struct {
	name           string
	n              int
	p50, p99, mean time.Duration
	// cpuP50, cpuP99: the process's CPU time per round trip, when measured.
	cpuP50, cpuP99 time.Duration
	cpuOK          bool
}

func summarize(name string, d []time.Duration) stats {
	slices.Sort(d)
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return stats{name: name, n: len(d), p50: d[len(d)/2], p99: d[len(d)*99/100], mean: sum / time.Duration(len(d))}
}

// withCPU adds the CPU times per round trip to s.
func (s stats) withCPU(cpu []time.Duration) stats {
	if len(cpu) == 0 {
		return s
	}
	slices.Sort(cpu)
	s.cpuP50, s.cpuP99, s.cpuOK = cpu[len(cpu)/2], cpu[len(cpu)*99/100], true
	return s
}

func run(nIn, nSub int, hostPath, dbDir, cpuProfile, memProfile string) error {
	var results []stats

	base, err := measurePipe(nIn, func(in io.Reader, out io.Writer) error {
		r, w := wire.NewReader(in, wire.MaxIn), wire.NewWriter(out, wire.MaxOut)
		for {
			p, err := r.Read()
			if err != nil {
				return err
			}
			if err := w.Write(p); err != nil {
				return err
			}
		}
	}, false)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	results = append(results, summarize("baseline: frame echo over io.Pipe", base))

	store := policy.NewStore(policy.EmbeddedSource())
	if _, err := store.Snapshot(); err != nil {
		return err
	}
	log := slog.New(slog.DiscardHandler)
	// The model built into the binary, with nothing measured or remembered, and no helper or proxy.
	params, src, err := model.Open("")
	dec := decide.New(decide.Config{Params: params, ParamsSource: src, ParamsErr: err, Log: log})
	car := carry.New(carry.Config{Tunnel: dec.Tunnel, Log: log})
	inproc, err := measurePipe(nIn, func(in io.Reader, out io.Writer) error {
		srv := host.NewServer(host.Parts{Policy: store, Decider: dec, Carrier: car, Log: log})
		return srv.Serve(context.Background(), host.Config{In: in, Out: out, Log: log})
	}, true)
	if err != nil {
		return fmt.Errorf("in-process: %w", err)
	}
	results = append(results, summarize("in-process: decide over io.Pipe", inproc))

	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	for _, unsure := range []bool{false, true} {
		m, err := measureServing(nIn/4, unsure, dbDir, store)
		if err != nil {
			return fmt.Errorf("serving host: %w", err)
		}
		name := "serving host: 40 loads, radio sure"
		if unsure {
			name = "serving host: 40 loads, radio unsure"
		}
		results = append(results, summarize(name, m.wall).withCPU(m.cpu))
		fmt.Printf("%s: %.1f kB allocated per navigation (its decide and two reports), %d garbage collections in %d navigations\n",
			name, float64(m.allocBytes)/float64(m.navs)/1000, m.gcs, m.navs)
		if m.missed > 0 {
			fmt.Printf("%s: %d of %d decisions went without the history (store reads over the host's bound)\n", name, m.missed, len(m.wall))
		}
	}

	pprof.StopCPUProfile() // the profile is the serving host's alone; no-op without -cpuprofile
	if memProfile != "" {
		f, err := os.Create(memProfile)
		if err != nil {
			return err
		}
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}

	if _, err := os.Stat(hostPath); err != nil {
		fmt.Fprintf(os.Stderr, "hostbench: no subprocess measurement: %v (build it with npm run build:host)\n", err)
	} else {
		sub, err := measureSubprocess(nSub, hostPath, dbDir)
		if err != nil {
			return fmt.Errorf("subprocess: %w", err)
		}
		results = append(results, summarize("subprocess: decide over pipes", sub))
	}

	fmt.Printf("%-38s %7s %10s %10s %10s %8s %8s %8s %10s %10s\n", "", "n", "p50", "p99", "mean", "p50/base", "p99/base", "mean/base", "cpu p50", "cpu p99")
	for _, s := range results {
		cpu50, cpu99 := "-", "-"
		if s.cpuOK {
			cpu50, cpu99 = us(s.cpuP50), us(s.cpuP99)
		}
		fmt.Printf("%-38s %7d %10s %10s %10s %8.1f %8.1f %8.1f %10s %10s\n", s.name, s.n, us(s.p50), us(s.p99), us(s.mean),
			float64(s.p50)/float64(results[0].p50), float64(s.p99)/float64(results[0].p99), float64(s.mean)/float64(results[0].mean), cpu50, cpu99)
	}
	fmt.Println("cpu: the process's CPU time per round trip (both ends, every goroutine), without the waits for a core")
	fmt.Printf("serving host's store in %s\n", dbDir)
	return nil
}

func us(d time.Duration) string { return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond)) }

// requests returns n framed decide requests with increasing ids.
func requests(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		id := i%protocol.MaxID + 1
		out[i] = wire.Append(nil, fmt.Appendf(nil,
			`{"v":1,"id":%d,"type":"decide","body":{"origin":"https://example.com","tab":12,"nav":"12-%d"}}`, id, id))
	}
	return out
}

// roundTrips times each request against its reply.
func roundTrips(n int, to io.Writer, from io.Reader, checkOK bool) ([]time.Duration, error) {
	reqs := requests(n + warmup)
	r := wire.NewReader(from, wire.MaxOut)
	d := make([]time.Duration, 0, n)
	for i, req := range reqs {
		start := time.Now()
		if _, err := to.Write(req); err != nil {
			return nil, err
		}
		reply, err := r.Read()
		if err != nil {
			return nil, err
		}
		elapsed := time.Since(start)
		if checkOK && !bytes.Contains(reply, []byte(`"ok":true`)) {
			return nil, fmt.Errorf("reply %d is not ok: %s", i, reply)
		}
		if i >= warmup {
			d = append(d, elapsed)
		}
	}
	return d, nil
}

func measurePipe(n int, serve func(io.Reader, io.Writer) error, checkOK bool) ([]time.Duration, error) {

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := serve(inR, outW)
		outW.Close()
		done <- err
	}()
	d, err := roundTrips(n, inW, outR, checkOK)
	inW.Close()
	if serr := <-done; serr != nil && !errors.Is(serr, io.EOF) && err == nil {
		err = serr
	}
	return d, err
}

// measureSubprocess times n decide round trips through the host at hostPath, its decision log a new one in dbDir
// (removed after), not the user's.
func measureSubprocess(n int, hostPath, dbDir string) ([]time.Duration, error) {
	dir, err := os.MkdirTemp(dbDir, "hostbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(hostPath, protocol.ExtensionOrigin)
	cmd.Env = append(os.Environ(), "MPSURF_DB="+filepath.Join(dir, "sub.db"))
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d, err := roundTrips(n, in, out, true)
	in.Close()
	if werr := cmd.Wait(); werr != nil && err == nil {
		err = werr
	}
	return d, err
}

// fixedLinks is a device whose paths are not measured yet (the model takes its priors) and whose radio is in a
// given state: the links part of the decision without a sampler running beside the measurement.
type fixedLinks struct{ rrc *model.RRC }

func (l fixedLinks) View() decide.View         { return decide.View{RRC: l.rrc} }
func (l fixedLinks) Status() decide.LinkStatus { return decide.LinkStatus{} }
func (l fixedLinks) CellRx() (int64, bool)     { return 0, false }

// benchOrigin is the page the serving host decides for, and benchPath its path (class /gallery/:id).
const (
	benchOrigin = "https://example.com"
	benchPath   = "/gallery/7"
)

// served is what measureServing measured: the wall-clock and CPU time of each round trip, and how many
// decisions went without the history.
type served struct {
	wall, cpu []time.Duration
	missed    int
	// allocBytes and gcs are the heap bytes allocated and the garbage collections over navs navigations (the
	// warm-up's included), the whole process's.
	allocBytes uint64
	gcs        uint32
	navs       int
}

// measureServing times n decide round trips through a serving host (see the package comment) whose store, made
// in dbDir and removed after, keeps 40 loads of benchOrigin: 20 of the path's class (1.9-2.1 MB), 20 other pages
// (30-790 kB), as modelbench's "history" inputs.
func measureServing(n int, unsure bool, dbDir string, pol *policy.Store) (served, error) {
	dir, err := os.MkdirTemp(dbDir, "hostbench-")
	if err != nil {
		return served{}, err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(filepath.Join(dir, "bench.db"), store.Options{})
	if err != nil {
		return served{}, err
	}
	defer db.Close()
	ctx := context.Background()
	for i := range int64(20) {
		for _, o := range []store.Observation{
			{Origin: benchOrigin, Tab: 1, Nav: fmt.Sprintf("o%d", i), PathClass: "/page/:id", Protocol: "h2", TransferBytes: 30_000 + i*40_000, PLTms: 900},
			{Origin: benchOrigin, Tab: 1, Nav: fmt.Sprintf("c%d", i), PathClass: store.PathClass(benchPath), Protocol: "h2", TransferBytes: 1_900_000 + i*10_000, PLTms: 2500},
		} {
			if _, err := db.Report(ctx, o); err != nil {
				return served{}, err
			}
		}
	}
	p, src, err := model.Open("")
	if err != nil {
		return served{}, err
	}
	rrc := &model.RRC{Tech: "lte", State: "idle", SinceMS: 60000}
	if unsure {
		rrc = &model.RRC{Tech: "lte", State: "idle", SinceMS: 9000, Spread: []model.RRCShare{
			{State: "idle", SinceMS: 9000, P: 0.4}, {State: "long_drx", SinceMS: 3000, P: 0.55}, {State: "continuous", SinceMS: 50, P: 0.05}}}
	}
	log := slog.New(slog.DiscardHandler)
	dec := decide.New(decide.Config{Params: p, ParamsSource: src, Links: fixedLinks{rrc}, Memory: db, Log: log})
	// The store as mpsurf-host gives it, to the carrier (its relay's routes) and the server (the decision log); no
	// helper or proxy.
	car := carry.New(carry.Config{Tunnel: dec.Tunnel, Store: db, Log: log})
	car.Start()
	defer car.Close()
	srv := host.NewServer(host.Parts{Policy: pol, Decider: dec, Carrier: car, Store: db, Log: log})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(ctx, host.Config{In: inR, Out: outW, Log: log})
		outW.Close()
		done <- err
	}()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := navigations(n, inW, outR)
	runtime.ReadMemStats(&after)
	m.allocBytes, m.gcs, m.navs = after.TotalAlloc-before.TotalAlloc, after.NumGC-before.NumGC, n+warmup
	inW.Close()
	if serr := <-done; serr != nil && !errors.Is(serr, io.EOF) && err == nil {
		err = serr
	}
	srv.Close() // its decision log written out before the store closes
	return m, err
}

// navigations times n decide round trips (after warmup more), each followed, untimed, by the report of the page's
// load as the extension sends it (its size and page-load time) and by a load of another site: the store then holds
// what a browsing session leaves, each decision with its outcome, the user's pages elsewhere beside them, and the
// model learns from them as it would.
func navigations(n int, to io.Writer, from io.Reader) (served, error) {
	r := wire.NewReader(from, wire.MaxOut)
	m := served{wall: make([]time.Duration, 0, n), cpu: make([]time.Duration, 0, n)}
	ask := func(req []byte) ([]byte, error) {
		if _, err := to.Write(req); err != nil {
			return nil, err
		}
		return r.Read()
	}
	var meter cpuMeter
	for i := range n + warmup {
		id := 2*(i%(protocol.MaxID/2)) + 1
		nav := fmt.Sprintf("12-%d", i)
		req := wire.Append(nil, fmt.Appendf(nil,
			`{"v":1,"id":%d,"type":"decide","body":{"origin":%q,"tab":12,"nav":%q,"path":%q}}`, id, benchOrigin, nav, benchPath))
		cpuOK := meter.begin()
		start := time.Now()
		reply, err := ask(req)
		if err != nil {
			return served{}, err
		}
		elapsed := time.Since(start)
		cpu, ok := meter.end()
		cpuOK = cpuOK && ok
		// The decision weighed the history: a 2 MB page of a class loaded 20 times goes multipath, else the
		// measurement would time a decision that read nothing. The one exception is the host's own: store reads
		// that missed its bound, after which the decision goes without the history (samples 0) and says so.
		missed := bytes.Contains(reply, []byte(`"size":{"known":false`)) && bytes.Contains(reply, []byte(`"samples":0`))
		if !bytes.Contains(reply, []byte(`"ok":true`)) || (!bytes.Contains(reply, []byte(`"multipath":true`)) && !missed) {
			return served{}, fmt.Errorf("decide %d: not a multipath decision for a 2 MB page with history: %s", i, reply)
		}
		if i >= warmup {
			m.wall = append(m.wall, elapsed)
			if cpuOK {
				m.cpu = append(m.cpu, cpu)
			}
			if missed {
				m.missed++
			}
		}
		reply, err = ask(wire.Append(nil, fmt.Appendf(nil,
			`{"v":1,"id":%d,"type":"report","body":{"origin":%q,"tab":12,"nav":%q,"protocol":"h2","transfer_bytes":%d,"plt_ms":%d,"multipath":true}}`,
			id+1, benchOrigin, nav, 1_900_000+(i%20)*10_000, 1800+i%400)))
		if err != nil {
			return served{}, err
		}
		if !bytes.Contains(reply, []byte(`"ok":true`)) {
			return served{}, fmt.Errorf("report %d: %s", i, reply)
		}
		// Another site's load (no decision of its own here: its report only keeps its size).
		reply, err = ask(wire.Append(nil, fmt.Appendf(nil,
			`{"v":1,"id":%d,"type":"report","body":{"origin":"https://site%d.example","tab":13,"nav":%q,"protocol":"h2","transfer_bytes":%d,"plt_ms":900,"multipath":false}}`,
			id+1, i%30, nav, 20_000+(i%30)*50_000)))
		if err != nil {
			return served{}, err
		}
		if !bytes.Contains(reply, []byte(`"ok":true`)) {
			return served{}, fmt.Errorf("report %d, another site: %s", i, reply)
		}
	}
	if len(m.cpu) != len(m.wall) {
		m.cpu = nil
	}
	if m.missed*100 > len(m.wall) {
		return m, fmt.Errorf("%d of %d decisions went without the history (store reads over the host's bound): not a measurement of the decision with history", m.missed, len(m.wall))
	}
	return m, nil
}
