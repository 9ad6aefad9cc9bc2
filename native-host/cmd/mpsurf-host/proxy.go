package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/native-host/carry"
	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/netcost"
	"github.com/mpsurf/mpsurf/native-host/relay"
)

// networkInfo is the host's source of the status's network facts: the cellular interface's cost, read over D-Bus.
func networkInfo(m *decide.Meter, r *netcost.Reader) func() host.NetworkInfo {
	return func() host.NetworkInfo {
		in := r.Read(m.Status().CellInterface)
		return host.NetworkInfo{Metered: host.MeteredName(in.Metered), Roaming: in.Roaming, Source: in.Source, Detail: in.Detail}
	}
}

const (
	proxySetUsage = `mpsurf-host proxy set --server HOST:PORT --user NAME --password-stdin [--pin BASE64]
        save the MPTCP proxy the relay uses (README "Use it on the real web"): settings in
        $XDG_CONFIG_HOME/mpsurf/proxy.json (mode 600) or MPSURF_PROXY_CONFIG
`
	proxyTestUsage = `mpsurf-host proxy test [--target HOST:443] [--wait DURATION] [--json]
        connect through the saved proxy and report what worked
`
	proxyShowUsage = `mpsurf-host proxy show [--json]
        print the saved proxy settings
`
)

// proxyWord runs proxy's subcommand word with the arguments after it.
func proxyWord(word string) func([]string, io.Reader, io.Writer, io.Writer) int {
	return func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		return proxyCmd(append([]string{word}, args...), stdin, stdout, stderr)
	}
}

// proxyCmd: mpsurf-host proxy set|test|show. The same settings file and checks as the options page's.
func proxyCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return badUsage(stderr, "proxy: want set, test or show")
	}
	fs := newFlags("proxy " + args[0])
	asJSON := fs.Bool("json", false, "")
	switch args[0] {
	case "show":
		if err := cli.ParseNone(fs, args[1:]); err != nil {
			return badUsage(stderr, "proxy show: %v", err)
		}
		e, _ := readEnv(os.Getenv) // the settings file's place is all it reads
		file := e.ProxyFile
		up, err := carry.ReadProxyConfig(file)
		if err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: proxy: %v\n", err)
			return exitFailed
		}
		out := map[string]string{"file": file, "server": up.Addr, "user": up.User, "pin": up.Pin}
		if *asJSON {
			json.NewEncoder(stdout).Encode(out)
		} else {
			fmt.Fprintf(stdout, "proxy %s, user %s, pin %q (settings in %s)\n", up.Addr, up.User, up.Pin, file)
		}
		return exitOK
	case "set":
		var up relay.Upstream
		fs.StringVar(&up.Addr, "server", "", "")
		fs.StringVar(&up.User, "user", "", "")
		fs.StringVar(&up.Pin, "pin", "", "")
		pwStdin := fs.Bool("password-stdin", false, "")
		if err := cli.ParseNone(fs, args[1:]); err != nil {
			return badUsage(stderr, "proxy set: %v", err)
		}
		if !*pwStdin {
			return badUsage(stderr, "proxy set: want --server HOST:PORT --user NAME --password-stdin [--pin BASE64]")
		}
		b, _ := io.ReadAll(io.LimitReader(stdin, 4096))
		up.Password = strings.TrimRight(string(b), "\r\n")
		if err := up.Check(); err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: proxy set: %v\n", err)
			return exitUsage
		}
		e, _ := readEnv(os.Getenv) // the settings file's place is all it reads
		file := e.ProxyFile
		if err := carry.WriteProxyConfig(file, up); err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: proxy set: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "saved %s (mode 600); the next host the browser starts uses it\n", file)
		return exitOK
	case "test":
		target := fs.String("target", "", "")
		wait := fs.Duration("wait", 2*time.Second, "")
		if err := cli.ParseNone(fs, args[1:]); err != nil {
			return badUsage(stderr, "proxy test: %v", err)
		}
		if *target != "" {
			h, ok := relay.Target(*target)
			if !ok {
				return badUsage(stderr, "proxy test: --target %q: want HOST:443", *target)
			}
			*target = h + ":443"
		}
		e, _ := readEnv(os.Getenv) // the settings file and the interfaces' kinds are all it reads
		up, err := carry.ReadProxyConfig(e.ProxyFile)
		if err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: proxy test: %v\n", err)
			return exitFailed
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res := relay.Probe(ctx, relay.Config{Upstream: up, Cellular: cellularFromSysfs(e)}, *target, *wait)
		if *asJSON {
			json.NewEncoder(stdout).Encode(res)
		} else {
			fmt.Fprintf(stdout, "%s: %s\n  stage %s, MPTCP %v, subflows %d (cellular %v), software %q, status %d, %d ms\n",
				map[bool]string{true: "ok", false: "FAILED"}[res.OK], res.Detail, res.Stage, res.MPTCP, res.Subflows, res.CellSubflow,
				res.Software, res.Status, res.ElapsedMS)
		}
		if !res.OK {
			return exitFailed
		}
		return exitOK
	}
	return badUsage(stderr, "proxy: unknown subcommand %q (set, test, show)", args[0])
}

// cellularFromSysfs classifies interfaces once (MPSURF_NAMES and sysfs, as the serving host does).
func cellularFromSysfs(e env) func(netip.Addr) bool {
	p, _, _ := model.Open("")
	quiet := slog.New(slog.DiscardHandler)
	m := decide.NewMeterFrom(e.meterConfig(quiet), p, nil, quiet)
	m.Sample(100 * time.Millisecond)
	return m.IsCellular
}
