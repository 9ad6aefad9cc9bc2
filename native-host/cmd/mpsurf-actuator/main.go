// Command mpsurf-actuator is MPSurf's privileged helper: the only MPSurf process that holds CAP_NET_ADMIN. It
// carries the native host's decisions into the kernel's MPTCP path manager (package actuate). It is a binary of
// its own so that what runs privileged links only the helper, the MPTCP and sock_diag netlink clients and the
// standard library: none of the host's measurement, model, store or SQLite code (deps_test.go checks it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"github.com/mpsurf/mpsurf/native-host/actuate"
)

// Exit statuses. A helper that stops because it cannot go on exits exitFailed, so that the unit's Restart=
// brings it back.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

const usage = `usage:
  mpsurf-actuator [--socket PATH] [--state-dir DIR] [--allow-uid N[,M]] [--allow-gid G[,H]] [--allow-group NAME]
        [--backend auto|userspace|endpoint|sysctl|dryrun] [--cell-if IFACE|auto | --cell-addr IP] [--audit FILE]
        run the privileged helper (needs CAP_NET_ADMIN; systemd runs it as mpsurf-actuator.service);
        it serves the uids listed, the primary gids listed and the members of the group named (the
        package's unit: --allow-group mpsurf; membership is re-read every few seconds, no login needed);
        --cell-if auto takes the first cellular interface sysfs shows, looked up at each use
  mpsurf-actuator --restore [--state-dir DIR]
        undo what the undo record in DIR holds (the unit's ExecStopPost) and exit
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mpsurf-actuator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	socket := fs.String("socket", "/run/mpsurf/actuator.sock", "")
	stateDir := fs.String("state-dir", "/run/mpsurf", "")
	uids := fs.String("allow-uid", "", "")
	gids := fs.String("allow-gid", "", "")
	group := fs.String("allow-group", "", "")
	backend := fs.String("backend", actuate.BackendAuto, "")
	cell := fs.String("cell-addr", "", "")
	cellIf := fs.String("cell-if", "", "")
	audit := fs.String("audit", "", "")
	restore := fs.Bool("restore", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "mpsurf-actuator: %v (--help for usage)\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mpsurf-actuator: unexpected argument %q (--help for usage)\n", fs.Arg(0))
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if *restore {
		n, err := actuate.RestoreOnly(*stateDir, "")
		if err != nil {
			log.Error("restore", "entries", n, "err", err)
			return exitFailed
		}
		log.Info("restore", "entries", n)
		return exitOK
	}
	cfg := actuate.Config{Socket: *socket, StateDir: *stateDir, Backend: *backend, AuditFile: *audit, Log: log, CellIf: *cellIf,
		AllowGroup: *group}
	var err error
	if cfg.AllowUIDs, err = actuate.ParseIDs(*uids); err != nil {
		fmt.Fprintf(stderr, "mpsurf-actuator: --allow-uid: %v\n", err)
		return exitUsage
	}
	if cfg.AllowGIDs, err = actuate.ParseIDs(*gids); err != nil {
		fmt.Fprintf(stderr, "mpsurf-actuator: --allow-gid: %v\n", err)
		return exitUsage
	}
	if *cell != "" {
		if cfg.CellAddr, err = netip.ParseAddr(*cell); err != nil {
			fmt.Fprintf(stderr, "mpsurf-actuator: --cell-addr: %v\n", err)
			return exitUsage
		}
	}
	srv, err := actuate.Start(cfg)
	if err != nil {
		log.Error("actuator", "err", err)
		return exitFailed
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	signal.Ignore(syscall.SIGPIPE)
	if err := srv.Serve(ctx); err != nil {
		log.Error("actuator stopped with errors", "err", err)
		return exitFailed
	}
	return exitOK
}
