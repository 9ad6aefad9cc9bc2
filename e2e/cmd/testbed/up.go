//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mpsurf/mpsurf/e2e/profiles"
	"github.com/mpsurf/mpsurf/e2e/topo"
	"github.com/mpsurf/mpsurf/native-host/cli"
	"golang.org/x/sys/unix"
)

type upFlags struct {
	prefix, profile, timeline, mode *string
	seed                            *uint64
	cc                              *string
	withParent                      *bool
	proxy                           *bool
}

func newUpFlags(name string) (*flag.FlagSet, upFlags) {
	fs, prefix := newFlags(name)
	f := upFlags{
		prefix:   prefix,
		profile:  fs.String("profile", "", "built-in profile id or JSON file (required)"),
		timeline: fs.String("timeline", "", "directory for per-link packet timelines (<iface>.csv)"),
		mode:     fs.String("mode", string(topo.SPWiFi), "initial mode: sp-wifi, sp-cell or mp"),
		seed:     fs.Uint64("seed", 1, "random-loss seed"),
		cc:       fs.String("cc", "", "default TCP congestion control in the client and server namespaces (default: inherit the host's)"),
		proxy:    fs.Bool("proxy", false, "add the proxy host's namespace (PREFIX-proxy, 10.200.4.2) behind the router"),
		withParent: fs.Bool("exit-with-parent", false, "tear down when the parent process dies (PR_SET_PDEATHSIG; "+
			"only for parents that start us from their main thread, e.g. Node)"),
	}
	return fs, f
}

// bringUp validates the flags and starts the testbed and its control socket.
func bringUp(f upFlags) (*topo.Testbed, *controlServer, error) {
	// A parent that stops reading our stdout must not kill us with SIGPIPE
	// before we tear down: writes then just fail.
	signal.Ignore(syscall.SIGPIPE)
	if *f.withParent {
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
			return nil, nil, err
		}
		if os.Getppid() == 1 {
			return nil, nil, errors.New("parent already gone")
		}
	}
	if *f.profile == "" {
		return nil, nil, cli.Usagef("--profile is required (built-in: %v)", profiles.Names())
	}
	p, err := profiles.Load(*f.profile)
	if err != nil {
		return nil, nil, err
	}
	m, err := topo.ParseMode(*f.mode)
	if err != nil {
		return nil, nil, cli.Usagef("%v", err)
	}
	timeline := *f.timeline
	if timeline != "" {
		if timeline, err = filepath.Abs(timeline); err != nil {
			return nil, nil, err
		}
	}
	tb, err := topo.Up(topo.Options{Prefix: *f.prefix, Profile: p, TimelineDir: timeline, Seed: *f.seed, Mode: m, CongestionControl: *f.cc, Proxy: *f.proxy})
	if err != nil {
		return nil, nil, err
	}
	cs, err := serveControl(*f.prefix, tb, timeline)
	if err != nil {
		return nil, nil, errors.Join(err, tb.Close())
	}
	*f.timeline = timeline
	return tb, cs, nil
}

func tearDown(tb *topo.Testbed, cs *controlServer) error {
	cs.Close()
	return tb.Close()
}

func cmdUp(args []string) error {
	fs, f := newUpFlags("up")
	if err := cli.ParseNone(fs, args); err != nil {
		return err
	}
	// Catch signals before building anything, so an early Ctrl-C still
	// tears down.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	tb, cs, err := bringUp(f)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "testbed %s up: profile %s, mode %s, timeline %q, control %s\n",
		*f.prefix, tb.Profile().ID, *f.mode, *f.timeline, socketPath(*f.prefix))
	fmt.Println("ready")
	<-ctx.Done()
	return tearDown(tb, cs)
}

func cmdRun(args []string) (int, error) {
	fs, f := newUpFlags("run")
	if err := cli.Parse(fs, args); err != nil {
		return 0, err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return 0, cli.Usagef("run needs a command after --")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return 0, err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	tb, cs, err := bringUp(f)
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	for k, v := range testbedEnv(*f.prefix, tb.Profile().ID, *f.timeline) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if err := cmd.Start(); err != nil {
		return 0, errors.Join(err, tearDown(tb, cs))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	forwarded := 0
wait:
	for {
		select {
		case werr = <-done:
			break wait
		case s := <-sigs:
			// Pass the first signal on; if the command ignores it, the
			// next one (or 10 s) ends it for good.
			forwarded++
			if forwarded == 1 {
				cmd.Process.Signal(s)
				go func() {
					time.Sleep(10 * time.Second)
					cmd.Process.Kill()
				}()
			} else {
				cmd.Process.Kill()
			}
		}
	}
	derr := tearDown(tb, cs)
	status := 0
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		status = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		}
	case werr != nil:
		return 0, errors.Join(werr, derr)
	}
	return status, derr
}
