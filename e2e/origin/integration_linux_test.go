package origin

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/e2e/corpus"
)

// The integration test runs this test binary twice more inside network namespaces:
// once as the server (Main), once as an MPTCP client.
func TestMain(m *testing.M) {
	switch os.Getenv("ORIGIN_IT_ROLE") {
	case "server":
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	case "client":
		if err := itClient(os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const (
	itSrvA, itCliA = "10.231.1.1", "10.231.1.2" // first path (the testbed's wlan0)
	itSrvB, itCliB = "10.231.2.1", "10.231.2.2" // second path (wwan0), an MPTCP endpoint
	itPolicy       = "v=1, mp=?1, t1=256, dl=3"
	itPage         = "news-1" // seed 000 Table 1 row 1: 4.45 MB in 189 objects
)

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// itNetns makes a server and a client namespace joined by two veth pairs, with an MPTCP
// "subflow" endpoint on the client's second address.
func itNetns(t *testing.T) (srv, cli string) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := os.Stat("/proc/sys/net/mptcp/enabled"); err != nil {
		t.Skip("kernel without MPTCP (no /proc/sys/net/mptcp)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 'ip' not installed")
	}
	pid := os.Getpid()
	srv, cli = fmt.Sprintf("t-orig-%d-s", pid), fmt.Sprintf("t-orig-%d-c", pid)
	for _, ns := range []string{srv, cli} {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		run(t, "ip", "-n", ns, "link", "set", "lo", "up")
		run(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0", "net.mptcp.enabled=1")
		run(t, "ip", "-n", ns, "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "0")
	}
	for _, p := range []struct{ suffix, srvIP, cliIP string }{{"a", itSrvA, itCliA}, {"b", itSrvB, itCliB}} {
		cdev, sdev := fmt.Sprintf("tc%s%d", p.suffix, pid), fmt.Sprintf("ts%s%d", p.suffix, pid)
		run(t, "ip", "link", "add", cdev, "netns", cli, "type", "veth", "peer", "name", sdev, "netns", srv)
		run(t, "ip", "-n", cli, "addr", "add", p.cliIP+"/24", "dev", cdev)
		run(t, "ip", "-n", srv, "addr", "add", p.srvIP+"/24", "dev", sdev)
		run(t, "ip", "-n", cli, "link", "set", cdev, "up")
		run(t, "ip", "-n", srv, "link", "set", sdev, "up")
		if p.suffix == "b" {
			// Packets from the second address reach the server's first address over b.
			run(t, "ip", "-n", cli, "rule", "add", "from", p.cliIP, "table", "100")
			run(t, "ip", "-n", cli, "route", "add", itSrvA+"/32", "dev", cdev, "table", "100")
			run(t, "ip", "-n", cli, "mptcp", "endpoint", "add", p.cliIP, "dev", cdev, "subflow")
		}
	}
	return srv, cli
}

func TestIntegrationMPTCPTwoPaths(t *testing.T) {
	srvNS, cliNS := itNetns(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "origin.jsonl")
	if d := os.Getenv("ORIGIN_IT_LOG_DIR"); d != "" {
		logPath = filepath.Join(d, "origin.jsonl")
		os.Remove(logPath)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := exec.CommandContext(ctx, "ip", "netns", "exec", srvNS, os.Args[0],
		"--listen", itSrvA+":443", "--listen-h1", itSrvA+":8443", "--host", itSrvA, "--third-party", "",
		"--paths", itCliA+"=a,"+itCliB+"=b", "--log", logPath)
	server.Env = append(os.Environ(), "ORIGIN_IT_ROLE=server")
	server.Stderr = os.Stderr
	server.Cancel = func() error { return server.Process.Signal(os.Interrupt) }
	server.WaitDelay = 10 * time.Second
	stdout, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			server.Process.Signal(os.Interrupt)
			if err := server.Wait(); err != nil {
				t.Errorf("server: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	var start StartLine
	ready, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil || json.Unmarshal(ready, &start) != nil || start.SPKI == "" {
		t.Fatalf("server did not start: %v %q", err, ready)
	}

	runs := []struct{ name, url string }{
		{"h2", "https://" + itSrvA + ":443/p/" + itPage + "/"},
		{"h1", "https://" + itSrvA + ":8443/p/" + itPage + "/"},
	}
	results := map[string]clientResult{}
	for _, r := range runs {
		// Kernel 6.18 on this testbed sometimes corrupts an MPTCP stream (seen as a TLS
		// record error); such a client run is logged and run again on a new connection.
		for attempt := 1; ; attempt++ {
			client := exec.CommandContext(ctx, "ip", "netns", "exec", cliNS, os.Args[0],
				"-url", r.url, "-spki", start.SPKI, "-policy", itPolicy, "-want-proto", r.name)
			client.Env = append(os.Environ(), "ORIGIN_IT_ROLE=client")
			var stderr strings.Builder
			client.Stderr = &stderr
			out, err := client.Output()
			if err != nil {
				if attempt < 3 {
					t.Logf("%s client attempt %d: %v: %s", r.name, attempt, err, stderr.String())
					continue
				}
				t.Fatalf("%s client: %v: %s", r.name, err, stderr.String())
			}
			var res clientResult
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("%s client printed %q: %v", r.name, out, err)
			}
			results[r.name] = res
			t.Logf("%s: %d requests, %d body bytes from %s, %d subflows, %d connections without a second subflow",
				r.name, res.Requests, res.Bytes, res.Local, res.Subflows, res.JoinsMissed)
			break
		}
	}
	stop()

	reqs, conns := readLog(t, logPath)
	p, _ := mustCorpus(t).Page(itPage)
	for _, r := range runs {
		res := results[r.name]
		if res.Requests != len(p.Objects) || res.Bytes != int64(p.Bytes()) {
			t.Errorf("%s: client fetched %d objects, %d bytes; the page has %d, %d", r.name, res.Requests, res.Bytes, len(p.Objects), p.Bytes())
		}
		var mine []RequestLine
		for _, l := range reqs {
			if l.Listener == r.name && l.Remote == res.Local {
				mine = append(mine, l)
			}
		}
		if len(mine) != len(p.Objects) {
			t.Fatalf("%s: %d request lines, want %d", r.name, len(mine), len(p.Objects))
		}
		byConn := map[uint64]int64{}
		for _, l := range mine {
			wantProto, wantALPN := "HTTP/2.0", "h2"
			if r.name == "h1" {
				wantProto, wantALPN = "HTTP/1.1", "http/1.1"
			}
			if l.Proto != wantProto || l.ALPN != wantALPN || l.Status != 200 {
				t.Errorf("%s %s: proto %s alpn %q status %d", r.name, l.Path, l.Proto, l.ALPN, l.Status)
			}
			if !l.Policy.Present || l.Policy.Raw != itPolicy || !l.Policy.Dict || !l.Policy.OK || l.Policy.MP == nil || !*l.Policy.MP {
				t.Errorf("%s %s: policy logged as %+v", r.name, l.Path, l.Policy)
			}
			if !l.MPTCP || l.Acct != "acked" {
				t.Errorf("%s %s: mptcp %v acct %s", r.name, l.Path, l.MPTCP, l.Acct)
			}
			// One response at a time on a connection: its subflow bytes are its own,
			// plus HTTP and TLS framing.
			if l.Concurrent == 1 && l.Bytes >= 20_000 {
				if ratio := float64(once(l.SubflowBytes, l.Reinjected, l.Subflows)) / float64(l.Bytes); ratio < 1 || ratio > 1.05 {
					t.Errorf("%s %s: subflows carried %d bytes (%d reinjected) for a %d-byte body (%.3f)", r.name, l.Path, l.SubflowBytes, l.Reinjected, l.Bytes, ratio)
				}
			}
			byConn[l.Conn] += l.Bytes
		}
		for id, body := range byConn {
			c, ok := conns[id]
			if !ok {
				t.Errorf("%s: no line for connection %d", r.name, id)
				continue
			}
			t.Logf("%s conn %d: so_protocol %d, %d requests, body %d, written %d, acked %d, subflows %+v",
				r.name, id, c.SOProtocol, c.Requests, c.Bytes, c.Written, c.Acked, c.Subflows)
			if c.SOProtocol != ipprotoMPTCP || !c.MPTCP || c.Bytes != body {
				t.Errorf("%s conn %d: so_protocol %d mptcp %v bytes %d (requests say %d)", r.name, id, c.SOProtocol, c.MPTCP, c.Bytes, body)
			}
			// What the subflows carried is what the server wrote (TLS records: bodies,
			// headers, handshake), plus any retransmission; the close_notify alert
			// written while closing may not have left yet.
			carried := once(c.SubflowBytes, c.Reinjected, c.Subflows)
			if d := int64(carried) - int64(c.Written); d < -64 || d > 64 || c.Unaccounted > 64 {
				t.Errorf("%s conn %d: subflows carried %d (%d reinjected), connection wrote %d", r.name, id, c.SubflowBytes, c.Reinjected, c.Written)
			}
			if ratio := float64(carried) / float64(body); ratio < 1 || ratio > 1.05 {
				t.Errorf("%s conn %d: subflows carried %d bytes for %d body bytes (%.3f)", r.name, id, carried, body, ratio)
			}
		}
		// All bytes of the run, by path: both paths must have carried data.
		perPath := map[string]uint64{}
		for id := range byConn {
			for _, s := range conns[id].Subflows {
				perPath[s.Path] += s.BytesAcked
			}
		}
		t.Logf("%s: bytes by client path %v", r.name, perPath)
		if perPath["a"] == 0 || perPath["b"] == 0 || len(perPath) != 2 {
			t.Errorf("%s: bytes by path %v, want both a and b", r.name, perPath)
		}
	}
}

// once is what the subflows carried counting each byte once: without TCP
// retransmissions and MPTCP reinjections.
func once(carried, reinjected uint64, subs []SubflowLine) uint64 {
	for _, s := range subs {
		carried -= s.BytesRetrans
	}
	return carried - reinjected
}

func readLog(t *testing.T, path string) ([]RequestLine, map[uint64]ConnLine) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var reqs []RequestLine
	conns := map[uint64]ConnLine{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var typ struct{ Type string }
		if err := json.Unmarshal(sc.Bytes(), &typ); err != nil {
			t.Fatalf("log line %q: %v", sc.Bytes(), err)
		}
		switch typ.Type {
		case "request":
			var l RequestLine
			json.Unmarshal(sc.Bytes(), &l)
			reqs = append(reqs, l)
		case "conn":
			var l ConnLine
			json.Unmarshal(sc.Bytes(), &l)
			conns[l.Conn] = l
		}
	}
	return reqs, conns
}

type clientResult struct {
	Proto       string `json:"proto"`
	Local       string `json:"local"` // the connection's first subflow, as the server logs it
	Requests    int    `json:"requests"`
	Bytes       int64  `json:"bytes"`
	Subflows    int    `json:"subflows"`     // on the client's own socket, after the downloads
	JoinsMissed int    `json:"joins_missed"` // connections dropped for lack of a second subflow
}

var itRefRE = regexp.MustCompile(`(?:href|src)="(/p/[^"]+)"`)

// itClient downloads a page and everything it references over MPTCP, pinning the
// server's key by its SPKI hash, with the Multipath-Policy header on every request.
func itClient(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	url := fs.String("url", "", "landing page")
	spki := fs.String("spki", "", "server SPKI sha256, base64")
	policy := fs.String("policy", "", "Multipath-Policy value")
	proto := fs.String("want-proto", "h2", "h2 or h1")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var mu sync.Mutex
	var sockets []*net.TCPConn
	d := &net.Dialer{Timeout: 5 * time.Second}
	d.SetMultipathTCP(true)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err == nil {
				mu.Lock()
				sockets = append(sockets, c.(*net.TCPConn))
				mu.Unlock()
			}
			return c, err
		},
		TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // replaced by the SPKI pin below
			VerifyConnection: func(cs tls.ConnectionState) error {
				sum := sha256.Sum256(cs.PeerCertificates[0].RawSubjectPublicKeyInfo)
				if base64.StdEncoding.EncodeToString(sum[:]) != *spki {
					return errors.New("server key does not match the SPKI pin")
				}
				return nil
			},
		},
		ForceAttemptHTTP2: true, // offers h2 and http/1.1 everywhere: the h1 port must pick http/1.1
		MaxConnsPerHost:   1,    // one connection, as the accounting test wants
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	get := func(u string) ([]byte, string, error) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set(PolicyHeaderName, *policy)
		resp, err := client.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("%s: %s", u, resp.Status)
		}
		return b, resp.Proto, err
	}
	subflows := func() (FullInfo, error) {
		mu.Lock()
		raw, err := sockets[len(sockets)-1].SyscallConn()
		mu.Unlock()
		if err != nil {
			return FullInfo{}, err
		}
		var fi FullInfo
		var ferr error
		raw.Control(func(fd uintptr) { fi, ferr = getFullInfo(int(fd)) })
		return fi, ferr
	}
	// The client's path manager now and then never opens the second subflow of a
	// connection (no MP_JOIN is sent); such a connection is replaced, at most twice.
	var landing []byte
	var res clientResult
	for {
		body, gotProto, err := get(*url)
		if err != nil {
			return err
		}
		landing = body
		res = clientResult{Proto: gotProto, Requests: 1, Bytes: int64(len(landing)), JoinsMissed: res.JoinsMissed}
		deadline := time.Now().Add(time.Second)
		fi, err := subflows()
		for err == nil && len(fi.Subflows) < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			fi, err = subflows()
		}
		if err != nil {
			return err
		}
		if len(fi.Subflows) >= 2 {
			break
		}
		if res.JoinsMissed++; res.JoinsMissed == 3 {
			return errors.New("three connections without a second subflow")
		}
		tr.CloseIdleConnections()
	}
	base := (*url)[:strings.Index((*url)[len("https://"):], "/")+len("https://")]
	var refs []string
	for _, m := range itRefRE.FindAllSubmatch(landing, -1) {
		refs = append(refs, base+string(m[1]))
	}
	// HTTP/2: several requests in flight on one connection, as a browser does.
	workers := 1
	if *proto == "h2" {
		workers = 6
	}
	var wg sync.WaitGroup
	var errs []error
	next := make(chan string)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				b, _, err := get(u)
				mu.Lock()
				res.Requests++
				res.Bytes += int64(len(b))
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	for _, u := range refs {
		next <- u
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Keep the connection open a moment, as a browser would, so the server reads every
	// subflow's counters after the last acknowledgement and before any subflow closes.
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(sockets) != res.JoinsMissed+1 {
		return fmt.Errorf("%d connections, want %d", len(sockets), res.JoinsMissed+1)
	}
	res.Local = sockets[len(sockets)-1].LocalAddr().String()
	raw, _ := sockets[len(sockets)-1].SyscallConn()
	var hdr, sf, ti []byte
	var ferr error
	raw.Control(func(fd uintptr) { hdr, sf, ti, ferr = getFullInfoRaw(int(fd)) })
	if ferr != nil {
		return fmt.Errorf("client MPTCP_FULL_INFO: %w", ferr)
	}
	fi, err := DecodeFullInfo(hdr, sf, ti)
	if err != nil {
		return err
	}
	res.Subflows = len(fi.Subflows)
	if dir := os.Getenv("ORIGIN_WRITE_FIXTURES"); dir != "" {
		// Real kernel bytes for the decoder's unit tests.
		n := len(fi.Subflows)
		dump := "hdr " + hex.EncodeToString(hdr) + "\nsf " + hex.EncodeToString(sf[:n*subflowInfoLen]) +
			"\nti " + hex.EncodeToString(ti[:n*tcpInfoLen]) + "\n"
		if err := os.WriteFile(filepath.Join(dir, "fullinfo-"+*proto+".hex"), []byte(dump), 0o644); err != nil {
			return err
		}
	}
	return json.NewEncoder(stdout).Encode(res)
}

func mustCorpus(t *testing.T) *corpus.Corpus {
	t.Helper()
	c, err := corpus.New(1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
