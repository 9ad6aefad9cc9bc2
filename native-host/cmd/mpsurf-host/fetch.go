package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/mph2"
)

// fetchCmd downloads one URL with the MP-H2 scheduler, as the host does for the browser: the downloads grid and
// people use it directly.
func fetchCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("fetch")
	out := fs.String("o", "", "")
	via := fs.String("via", "", "")
	mptcp := fs.Bool("mptcp", false, "")
	http1 := fs.Bool("http1", false, "")
	caFile := fs.String("ca", "", "")
	resolve := fs.String("resolve", "", "")
	size := fs.Int64("size", 0, "")
	resume := fs.Bool("resume", false, "")
	secCap := fs.Int64("secondary-cap", 0, "")
	asJSON := fs.Bool("json", false, "")
	verbose := fs.Bool("v", false, "")
	// Flags may follow the URL.
	pos, err := cli.ParseMixed(fs, args)
	if err != nil {
		return badUsage(stderr, "fetch: %v", err)
	}
	if len(pos) > 1 {
		return badUsage(stderr, "fetch: more than one URL")
	}
	if len(pos) == 0 || *out == "" {
		return badUsage(stderr, "fetch: a URL and -o FILE are required")
	}
	url := pos[0]
	if u, err := neturl.Parse(url); err != nil || u.Scheme != "https" || u.Host == "" {
		return badUsage(stderr, "fetch: %.200q is not an https URL (want https://HOST/PATH)", url)
	}
	if err := needPath("--ca", *caFile, false); err != nil {
		return badUsage(stderr, "fetch: %v", err)
	}
	paths, err := viaPaths(*via, *mptcp)
	if err != nil {
		return badUsage(stderr, "fetch: --via: %v", err)
	}
	res, err := parseResolve(*resolve)
	if err != nil {
		return badUsage(stderr, "fetch: --resolve: %v", err)
	}
	var extra []byte
	if *caFile != "" {
		if extra, err = os.ReadFile(*caFile); err != nil {
			fmt.Fprintf(stderr, "mpsurf-host: fetch: %v\n", err)
			return exitFailed
		}
	}
	tlsConf, err := mph2.TLSWithRoots(extra)
	if err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: fetch: --ca: %v\n", err)
		return exitFailed
	}
	file, err := filepath.Abs(*out)
	if err != nil {
		return badUsage(stderr, "fetch: -o: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	o := mph2.Options{
		URL: url, Out: file, Paths: paths, Size: *size, Resume: *resume, SecondaryCap: *secCap,
		TLS: tlsConf, Resolve: res, HTTP1: *http1, ProgressEvery: time.Second, Log: slog.New(slog.DiscardHandler),
		Progress: func(p mph2.Progress) {
			var parts []string
			for _, ps := range p.Paths {
				parts = append(parts, fmt.Sprintf("%s %.1f MB", ps.Name, float64(ps.Bytes)/1e6))
			}
			fmt.Fprintf(stderr, "%.1f of %.1f MB (%s)\n", float64(p.Received)/1e6, float64(p.Size)/1e6, strings.Join(parts, ", "))
		},
	}
	if *verbose {
		o.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	result, err := mph2.Fetch(ctx, o)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		if err != nil {
			enc.Encode(struct {
				mph2.Result
				Error string `json:"error"`
			}{result, err.Error()})
		} else {
			enc.Encode(result)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: fetch: %v\n", err)
		if errors.Is(err, mph2.ErrStopped) {
			fmt.Fprintf(stderr, "mpsurf-host: fetch: resume with --resume\n")
		}
		return exitFailed
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "%s: %s in %.2f s, %d requests, %d range moves\n", result.File, model.HumanBytes(float64(result.Size)), result.ElapsedMS/1000, result.Requests, result.Moves)
		for _, p := range result.Paths {
			fmt.Fprintf(stdout, "  %-8s %-8s %10s  %d requests  %s\n", p.Name, p.Proto, model.HumanBytes(float64(p.Bytes)), p.Requests, p.Error)
		}
		if result.Fallback != "" {
			fmt.Fprintf(stdout, "  single path: %s\n", result.Fallback)
		}
		if result.Digest != "" {
			fmt.Fprintf(stdout, "  checked against %s\n", result.Digest)
		}
	}
	return exitOK
}

// viaPaths turns "wlan0,wwan0" into paths bound to those interfaces and their first address; "" is one path on
// the default route. MPTCP connections are left unbound: the kernel's path manager places their subflows.
func viaPaths(via string, mptcp bool) ([]mph2.Path, error) {
	if via == "" {
		return []mph2.Path{{Name: "default", MPTCP: mptcp}}, nil
	}
	if mptcp {
		return nil, errors.New("--mptcp takes no --via: the kernel chooses the subflows' interfaces")
	}
	var out []mph2.Path
	for _, name := range strings.Split(via, ",") {
		ifc, err := net.InterfaceByName(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		p := mph2.Path{Name: ifc.Name, Interface: ifc.Name}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if pfx, err := netip.ParsePrefix(a.String()); err == nil && pfx.Addr().Is4() {
				p.Addr = pfx.Addr()
				break
			}
		}
		out = append(out, p)
	}
	if len(out) > 2 {
		return nil, errors.New("at most two interfaces")
	}
	return out, nil
}

// parseResolve reads "host=addr[|addr],host=addr".
func parseResolve(s string) (map[string][]netip.Addr, error) {
	out := map[string][]netip.Addr{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		host, addrs, ok := strings.Cut(kv, "=")
		if !ok || host == "" {
			return nil, fmt.Errorf("%q is not HOST=ADDR", kv)
		}
		for _, a := range strings.Split(addrs, "|") {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				return nil, err
			}
			out[strings.ToLower(host)] = append(out[strings.ToLower(host)], ip)
		}
	}
	return out, nil
}
