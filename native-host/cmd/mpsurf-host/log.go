package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/store"
)

const logUsage = `mpsurf-host log export --format csv|jsonl [--since 2026-11-01|RFC3339|unix-ms] [--path-classes raw|pseudonymous] [--db PATH [--create]]
        write the decision log to stdout, one consistent snapshot while the host goes on writing; the database
        is --db PATH, else $MPSURF_DB, else $XDG_DATA_HOME/mpsurf/mpsurf.db (~/.local/share/mpsurf/mpsurf.db).
        A log that does not exist is an error (a mistyped path must not pass for an empty log); --create makes
        an empty one instead, in a directory that exists. Path classes are pseudonymous by default: a segment
        of words outside the known structural ones becomes a token of this log's own key (the same within the
        log, another in another user's); --path-classes raw keeps them, for a log you keep to yourself. The
        columns: docs/decision-log.md
`

// openStore opens the decision log for the serving host, where the environment says. A store that cannot be
// opened is logged and the host serves without it: decisions go on, store requests get store_unavailable (err
// says why).
func openStore(e env, log *slog.Logger) (*store.Store, error) {
	path := e.DB
	if e.DBErr != nil {
		log.Error("no decision log", "err", e.DBErr)
		return nil, e.DBErr
	}
	db, err := store.Open(path, store.Options{})
	if err != nil {
		log.Error("no decision log; decisions go on unlogged", "err", err)
		return nil, err
	}
	log.Info("decision log", "path", path)
	return db, nil
}

// openLog opens the decision log at path, or at the default path when path is "", for a command that reads it,
// and returns the path it opened. A log that does not exist is a command-line mistake (cli.UsageError) unless
// create is set; even then no directory is made: a log in a directory that does not exist is a typo, and a
// command run as root must not leave directories where it was pointed.
func openLog(path string, create bool) (*store.Store, string, error) {
	if path == "" {
		e, _ := readEnv(os.Getenv) // the log's place is all it reads
		if e.DBErr != nil {
			return nil, "", e.DBErr
		}
		path = e.DB
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(path)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, path, cli.Usagef("--db %s: no such file, and no directory %s", path, dir)
		}
		if !create {
			return nil, path, cli.Usagef("--db %s: no such file (--create makes an empty log)", path)
		}
	} else if err != nil {
		return nil, path, err
	}
	db, err := store.Open(path, store.Options{})
	return db, path, err
}

// logOpenFailed reports why the log did not open: a usage error in one line with exit status 2, anything else
// (a corrupt database, no permission) with status 1.
func logOpenFailed(stderr io.Writer, cmd string, err error) int {
	var ue *cli.UsageError
	if errors.As(err, &ue) {
		return badUsage(stderr, "%s: %s", cmd, ue.Msg)
	}
	fmt.Fprintf(stderr, "mpsurf-host: %s: %v\n", cmd, err)
	return exitFailed
}

func logCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("log export")
	format := fs.String("format", "", "")
	since := fs.String("since", "", "")
	dbPath := fs.String("db", "", "")
	create := fs.Bool("create", false, "")
	pathClasses := fs.String("path-classes", "pseudonymous", "")
	if err := cli.ParseNone(fs, args); err != nil {
		return badUsage(stderr, "log export: %v", err)
	}
	paths, err := store.ParsePathClasses(*pathClasses)
	if err != nil {
		return badUsage(stderr, "log export: --path-classes: %v", err)
	}
	if *format != store.FormatCSV && *format != store.FormatJSONL {
		return badUsage(stderr, "log export: --format must be csv or jsonl")
	}
	var sinceMS int64
	if *since != "" {
		var err error
		if sinceMS, err = store.ParseSince(*since); err != nil {
			return badUsage(stderr, "log export: --since: %v", err)
		}
	}
	db, path, err := openLog(*dbPath, *create)
	if err != nil {
		return logOpenFailed(stderr, "log export", err)
	}
	defer db.Close()
	bw := bufio.NewWriterSize(stdout, 64<<10)
	rows, err := db.Export(context.Background(), bw, *format, sinceMS, paths)
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
