package origin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mpsurf/mpsurf/e2e/corpus"
	"github.com/mpsurf/mpsurf/native-host/cli"
)

// listFlag takes comma-separated values and may be repeated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// DefaultPaths names the testbed's client interfaces by their addresses.
const DefaultPaths = "10.200.1.2=wlan0,10.200.2.2=wwan0"

func parsePaths(s string) (map[netip.Addr]string, error) {
	m := map[netip.Addr]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		a, name, ok := strings.Cut(kv, "=")
		addr, err := netip.ParseAddr(a)
		if !ok || err != nil || name == "" {
			return nil, fmt.Errorf("--paths: %q is not ADDRESS=NAME", kv)
		}
		m[addr] = name
	}
	return m, nil
}

const usage = `usage:
  origin [serve] [flags]            serve the corpus (origin serve --help lists the flags)
  origin corpus --list [--json] [--objects] [--seed N] [--corpus FILE]...
                                    print the corpus's manifest
  origin files [--json]             the large files under /dl/ (downloads grid), with sizes and SHA-256

--corpus FILE adds the sites of a corpus file (JSON; see e2e/corpus/mixed.json and SiteFile in e2e/corpus).
`

// Subcommand is one of the origin command's subcommands; Subcommands is the table Main dispatches on (the tests
// run every entry with --help and a bad flag).
type Subcommand struct {
	Name string
	Run  func(args []string, stdout, stderr io.Writer) int
}

// Subcommands lists the origin command's subcommands; arguments without one serve.
func Subcommands() []Subcommand {
	return []Subcommand{{"serve", serveMain}, {"corpus", corpusMain}, {"files", filesMain}, {"help", helpMain}}
}

func helpMain(args []string, stdout, stderr io.Writer) int {
	fs := cli.Flags("origin help")
	if err := cli.ParseNone(fs, args); err != nil {
		return cli.Exit(err, fs.Name(), "usage: origin help\n", stdout, stderr)
	}
	fmt.Fprint(stdout, usage)
	return 0
}

// loadCorpusFiles reads every --corpus file.
func loadCorpusFiles(paths []string) ([]*corpus.SiteFile, error) {
	var out []*corpus.SiteFile
	for _, p := range paths {
		f, err := corpus.LoadSiteFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// Main runs the origin command and returns its exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if cli.IsHelp(args[0]) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		for _, c := range Subcommands() {
			if c.Name == args[0] {
				return c.Run(args[1:], stdout, stderr)
			}
		}
	}
	return serveMain(args, stdout, stderr)
}

func corpusMain(args []string, stdout, stderr io.Writer) int {
	fs := cli.Flags("origin corpus")
	list := fs.Bool("list", false, "print the manifest")
	asJSON := fs.Bool("json", false, "as JSON")
	objects := fs.Bool("objects", false, "with every page's objects (JSON only)")
	seed := fs.Uint64("seed", 1, "corpus seed")
	var files listFlag
	fs.Var(&files, "corpus", "corpus file (JSON) whose sites are added (repeatable)")
	err := cli.ParseNone(fs, args)
	if err == nil && !*list {
		err = cli.Usagef("--list is required")
	}
	if err != nil {
		return cli.Exit(err, fs.Name(), cli.Described(fs, "usage: origin corpus --list [--json] [--objects] [--seed N] [--corpus FILE]...\n"), stdout, stderr)
	}
	extra, err := loadCorpusFiles(files)
	if err != nil {
		fmt.Fprintln(stderr, "origin:", err)
		return 1
	}
	c, err := corpus.New(*seed, extra...)
	if err != nil {
		fmt.Fprintln(stderr, "origin:", err)
		return 1
	}
	m := c.Manifest(*objects)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		err = enc.Encode(m)
	} else {
		err = m.WriteTable(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "origin:", err)
		return 1
	}
	return 0
}

func serveMain(args []string, stdout, stderr io.Writer) int {
	fs := cli.Flags("origin serve")
	var hosts, names listFlag
	listen := fs.String("listen", ":443", "HTTPS address offering h2 and http/1.1")
	listenH1 := fs.String("listen-h1", ":8443", "HTTPS address offering http/1.1 only (\"\" = off)")
	listenHTTP := fs.String("listen-http", "", "plain HTTP address (\"\" = off)")
	listenTCP := fs.String("listen-tcp", "", "HTTPS address on plain TCP even with --mptcp, h2 and http/1.1 (\"\" = off)")
	logPath := fs.String("log", "", "JSONL log file, appended to (\"\" = no log)")
	cc := fs.String("cc", "", "TCP congestion control of every connection, e.g. cubic (\"\" = the namespace's default)")
	seed := fs.Uint64("seed", 1, "corpus seed")
	fs.Var(&hosts, "host", "IP address(es) for the certificate (comma-separated, repeatable)")
	fs.Var(&names, "name", "DNS name(s) for the certificate (comma-separated, repeatable; default origin.test)")
	third := fs.String("third-party", "third.origin.test", "host name of the second origin (\"\" = all objects first-party)")
	pathsFlag := fs.String("paths", DefaultPaths, "client interface names by subflow remote address, ADDR=NAME,...")
	certOut := fs.String("cert-out", "", "write the certificate PEM(s) here (first-party, then the second origin's)")
	mptcp := fs.Bool("mptcp", true, "listen with MPTCP")
	var files listFlag
	fs.Var(&files, "corpus", "corpus file (JSON) whose sites are served beside the built-in pages (repeatable)")
	if err := cli.ParseNone(fs, args); err != nil {
		return cli.Exit(err, fs.Name(), cli.Described(fs, "usage: origin [serve] [flags]\n"), stdout, stderr)
	}
	for _, h := range hosts {
		if _, err := netip.ParseAddr(h); err != nil {
			fmt.Fprintf(stderr, "origin: --host %q is not an IP address\n", h)
			return 2
		}
	}
	if len(names) == 0 {
		names = listFlag{"origin.test"}
	}
	paths, err := parsePaths(*pathsFlag)
	if err != nil {
		fmt.Fprintln(stderr, "origin:", err)
		return 2
	}
	extra, err := loadCorpusFiles(files)
	if err != nil {
		fmt.Fprintln(stderr, "origin:", err)
		return 1
	}
	cfg := Config{
		CC:     *cc,
		Listen: *listen, ListenH1: *listenH1, ListenHTTP: *listenHTTP, ListenTCP: *listenTCP,
		Names:      append(append([]string{"localhost", "127.0.0.1", "::1"}, names...), hosts...),
		ThirdParty: *third, Paths: paths, Seed: *seed, Corpus: extra, MPTCP: *mptcp, ErrorLog: stderr,
	}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(stderr, "origin:", err)
			return 1
		}
		defer f.Close()
		cfg.Log = f
	}
	srv, err := New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "origin:", err)
		return 1
	}
	if *certOut != "" {
		pems := srv.Cert.PEM
		if srv.Third != nil {
			pems = append(append([]byte{}, pems...), srv.Third.PEM...)
		}
		if err := os.WriteFile(*certOut, pems, 0o644); err != nil {
			fmt.Fprintln(stderr, "origin:", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start, err := srv.Start(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "origin:", err)
		return 1
	}
	// One JSON line on stdout says the server is ready and gives the SPKI hash.
	json.NewEncoder(stdout).Encode(start)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintln(stderr, "origin:", err)
		return 1
	}
	return 0
}
