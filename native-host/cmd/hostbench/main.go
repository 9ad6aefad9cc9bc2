// Command hostbench measures decide round trips: in-process through the framing over io.Pipe with the real
// dispatcher, through a real mpsurf-host subprocess over pipes, and, as the baseline of the same run, a raw frame
// echo over io.Pipe without the dispatcher. It prints p50, p99 and mean per round trip and each against the
// baseline.
//
//	go run ./native-host/cmd/hostbench [-n N] [-host dist/mpsurf-host]
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
	"slices"
	"time"

	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/wire"
)

const warmup = 500

func main() {
	fs := cli.Flags("hostbench")
	n := fs.Int("n", 0, "round trips per measurement (default 20000 in-process, 5000 subprocess)")
	hostPath := fs.String("host", "dist/mpsurf-host", "the mpsurf-host binary for the subprocess measurement")
	if err := cli.ParseNone(fs, os.Args[1:]); err != nil {
		os.Exit(cli.Exit(err, "hostbench", cli.Described(fs, "usage: hostbench [-n N] [-host BINARY]\n"), os.Stdout, os.Stderr))
	}
	nIn, nSub := 20000, 5000
	if *n > 0 {
		nIn, nSub = *n, *n
	}
	if err := run(nIn, nSub, *hostPath); err != nil {
		fmt.Fprintln(os.Stderr, "hostbench:", err)
		os.Exit(1)
	}
}

type stats struct {
	name           string
	n              int
	p50, p99, mean time.Duration
}

func summarize(name string, d []time.Duration) stats {
	slices.Sort(d)
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return stats{name: name, n: len(d), p50: d[len(d)/2], p99: d[len(d)*99/100], mean: sum / time.Duration(len(d))}
}

func run(nIn, nSub int, hostPath string) error {
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
	inproc, err := measurePipe(nIn, func(in io.Reader, out io.Writer) error {
		return host.NewServer(store, nil, nil, log).Serve(context.Background(), host.Config{In: in, Out: out, Log: log})
	}, true)
	if err != nil {
		return fmt.Errorf("in-process: %w", err)
	}
	results = append(results, summarize("in-process: decide over io.Pipe", inproc))

	if _, err := os.Stat(hostPath); err != nil {
		fmt.Fprintf(os.Stderr, "hostbench: no subprocess measurement: %v (build it with npm run build:host)\n", err)
	} else {
		sub, err := measureSubprocess(nSub, hostPath)
		if err != nil {
			return fmt.Errorf("subprocess: %w", err)
		}
		results = append(results, summarize("subprocess: decide over pipes", sub))
	}

	fmt.Printf("%-36s %7s %10s %10s %10s %8s %8s\n", "", "n", "p50", "p99", "mean", "p50/base", "mean/base")
	for _, s := range results {
		fmt.Printf("%-36s %7d %10s %10s %10s %8.1f %8.1f\n", s.name, s.n, us(s.p50), us(s.p99), us(s.mean),
			float64(s.p50)/float64(results[0].p50), float64(s.mean)/float64(results[0].mean))
	}
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

func measureSubprocess(n int, hostPath string) ([]time.Duration, error) {
	cmd := exec.Command(hostPath, protocol.ExtensionOrigin)
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
