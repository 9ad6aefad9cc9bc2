package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/store"
)

const logUsage = `mpsurf-host log export --format csv|jsonl [--since 2026-11-01|RFC3339|unix-ms] [--db PATH]
        write the decision log to stdout, one consistent snapshot while the host goes on writing; the database
        is --db PATH, else $MPSURF_DB, else $XDG_DATA_HOME/mpsurf/mpsurf.db (~/.local/share/mpsurf/mpsurf.db)
`

// openStore opens the decision log for the serving host. A store that cannot be opened is logged and the host
// serves without it: decisions go on, store requests get store_unavailable (err says why).
func openStore(log *slog.Logger) (*store.Store, error) {
	path, err := store.DefaultPath()
	if err != nil {
		log.Error("no decision log", "err", err)
		return nil, err
	}
	db, err := store.Open(path, store.Options{})
	if err != nil {
		log.Error("no decision log; decisions go on unlogged", "err", err)
		return nil, err
	}
	log.Info("decision log", "path", path)
	return db, nil
}

// openLog opens the decision log at path, or at the default path when path is "", for a command that reads it, and
// returns the path it opened.
func openLog(path string) (*store.Store, string, error) {
	if path == "" {
		var err error
		if path, err = store.DefaultPath(); err != nil {
			return nil, "", err
		}
	}
	db, err := store.Open(path, store.Options{})
	return db, path, err
}

func logCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("log export")
	format := fs.String("format", "", "")
	since := fs.String("since", "", "")
	dbPath := fs.String("db", "", "")
	if err := cli.ParseNone(fs, args); err != nil {
		return badUsage(stderr, "log export: %v", err)
	}
	if *format != store.FormatCSV && *format != store.FormatJSONL {
		return badUsage(stderr, "log export: --format must be csv or jsonl")
	}
	var sinceMS int64
	if *since != "" {
		var err error
		if sinceMS, err = store.ParseSince(*since); err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: log export: %v\n", err)
			return exitUsage
		}
	}
	db, path, err := openLog(*dbPath)
	if err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: log export: %v\n", err)
		return exitFailed
	}
	defer db.Close()
	bw := bufio.NewWriterSize(stdout, 64<<10)
	rows, err := db.Export(context.Background(), bw, *format, sinceMS)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: log export: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stderr, "mpsurf-host: exported %d decisions from %s\n", rows, path)
	return exitOK
}
