// Command actuatorbench measures what a local user can make the privileged helper spend, for any helper binary
// (so that two builds can be compared on one machine in one run): how much its audit log grows under a flood of
// connections from a uid it refuses and under a flood of invalid lines from the allowed uid; how many requests it
// accepts from 40 processes of the allowed uid sharing one session token (and asking status without one); and its
// memory under address churn (set-origin-policy with fresh addresses, as fast as its rate limit lets one client).
// It runs the helper as root in a network namespace of its own and removes everything it made. Needs root.
//
//	go run ./native-host/cmd/actuatorbench --helper dist/mpsurf-actuator [--seconds 10] [--churn-seconds 60]
//	go run ./native-host/cmd/actuatorbench --helper 'OLD/dist/mpsurf-host actuator'    # a build from before the split
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const usage = `usage: actuatorbench --helper 'BINARY [ARGS]' [--seconds N] [--churn-seconds N] [--uid UID]
  BINARY [ARGS] runs the helper (dist/mpsurf-actuator, or 'OLD/mpsurf-host actuator' for an older build).
  --seconds: length of each flood (10); --churn-seconds: length of the address churn (60); --uid: the refused
  uid the flood runs as (a uid without an account, 4099999 by default). Needs root.
`

// Child modes: the binary runs itself as the flooding processes.
const (
	envMode = "ACTUATORBENCH_MODE"
	envSock = "ACTUATORBENCH_SOCK"
	envLine = "ACTUATORBENCH_LINE"
	envMS   = "ACTUATORBENCH_MS"
)

func main() {
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("actuatorbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	helper := fs.String("helper", "", "")
	secs := fs.Int("seconds", 10, "")
	churn := fs.Int("churn-seconds", 60, "")
	uid := fs.Uint("uid", 4099999, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "actuatorbench: %v (--help for usage)\n", err)
		return 2
	}
	if *helper == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "actuatorbench: --helper is required (--help for usage)")
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "actuatorbench: needs root (network namespace, a refused uid)")
		return 1
	}
	b, err := newBench(strings.Fields(*helper), uint32(*uid))
	if err != nil {
		fmt.Fprintln(stderr, "actuatorbench:", err)
		return 1
	}
	defer b.close()
	fmt.Fprintf(stdout, "helper: %s\n", *helper)
	for _, step := range []func() error{
		func() error { return b.auditFlood(stdout, *secs) },
		func() error { return b.sharedToken(stdout, *secs) },
		func() error { return b.addressChurn(stdout, *churn) },
	} {
		if err := step(); err != nil {
			fmt.Fprintln(stderr, "actuatorbench:", err)
			return 1
		}
	}
	return 0
}

type bench struct {
	argv []string
	uid  uint32
	dir  string // 0755, holds a copy of this binary the refused uid can run
	self string
	ns   string
	h    *exec.Cmd
	sock string
}

func newBench(argv []string, uid uint32) (*bench, error) {
	dir, err := os.MkdirTemp("", "actuatorbench-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	b := &bench{argv: argv, uid: uid, dir: dir, ns: fmt.Sprintf("actbench-%d", os.Getpid())}
	exe, err := os.Executable()
	if err == nil {
		var data []byte
		if data, err = os.ReadFile(exe); err == nil {
			b.self = filepath.Join(dir, "actuatorbench")
			err = os.WriteFile(b.self, data, 0o755)
		}
	}
	if err == nil {
		err = exec.Command("ip", "netns", "add", b.ns).Run()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	exec.Command("ip", "-n", b.ns, "link", "set", "lo", "up").Run()
	return b, nil
}

func (b *bench) close() {
	b.stop()
	exec.Command("ip", "netns", "del", b.ns).Run()
	os.RemoveAll(b.dir)
}

// start runs the helper with extra flags, state in a fresh directory, allowing uid 0 only.
func (b *bench) start(extra ...string) (string, error) {
	b.stop()
	state, err := os.MkdirTemp(b.dir, "state-")
	if err != nil {
		return "", err
	}
	b.sock = filepath.Join(b.dir, "a.sock")
	args := append([]string{"netns", "exec", b.ns}, b.argv...)
	args = append(args, append([]string{"--socket", b.sock, "--state-dir", state, "--allow-uid", "0"}, extra...)...)
	b.h = exec.Command("ip", args...)
	if err := b.h.Start(); err != nil {
		return "", err
	}
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("unix", b.sock); err == nil {
			c.Close()
			return state, nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return "", errors.New("the helper did not start listening")
}

func (b *bench) stop() {
	if b.h != nil {
		b.h.Process.Signal(syscall.SIGTERM)
		b.h.Wait()
		b.h = nil
	}
}

func dirBytes(dir string) int64 {
	var n int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "audit") {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

// report is what a child prints.
type report struct {
	Sent int `json:"sent"`
	OK   int `json:"ok"`
}

// children runs n copies of this binary in mode as uid, each for secs seconds, and sums their reports.
func (b *bench) children(mode string, uid uint32, line string, secs, n int) (report, error) {
	var mu sync.Mutex
	var total report
	var first error
	var wg sync.WaitGroup
	for range n {
		cmd := exec.Command(b.self)
		cmd.Env = append(os.Environ(), envMode+"="+mode, envSock+"="+b.sock, envLine+"="+line, fmt.Sprintf("%s=%d", envMS, secs*1000))
		if uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := cmd.Output()
			var r report
			if err == nil {
				err = json.Unmarshal(out, &r)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			total.Sent += r.Sent
			total.OK += r.OK
		}()
	}
	wg.Wait()
	return total, first
}

func (b *bench) auditFlood(w io.Writer, secs int) error {
	state, err := b.start("--backend", "dryrun")
	if err != nil {
		return err
	}
	before := dirBytes(state)
	r, err := b.children("connect", b.uid, `{"verb":"status"}`, secs, 4)
	if err != nil {
		return err
	}
	grew := dirBytes(state) - before
	fmt.Fprintf(w, "audit log, refused uid %d, 4 processes connecting for %d s: %d connections, +%d bytes (%.1f KB/s)\n",
		b.uid, secs, r.Sent, grew, float64(grew)/1e3/float64(secs))
	before = dirBytes(state)
	r, err = b.children("lines", 0, "not a request", secs, 8)
	if err != nil {
		return err
	}
	grew = dirBytes(state) - before
	fmt.Fprintf(w, "audit log, allowed uid 0, 8 connections of invalid lines for %d s: %d lines, +%d bytes (%.1f KB/s)\n",
		secs, r.Sent, grew, float64(grew)/1e3/float64(secs))
	b.stop()
	fmt.Fprintf(w, "audit log after stop: %d bytes in all\n", dirBytes(state))
	return nil
}

// session says hello on its own connection and renews every 500 ms until ctx ends.
func (b *bench) session(ctx context.Context) (string, error) {
	c, err := net.Dial("unix", b.sock)
	if err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	call := func(line string) (map[string]any, error) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			return nil, err
		}
		l, err := r.ReadBytes('\n')
		var m map[string]any
		if err == nil {
			err = json.Unmarshal(l, &m)
		}
		return m, err
	}
	hello, err := call(`{"verb":"hello"}`)
	if err != nil {
		c.Close()
		return "", err
	}
	sess, _ := hello["session"].(string)
	go func() {
		defer c.Close()
		for ctx.Err() == nil {
			call(`{"verb":"lease-renew","session":"` + sess + `","lease_ms":5000}`)
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return sess, nil
}

func (b *bench) sharedToken(w io.Writer, secs int) error {
	if _, err := b.start("--backend", "dryrun"); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess, err := b.session(ctx)
	if err != nil {
		return err
	}
	r, err := b.children("lines", 0, `{"verb":"lease-renew","session":"`+sess+`","lease_ms":5000}`, secs, 40)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "40 processes of the allowed uid sharing the session token, %d s: %d of %d requests accepted (%.0f/s)\n",
		secs, r.OK, r.Sent, float64(r.OK)/float64(secs))
	r, err = b.children("lines", 0, `{"verb":"status"}`, secs, 40)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "40 processes of the allowed uid asking status, %d s: %d of %d accepted (%.0f/s)\n",
		secs, r.OK, r.Sent, float64(r.OK)/float64(secs))
	cancel()
	b.stop()
	return nil
}

func rss(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func (b *bench) addressChurn(w io.Writer, secs int) error {
	if _, err := b.start("--backend", "userspace", "--cell-addr", "10.77.2.1"); err != nil {
		return err
	}
	pid := b.h.Process.Pid // ip netns exec execs the helper in place
	c, err := net.Dial("unix", b.sock)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	call := func(line string) map[string]any {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte(line + "\n"))
		l, _ := r.ReadBytes('\n')
		var m map[string]any
		json.Unmarshal(l, &m)
		return m
	}
	sess, _ := call(`{"verb":"hello"}`)["session"].(string)
	start := rss(pid)
	fmt.Fprintf(w, "address churn, one client at the rate limit for %d s (64 fresh addresses a request): RSS %d kB at start\n", secs, start)
	end := time.Now().Add(time.Duration(secs) * time.Second)
	next := time.Now().Add(10 * time.Second)
	sent, n := 0, 0
	for time.Now().Before(end) {
		addrs := make([]string, 64)
		for k := range addrs {
			addrs[k] = fmt.Sprintf(`"10.%d.%d.%d"`, 100+n>>16&127, n>>8&255, n&255)
			n++
		}
		m := call(`{"verb":"set-origin-policy","session":"` + sess + `","lease_ms":60000,"multipath":true,"addrs":[` + strings.Join(addrs, ",") + `]}`)
		if ok, _ := m["ok"].(bool); ok {
			sent += 64
		} else if m["code"] == "rate_limited" {
			time.Sleep(10 * time.Millisecond)
		}
		if time.Now().After(next) {
			fmt.Fprintf(w, "  %d addresses sent: RSS %d kB\n", sent, rss(pid))
			next = next.Add(10 * time.Second)
		}
	}
	st := call(`{"verb":"status"}`)
	kept := "?"
	if res, ok := st["result"].(map[string]any); ok {
		if be, ok := res["backend"].(map[string]any); ok {
			kept = fmt.Sprint(be["addresses"])
		}
	}
	fmt.Fprintf(w, "address churn: %d addresses sent, %s kept; RSS %d kB at start, %d kB at the end\n", sent, kept, start, rss(pid))
	b.stop()
	return nil
}

// child is one flooding process: "connect" opens a connection per line (reading only the first answer), "lines"
// sends lines on one connection, reconnecting when the helper closes it. It prints a report.
func child(mode string) int {
	sock, line := os.Getenv(envSock), os.Getenv(envLine)
	ms, _ := strconv.Atoi(os.Getenv(envMS))
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	var rep report
	var c net.Conn
	var r *bufio.Reader
	for time.Now().Before(end) {
		if c == nil || mode == "connect" {
			if c != nil {
				c.Close()
			}
			var err error
			if c, err = net.Dial("unix", sock); err != nil {
				c = nil
				time.Sleep(time.Millisecond)
				continue
			}
			c.SetDeadline(end.Add(2 * time.Second))
			r = bufio.NewReader(c)
		}
		c.Write([]byte(line + "\n"))
		l, err := r.ReadBytes('\n')
		rep.Sent++
		if err != nil {
			c.Close()
			c = nil
			continue
		}
		var resp struct {
			OK bool `json:"ok"`
		}
		if json.Unmarshal(l, &resp) == nil && resp.OK {
			rep.OK++
		}
	}
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
	return 0
}
