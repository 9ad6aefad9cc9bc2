//go:build linux

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/e2e/profiles"
	"github.com/mpsurf/mpsurf/e2e/topo"
	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/netns"
)

// command is one subcommand: its name, its usage (the synopsis, then lines indented by eight spaces) and what runs
// it. main's dispatch is this table, the top-level usage is made from it, and the tests run every entry with
// --help and a bad flag.
type command struct {
	name  string
	usage string
	run   func(args []string, stdout io.Writer) (status int, err error)
}

// noStatus adapts a command whose exit status is its error's.
func noStatus(f func([]string, io.Writer) error) func([]string, io.Writer) (int, error) {
	return func(args []string, w io.Writer) (int, error) { return 0, f(args, w) }
}

func commands() []command {
	return []command{
		{"up", `up --profile P [--timeline DIR] [--mode M] [--seed N] [--cc ALG] [--proxy] [--exit-with-parent]
        bring the testbed up; "ready" on stdout; runs until SIGINT/SIGTERM; --proxy adds the proxy host
        (PREFIX-proxy, 10.200.4.2)
`, noStatus(func(a []string, _ io.Writer) error { return cmdUp(a) })},
		{"run", `run --profile P [up's flags] -- CMD ARGS...
        up, run CMD with MPS_* variables, down; exits with CMD's status
`, func(a []string, _ io.Writer) (int, error) { return cmdRun(a) }},
		{"down", `down
        stop a running testbed and remove its namespaces (idempotent)
`, noStatus(func(a []string, _ io.Writer) error { return cmdDown(a) })},
		{"mode", `mode sp-wifi|sp-cell|mp
        switch paths between page loads
`, noStatus(func(a []string, _ io.Writer) error { return cmdMode(a) })},
		{"info", `info [--json]
        names and addresses
`, noStatus(cmdInfo)},
		{"counters", `counters [--json]
        client interface byte and packet counters
`, noStatus(cmdCounters)},
		{"stats", `stats
        link emulator counters of the running testbed (JSON)
`, noStatus(func(a []string, w io.Writer) error { return cmdControl("stats", a, w) })},
		{"flush", `flush
        write buffered timeline lines now
`, noStatus(func(a []string, w io.Writer) error { return cmdControl("flush", a, w) })},
		{"rewind", `rewind MS
        put the trace-driven links MS milliseconds into their traces from their next packet on, so that
        loads of different modes meet the same stretch of the trace (Mahimahi starts its trace anew per run),
        and restart every link's random loss for that offset, so that they draw the same losses
`, noStatus(cmdRewind)},
		{"set-profile", `set-profile P
        change link conditions of the running testbed
`, noStatus(func(a []string, w io.Writer) error { return cmdControl("set-profile", a, w) })},
		{"profiles", `profiles
        list built-in profiles
`, noStatus(cmdProfiles)},
		{"accuracy", `accuracy [--json] [--quick]
        measure RTT and goodput against the configuration (its own namespaces, prefix mpsacc by default)
`, noStatus(cmdAccuracy)},
		{"help", `help [COMMAND]
        this text, or one command's
`, noStatus(cmdHelp)},
	}
}

const usageNotes = `
P is a built-in profile id or a JSON file (relative or absolute path). Every command takes --prefix (default
$MPS_PREFIX, else mps).
`

func usage() string {
	var b strings.Builder
	b.WriteString("usage: testbed COMMAND [flags]\n\ncommands:\n")
	for _, c := range commands() {
		b.WriteString("  " + c.usage)
	}
	b.WriteString(usageNotes)
	return b.String()
}

func commandUsage(name string) string {
	for _, c := range commands() {
		if c.name == name {
			return "usage: testbed " + c.usage + usageNotes
		}
	}
	return ""
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return cli.Usage
	}
	if cli.IsHelp(args[0]) {
		fmt.Fprint(stdout, usage())
		return cli.OK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		if cli.WantsHelp(args[1:]) {
			fmt.Fprint(stdout, commandUsage(c.name))
			return cli.OK
		}
		status, err := c.run(args[1:], stdout)
		if err != nil {
			return cli.Exit(err, "testbed "+c.name, "", stdout, stderr)
		}
		return status
	}
	return cli.Exit(cli.Usagef("unknown command %.100q", args[0]), "testbed", "", stdout, stderr)
}

func cmdProfiles(args []string, w io.Writer) error {
	if err := cli.ParseNone(cli.Flags("profiles"), args); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, strings.Join(profiles.Names(), "\n"))
	return err
}

func cmdHelp(args []string, w io.Writer) error {
	fs := cli.Flags("help")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		_, err := fmt.Fprint(w, usage())
		return err
	case 1:
		if u := commandUsage(fs.Arg(0)); u != "" {
			_, err := fmt.Fprint(w, u)
			return err
		}
	}
	return cli.Usagef("help: want one command name")
}

// newFlags returns a flag set with the common --prefix flag.
func newFlags(name string) (*flag.FlagSet, *string) {
	fs := cli.Flags(name)
	def := os.Getenv("MPS_PREFIX")
	if def == "" {
		def = topo.DefaultPrefix
	}
	prefix := fs.String("prefix", def, "namespace name prefix")
	return fs, prefix
}

func cmdDown(args []string) error {
	fs, prefix := newFlags("down")
	if err := cli.ParseNone(fs, args); err != nil {
		return err
	}
	return topo.Down(*prefix, 10*time.Second)
}

func cmdMode(args []string) error {
	fs, prefix := newFlags("mode")
	pos, err := cli.ParseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("mode takes one of sp-wifi, sp-cell, mp")
	}
	m, err := topo.ParseMode(pos[0])
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if err := checkUp(*prefix); err != nil {
		return err
	}
	return topo.SetMode(*prefix, m)
}

// checkUp reports a testbed whose client namespace does not exist.
func checkUp(prefix string) error {
	if _, err := os.Stat(filepath.Join(netns.Dir, topo.NamesFor(prefix).Client)); err != nil {
		return fmt.Errorf("testbed %q is not up", prefix)
	}
	return nil
}

type infoOut struct {
	topo.Info
	ControlSocket string            `json:"control_socket"`
	Profiles      []string          `json:"profiles"`
	Running       bool              `json:"running"`
	Pid           int               `json:"pid,omitempty"`
	Mode          topo.Mode         `json:"mode,omitempty"`
	Profile       string            `json:"profile,omitempty"`
	Env           map[string]string `json:"env"`
}

func cmdInfo(args []string, w io.Writer) error {
	fs, prefix := newFlags("info")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cli.ParseNone(fs, args); err != nil {
		return err
	}
	out := infoOut{Info: topo.Describe(*prefix), ControlSocket: socketPath(*prefix), Profiles: profiles.Names(),
		Env: testbedEnv(*prefix, "", "")}
	out.Running, out.Pid = topo.Running(*prefix)
	if out.Running {
		if m, err := topo.CurrentMode(*prefix); err == nil {
			out.Mode = m
		}
		var st statusReply
		if err := control(*prefix, "status", &st); err == nil {
			out.Profile = st.Profile
			out.Env = testbedEnv(*prefix, st.Profile, st.TimelineDir)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	n := out.Namespaces
	fmt.Fprintf(w, "namespaces: %s %s %s\n", n.Client, n.Router, n.Server)
	for _, ifn := range []string{topo.WiFiIf, topo.CellIf} {
		c := out.Client[ifn]
		fmt.Fprintf(w, "client %s %s/%d via %s (router %s, table %d)\n", ifn, c.Addr, c.PrefixLen, c.Gateway, c.RouterIf, c.Table)
	}
	fmt.Fprintf(w, "server %s %s via %s (router %s)\n", out.Server.If, out.Server.Addr, out.Server.Gateway, out.Server.RouterIf)
	if out.Running {
		fmt.Fprintf(w, "running: pid %d, mode %s, profile %s\n", out.Pid, out.Mode, out.Profile)
	} else {
		fmt.Fprintln(w, "not running")
	}
	return nil
}

func cmdCounters(args []string, w io.Writer) error {
	fs, prefix := newFlags("counters")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cli.ParseNone(fs, args); err != nil {
		return err
	}
	if err := checkUp(*prefix); err != nil {
		return err
	}
	c, err := topo.Counters(*prefix)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(w).Encode(c)
	}
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := c[k]
		fmt.Fprintf(w, "%s rx %d bytes %d packets, tx %d bytes %d packets\n", k, v.RxBytes, v.RxPackets, v.TxBytes, v.TxPackets)
	}
	return nil
}

// testbedEnv describes the testbed to a child command.
func testbedEnv(prefix, profile, timeline string) map[string]string {
	n := topo.NamesFor(prefix)
	self, _ := os.Executable()
	env := map[string]string{
		"MPS_PREFIX":       prefix,
		"MPS_CLIENT_NS":    n.Client,
		"MPS_ROUTER_NS":    n.Router,
		"MPS_SERVER_NS":    n.Server,
		"MPS_SERVER_ADDR":  topo.ServerAddr,
		"MPS_WIFI_IF":      topo.WiFiIf,
		"MPS_WIFI_ADDR":    topo.WiFiAddr,
		"MPS_CELL_IF":      topo.CellIf,
		"MPS_CELL_ADDR":    topo.CellAddr,
		"MPS_TESTBED":      self,
		"MPS_TESTBED_SOCK": socketPath(prefix),
	}
	if profile != "" {
		env["MPS_PROFILE"] = profile
	}
	if timeline != "" {
		env["MPS_TIMELINE_DIR"] = timeline
	}
	return env
}
