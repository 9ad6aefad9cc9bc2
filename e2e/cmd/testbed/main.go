//go:build linux

package main

import (
	"encoding/json"
	"errors"
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
)

const usage = `usage: testbed COMMAND [flags]

commands:
  up --profile P [--timeline DIR] [--mode M] [--proxy]
                                               bring the testbed up; "ready" on stdout; runs until SIGINT/SIGTERM;
                                               --proxy adds the proxy host (PREFIX-proxy, 10.200.4.2)
  run --profile P [...] -- CMD ARGS...         up, run CMD with MPS_* variables, down; exits with CMD's status
  down                                         stop a running testbed and remove its namespaces (idempotent)
  mode sp-wifi|sp-cell|mp                      switch paths between page loads
  info [--json]                                names and addresses
  counters [--json]                            client interface byte and packet counters
  stats                                        link emulator counters of the running testbed (JSON)
  flush                                        write buffered timeline lines now
  set-profile P                                change link conditions of the running testbed
  profiles                                     list built-in profiles
  accuracy [--json] [--quick]                  measure RTT and goodput against the configuration

P is a built-in profile id or a JSON file. Every command takes --prefix.
`

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	status := 0
	switch cmd {
	case "up":
		err = cmdUp(args)
	case "run":
		status, err = cmdRun(args)
	case "down":
		err = cmdDown(args)
	case "mode":
		err = cmdMode(args)
	case "info":
		err = cmdInfo(args, os.Stdout)
	case "counters":
		err = cmdCounters(args, os.Stdout)
	case "stats", "flush", "set-profile":
		err = cmdControl(cmd, args, os.Stdout)
	case "profiles":
		fmt.Println(strings.Join(profiles.Names(), "\n"))
	case "accuracy":
		err = cmdAccuracy(args, os.Stdout)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbed %s: %v\n", cmd, err)
		if errors.Is(err, errUsage) {
			fmt.Fprint(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
	os.Exit(status)
}

// newFlags returns a flag set with the common --prefix flag.
func newFlags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def := os.Getenv("MPS_PREFIX")
	if def == "" {
		def = topo.DefaultPrefix
	}
	prefix := fs.String("prefix", def, "namespace name prefix")
	return fs, prefix
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// parseMixed parses flags placed before or after positional arguments
// ("mode mp --prefix x") and returns the positional ones.
func parseMixed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func cmdDown(args []string) error {
	fs, prefix := newFlags("down")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: down takes no arguments", errUsage)
	}
	return topo.Down(*prefix, 10*time.Second)
}

func cmdMode(args []string) error {
	fs, prefix := newFlags("mode")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: mode takes one of sp-wifi, sp-cell, mp", errUsage)
	}
	m, err := topo.ParseMode(pos[0])
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := checkUp(*prefix); err != nil {
		return err
	}
	return topo.SetMode(*prefix, m)
}

// checkUp reports a testbed whose client namespace does not exist.
func checkUp(prefix string) error {
	if _, err := os.Stat(filepath.Join(topo.NetnsDir, topo.NamesFor(prefix).Client)); err != nil {
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
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: info takes only flags", errUsage)
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
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: counters takes only flags", errUsage)
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
