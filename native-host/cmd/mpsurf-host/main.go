// Command mpsurf-host is MPSurf's native messaging host. Chromium starts it with the caller origin as its first
// argument, Firefox with its manifest's path and the add-on's ID, and each talks to it over stdin and stdout
// (native-host/PROTOCOL.md). The same binary installs its manifest
// and offers a few tools for people: status, and frame/unframe for a one-line smoke test:
//
//	mpsurf-host frame '{"v":1,"id":1,"type":"status"}' |
//	  mpsurf-host chrome-extension://ajmpgeaaaphkhppijbmcemhafkpapbmh/ | mpsurf-host unframe
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/install"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/wire"
)

// Exit statuses.
const (
	exitOK      = cli.OK
	exitFailed  = cli.Failed
	exitUsage   = cli.Usage
	exitRefused = 3 // the caller is not the MPSurf extension or add-on (PROTOCOL.md §1)
)

// command is one subcommand: the words that name it ("log export"), its usage (the synopsis, then lines
// indented by eight spaces) and what runs it with the arguments after its words. run's table is this list, the
// top-level usage is made from it, and the tests run every entry with --help and a bad flag.
type command struct {
	name  string
	usage string
	run   func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{serveName, serveUsage, nil}, // run picks this one by protocol.CheckCaller
		{"install", installUsage, func(a []string, _ io.Reader, o, e io.Writer) int { return installCmd("install", a, o, e) }},
		{"uninstall", uninstallUsage, func(a []string, _ io.Reader, o, e io.Writer) int { return installCmd("uninstall", a, o, e) }},
		{"status", statusUsage, func(a []string, _ io.Reader, o, e io.Writer) int { return statusCmd(a, o, e) }},
		{"doctor", doctorUsage, doctorCmd},
		{"frame", frameUsage, frameCmd},
		{"unframe", unframeUsage, unframeCmd},
		{"decide", decideUsage, func(a []string, _ io.Reader, o, e io.Writer) int { return decideCmd(a, o, e) }},
		{"log export", logUsage, func(a []string, _ io.Reader, o, e io.Writer) int { return logCmd(a, o, e) }},
		{"replay", replayUsage, func(a []string, _ io.Reader, o, e io.Writer) int { return replayCmd(a, o, e) }},
		{"proxy set", proxySetUsage, proxyWord("set")},
		{"proxy test", proxyTestUsage, proxyWord("test")},
		{"proxy show", proxyShowUsage, proxyWord("show")},
		{"fetch", fetchUsage, func(a []string, _ io.Reader, o, e io.Writer) int { return fetchCmd(a, o, e) }},
		{"version", versionUsage, versionCmd},
		{"help", helpUsage, helpCmd},
	}
}

// serveName is how the serving host's usage is found ("help chrome-extension://ID/").
const serveName = "chrome-extension://ID/"

const (
	serveUsage = `mpsurf-host chrome-extension://ID/ [--models DIR | --policy FILE] [--log FILE]
mpsurf-host MANIFEST.json extension@mpsurf [--models DIR | --policy FILE] [--log FILE]
        serve the extension over stdin/stdout: Chromium starts it the first way, Firefox the second (with the
        host manifest's path and the add-on's ID); any other caller is refused with exit status 3
`
	installUsage = `mpsurf-host install [--browser chromium|chrome|firefox] [--user-data-dir DIR] [--system [--root DIR]]
                    [--path BINARY]
        write the native messaging manifest org.mpsurf.host.json for the browser: per user (Firefox:
        ~/.mozilla/native-messaging-hosts/), in a Chromium profile (--user-data-dir DIR: a browser started
        with it reads it from DIR only, and install names any running browser that does), or for every user
        of the machine (--system, as root: the browser's system-wide directory); --root DIR writes the
        system-wide manifest under DIR (a package build's staging tree), --path then naming the binary's
        path on the target
`
	uninstallUsage = `mpsurf-host uninstall [--browser chromium|chrome|firefox] [--user-data-dir DIR] [--system [--root DIR]]
        remove that manifest
`
	statusUsage = `mpsurf-host status [--json] [--models DIR | --policy FILE] [--names IF=KIND,...] [--probe-target HOST:PORT]
                   [--sample DURATION] [--cell lte|3g] [--radio-model FILE] [--every DURATION]
        print the host version, protocol, the policy it would load, and the paths and RRC state measured
        while sampling for DURATION (1.5s); --radio-model reads the RRC timers from FILE instead of
        power-lte.json or power-3g.json; --every (with --json) also prints one {"t_ms","paths","rrc"} line
        that often while sampling
`
	frameUsage = `mpsurf-host frame [--raw] [JSON ...]
        write each JSON argument (or each line of stdin) as one frame to stdout
`
	unframeUsage = `mpsurf-host unframe
        read frames from stdin and print each payload as one line
`
	decideUsage = `mpsurf-host decide --origin URL [--path /a/b] [--proto h2] [--size BYTES[,BYTES...]] [--paths FILE]
                   [--rrc STATE] [--rrc-tech lte] [--rrc-since-ms N] [--rrc-spread STATE:P,...] [--prefs FILE]
                   [--models DIR] [--json]
        evaluate the cost-benefit model offline, with the native decide's code; --size lists loads of the
        page seen before (none: never seen); --paths FILE is a JSON array of paths (status --json prints
        them): the first wifi one is the primary, the first cellular one the secondary; a path left out, or
        without numbers, is taken from the model's priors; --rrc-spread weighs each radio state by its
        probability (summing to 1), as a host does that is unsure of the state (PROTOCOL.md RRC spread)
`
	fetchUsage = `mpsurf-host fetch URL -o FILE [--via IF,IF | --mptcp] [--http1] [--ca PEM] [--resolve HOST=ADDR,...] [--size N]
                  [--resume] [--secondary-cap BYTES] [--json] [-v]
        download URL over the interfaces given at once (MP-H2: HTTP range requests per path), or over one
        MPTCP connection (--mptcp); the file is written as FILE.mpsurf-part until complete and checked
`
	versionUsage = `mpsurf-host version
        print the host's version and protocol
`
	helpUsage = `mpsurf-host help [COMMAND]
        this text, or one command's (as COMMAND --help)
`
)

// usageNotes follow the commands in the top-level usage.
const usageNotes = `
A serving host measures its paths (MPSURF_NAMES=wlan0=wifi,wwan0=cellular overrides interface kinds,
MPSURF_PROBE_TARGET=HOST:PORT enables the active RTT probe, MPSURF_CELL=lte|3g, MPSURF_NO_MEASURE=1 turns it
off) and keeps its decision log in MPSURF_DB (default ~/.local/share/mpsurf/mpsurf.db).
The model (model.json and the files it names) and the network-wide policy (baseline.json) come from
--models DIR, else MPSURF_MODELS, else the copy of policy-models/ built into the binary, for serve, status,
decide and replay alike. --policy FILE (or MPSURF_POLICY) instead fixes every decision to that policy file.
MPSURF_LOG=FILE logs to FILE instead of stderr. SIGHUP re-reads the policy file.
`

// usage is the top-level usage: every command's, then the notes.
func usage() string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commands() {
		for _, line := range strings.SplitAfter(c.usage, "\n") {
			if line != "" && line[0] != ' ' {
				b.WriteString("  ") // a synopsis; descriptions are indented already
			}
			b.WriteString(line)
		}
	}
	b.WriteString(usageNotes)
	return b.String()
}

// commandUsage is one command's usage, or that of every command under a group's first word ("proxy").
func commandUsage(words string) string {
	var b strings.Builder
	for _, c := range commands() {
		if c.name == words || strings.HasPrefix(c.name, words+" ") {
			if b.Len() == 0 {
				b.WriteString("usage: " + c.usage)
			} else {
				b.WriteString("       " + c.usage)
			}
		}
	}
	return b.String()
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitUsage
	}
	caller, rest, err := protocol.CheckCaller(args)
	switch {
	case err == nil:
		return serve(caller, rest, stdout, stderr)
	case !errors.Is(err, protocol.ErrNotCaller):
		fmt.Fprintf(stderr, "mpsurf-host: %v\n", err)
		return exitRefused
	}
	if cli.IsHelp(args[0]) {
		return helpCmd(args[1:], stdin, stdout, stderr)
	}
	group := false
	for _, c := range commands() {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) && c.run != nil {
			rest := args[len(words):]
			if cli.WantsHelp(rest) {
				fmt.Fprint(stdout, commandUsage(c.name))
				return exitOK
			}
			return c.run(rest, stdin, stdout, stderr)
		}
		group = group || (len(words) > 1 && words[0] == args[0])
	}
	if group {
		if cli.WantsHelp(args[1:]) {
			fmt.Fprint(stdout, commandUsage(args[0]))
			return exitOK
		}
		var subs []string
		for _, c := range commands() {
			if w := strings.Fields(c.name); w[0] == args[0] {
				subs = append(subs, w[1])
			}
		}
		if len(args) == 1 {
			return badUsage(stderr, "%s: want one of %s", args[0], strings.Join(subs, ", "))
		}
		return badUsage(stderr, "%s: unknown subcommand %.100q: want one of %s", args[0], args[1], strings.Join(subs, ", "))
	}
	return badUsage(stderr, "unknown command %.100q", args[0])
}

func versionCmd(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if err := cli.ParseNone(newFlags("version"), args); err != nil {
		return badUsage(stderr, "version: %v", err)
	}
	fmt.Fprintf(stdout, "%s %s (protocol %d)\n", protocol.HostName, host.Version, protocol.Version)
	return exitOK
}

func helpCmd(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("help")
	if err := cli.Parse(fs, args); err != nil {
		return badUsage(stderr, "help: %v", err)
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stdout, usage())
		return exitOK
	}
	u := commandUsage(strings.Join(fs.Args(), " "))
	if u == "" {
		return badUsage(stderr, "help: unknown command %.100q", strings.Join(fs.Args(), " "))
	}
	fmt.Fprint(stdout, u)
	return exitOK
}

// newFlags returns a FlagSet that reports nothing itself: the command reports errors in one line.
func newFlags(name string) *flag.FlagSet {
	return cli.Flags("mpsurf-host " + name)
}

// needPath checks a file or directory named on the command line before the command uses it: one that does not
// exist, or is a file where a directory is wanted (or the other way round), is a command-line mistake, reported
// in one line with exit status 2 like a bad flag value, never a failure of the command (1). "" passes: the
// argument was not given.
func needPath(flagName, p string, dir bool) error {
	if p == "" {
		return nil
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		what := "file"
		if dir {
			what = "directory"
		}
		return cli.Usagef("%s %s: no such %s", flagName, p, what)
	case err != nil:
		return cli.Usagef("%s %s: %v", flagName, p, err)
	case dir && !fi.IsDir():
		return cli.Usagef("%s %s: not a directory", flagName, p)
	case !dir && fi.IsDir():
		return cli.Usagef("%s %s: a directory, not a file", flagName, p)
	}
	return nil
}

// badUsage reports a command-line mistake in one line and returns exit status 2.
func badUsage(stderr io.Writer, format string, args ...any) int {
	msg := cli.Usagef(format, args...).Error()
	fmt.Fprintf(stderr, "mpsurf-host: %s (--help shows usage)\n", msg)
	return exitUsage
}

func serve(caller protocol.Caller, args []string, stdout, stderr io.Writer) int {
	e, envErr := readEnv(os.Getenv)
	fs := newFlags("serve")
	models := fs.String("models", "", "")
	policyFile := fs.String("policy", "", "")
	logFile := fs.String("log", e.Log, "")
	if err := cli.ParseNone(fs, args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, commandUsage(serveName))
		return exitOK
	} else if err != nil {
		return badUsage(stderr, "serve: %v", err)
	}

	logOut := stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: log file: %v\n", err)
			return exitFailed
		}
		defer f.Close()
		logOut = f
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	if envErr != nil {
		log.Error("environment", "err", envErr)
		return exitFailed
	}

	src, err := e.policySource(*models, *policyFile)
	if err != nil {
		log.Error("policy source", "err", err)
		return exitFailed
	}

	// A write to a port Chrome closed must be an error the loop sees, not a SIGPIPE that kills the host unlogged.
	signal.Ignore(syscall.SIGPIPE)
	hupSig := make(chan os.Signal, 1)
	signal.Notify(hupSig, syscall.SIGHUP)
	hup := make(chan struct{})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		for range hupSig {
			select {
			case hup <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()

	store := policy.NewStore(src)
	attrs := []any{"version", host.Version, "pid", os.Getpid(), "browser", caller.Browser, "policy_source", src.String()}
	if snap, err := store.Snapshot(); err != nil {
		log.Error("started without a policy; requests get policy_unavailable until the file loads",
			append(attrs, "err", err)...)
	} else {
		log.Info("started", append(attrs, "revision", snap.Policy.Revision, "model", snap.Policy.Model.ID)...)
	}

	host.SetGC(os.Getenv)
	srv, stopPipeline := pipeline(ctx, e, *models, src, store, log)
	err = srv.Serve(ctx, host.Config{In: os.Stdin, Out: os.Stdout, Log: log, Hup: hup})
	stopPipeline()
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		log.Info("stopped by a signal")
		return exitOK
	}
	log.Error("stopping", "err", err)
	return exitFailed
}

func installCmd(cmd string, args []string, stdout, stderr io.Writer) int {
	fs := newFlags(cmd)
	var o install.Options
	fs.StringVar(&o.Browser, "browser", "chromium", "")
	fs.StringVar(&o.UserDataDir, "user-data-dir", "", "")
	fs.BoolVar(&o.System, "system", false, "")
	fs.StringVar(&o.Root, "root", "", "")
	if cmd == "install" {
		fs.StringVar(&o.Path, "path", "", "")
	}
	if err := cli.ParseNone(fs, args); err != nil {
		return badUsage(stderr, "%s: %v", cmd, err)
	}
	if o.Root != "" && !o.System {
		return badUsage(stderr, "%s: --root is for --system", cmd)
	}
	e, _ := readEnv(os.Getenv) // the home directory is all it reads
	o.Home = e.Home
	if cmd == "install" {
		file, m, err := install.Install(o)
		if err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: install: %v\n", err)
			return exitFailed
		}
		if len(m.AllowedExtensions) > 0 {
			fmt.Fprintf(stdout, "installed %s\n  host %s\n  allowed add-on %s\n", file, m.Path, m.AllowedExtensions[0])
		} else {
			fmt.Fprintf(stdout, "installed %s\n  host %s\n  allowed origin %s\n", file, m.Path, m.AllowedOrigins[0])
		}
		if o.UserDataDir == "" && !o.System && o.Browser != "firefox" {
			// A browser started with --user-data-dir reads its manifests from there only: say so, with the
			// command that reaches it, rather than leave the extension saying "not installed".
			for _, dir := range install.RunningProfiles("/proc") {
				fmt.Fprintf(stdout, "note: a running browser uses --user-data-dir %s, which this manifest does not reach; for it run:\n  mpsurf-host install --user-data-dir %s\n", dir, dir)
			}
		}
		return exitOK
	}
	file, removed, err := install.Uninstall(o)
	if err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: uninstall: %v\n", err)
		return exitFailed
	}
	if removed {
		fmt.Fprintf(stdout, "removed %s\n", file)
	} else {
		fmt.Fprintf(stdout, "no manifest at %s; nothing to remove\n", file)
	}
	return exitOK
}

func frameCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("frame")
	raw := fs.Bool("raw", false, "")
	if err := cli.Parse(fs, args); err != nil {
		return badUsage(stderr, "frame: %v", err)
	}
	payloads := fs.Args()
	if len(payloads) == 0 {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 0, 64<<10), wire.MaxOut)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				payloads = append(payloads, line)
			}
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: frame: reading stdin: %v\n", err)
			return exitFailed
		}
	}
	bw := bufio.NewWriter(stdout)
	w := wire.NewWriter(bw, wire.MaxOut)
	for i, p := range payloads {
		if !*raw && !json.Valid([]byte(p)) {
			fmt.Fprintf(stderr, "mpsurf-host: frame: message %d is not valid JSON (use --raw to frame it anyway)\n", i+1)
			return exitFailed
		}
		if err := w.Write([]byte(p)); err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: frame: message %d: %v\n", i+1, err)
			return exitFailed
		}
	}
	if err := bw.Flush(); err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: frame: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func unframeCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if err := cli.ParseNone(newFlags("unframe"), args); err != nil {
		return badUsage(stderr, "unframe: %v", err)
	}
	r := wire.NewReader(stdin, wire.MaxOut)
	bw := bufio.NewWriter(stdout)
	defer bw.Flush()
	for {
		p, err := r.Read()
		switch {
		case err == nil:
			bw.Write(p)
			bw.WriteByte('\n')
			// A line per frame as it arrives, so that pushes show up while the host runs.
			if err := bw.Flush(); err != nil {
				fmt.Fprintf(stderr, "mpsurf-host: unframe: %v\n", err)
				return exitFailed
			}
		case err == io.EOF:
			return exitOK
		default:
			bw.Flush()
			fmt.Fprintf(stderr, "mpsurf-host: unframe: %v\n", err)
			return exitFailed
		}
	}
}
