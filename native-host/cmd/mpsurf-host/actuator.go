package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os/signal"
	"syscall"

	"github.com/mpsurf/mpsurf/native-host/actuate"
)

const actuatorUsage = `usage:
  mpsurf-host actuator [--socket PATH] [--state-dir DIR] --allow-uid N[,M] [--allow-gid G]
        [--backend auto|userspace|endpoint|sysctl|dryrun] [--cell-if IFACE | --cell-addr IP] [--audit FILE]
        run the privileged helper (needs CAP_NET_ADMIN; see packaging/systemd/mpsurf-actuator.service)
  mpsurf-host actuator --restore [--state-dir DIR]
        undo what the undo record in DIR holds (the unit's ExecStopPost) and exit
`

func actuatorCmd(args []string, stderr io.Writer) int {
	fs := newFlags("actuator")
	socket := fs.String("socket", "/run/mpsurf/actuator.sock", "")
	stateDir := fs.String("state-dir", "/run/mpsurf", "")
	uids := fs.String("allow-uid", "", "")
	gids := fs.String("allow-gid", "", "")
	backend := fs.String("backend", actuate.BackendAuto, "")
	cell := fs.String("cell-addr", "", "")
	cellIf := fs.String("cell-if", "", "")
	audit := fs.String("audit", "", "")
	restore := fs.Bool("restore", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mpsurf-host: actuator: bad arguments %q\n\n%s", args, actuatorUsage)
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
	cfg := actuate.Config{Socket: *socket, StateDir: *stateDir, Backend: *backend, AuditFile: *audit, Log: log, CellIf: *cellIf}
	var err error
	if cfg.AllowUIDs, err = actuate.ParseIDs(*uids); err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: actuator: --allow-uid: %v\n", err)
		return exitUsage
	}
	if cfg.AllowGIDs, err = actuate.ParseIDs(*gids); err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: actuator: --allow-gid: %v\n", err)
		return exitUsage
	}
	if *cell != "" {
		if cfg.CellAddr, err = netip.ParseAddr(*cell); err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: actuator: --cell-addr: %v\n", err)
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
