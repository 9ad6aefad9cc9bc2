package mph2

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/nstest"
)

// helperEnv carries a download's Options (JSON) to the test binary re-run as a client inside the client
// namespace (TestHelperClient): sockets are created in the namespace of the thread that creates them, and a
// download's dials happen on many goroutines, so the whole client runs in a process of its own there.
const helperEnv = "MPH2_HELPER_OPTIONS"

type helperJob struct {
	URL     string                  `json:"url"`
	Out     string                  `json:"out"`
	Paths   []Path                  `json:"paths"`
	CA      string                  `json:"ca"`
	Resolve map[string][]netip.Addr `json:"resolve"`
	HTTP1   bool                    `json:"http1"`
	Size    int64                   `json:"size,omitempty"`
}

func TestHelperClient(t *testing.T) {
	raw := os.Getenv(helperEnv)
	if raw == "" {
		t.Skip("run by the integration tests as the client process")
	}
	var job helperJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		t.Fatal(err)
	}
	tlsConf, err := TLSWithRoots([]byte(job.CA))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Fetch(ctx, Options{URL: job.URL, Out: job.Out, Paths: job.Paths, TLS: tlsConf, Resolve: job.Resolve, HTTP1: job.HTTP1, Size: job.Size})
	out, _ := json.Marshal(struct {
		Result
		Err string `json:"err,omitempty"`
	}{res, errString(err)})
	fmt.Printf("RESULT %s\n", out)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestIntegrationTwoLinks downloads over two emulated links between namespaces, each a veth pair rate-limited
// with tbf on the server side (the kernel here has no netem, so no delay), from a server address reachable over
// both. The client process runs as an unprivileged user (uid 65534) and binds each path with SO_BINDTODEVICE and
// its source address: the download succeeding, with each link's kernel counters matching the path's bytes,
// shows the binding needs no privilege (Linux ≥ 5.7) and puts every path's bytes on its own link. The file is
// compared byte for byte.
func TestIntegrationTwoLinks(t *testing.T) {
	nstest.NeedRoot(t)
	for _, tc := range []struct {
		name  string
		http1 bool
		size  int
		known bool // the size given beforehand: both paths ask at once
	}{{"h2", false, 6 << 20, false}, {"http1.1", true, 4 << 20, false}, {"h2 known size", false, 6 << 20, true}} {
		t.Run(tc.name, func(t *testing.T) {
			bed := newTwoLinks(t, "20mbit", "30mbit")
			body := object(tc.size, 21)
			bed.serve(t, body)
			dir := t.TempDir()
			os.Chmod(filepath.Dir(dir), 0o755) // the test's own directory
			os.Chmod(dir, 0o777)
			txBefore := [2]int64{bed.txBytes(t, 1), bed.txBytes(t, 2)}
			job := helperJob{
				URL: "https://example.com/f", Out: filepath.Join(dir, "f.bin"), HTTP1: tc.http1,
				Paths: []Path{
					{Name: "link1", Interface: "vb1", Addr: netip.MustParseAddr("10.77.1.2")},
					{Name: "link2", Interface: "vb2", Addr: netip.MustParseAddr("10.77.2.2")},
				},
			}
			if tc.known {
				job.Size = int64(tc.size)
			}
			res := bed.fetch(t, job)
			got, err := os.ReadFile(res.File)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("file of %d bytes differs from the object (%d bytes): sha256 %x vs %x", len(got), len(body), sha256.Sum256(got), sha256.Sum256(body))
			}
			for i, p := range res.Paths {
				tx := bed.txBytes(t, i+1) - txBefore[i]
				if p.Bytes < int64(tc.size)/5 {
					t.Errorf("%s carried %d bytes only", p.Name, p.Bytes)
				}
				// The link's own counter (server side of the veth, TLS and TCP/IP overhead included) must
				// agree with what the path delivered: bytes of one path never leave on the other link.
				if float64(tx) < float64(p.Bytes) || float64(tx) > 1.1*float64(p.Bytes)+200e3 {
					t.Errorf("%s: link sent %d bytes for %d body bytes", p.Name, tx, p.Bytes)
				}
			}
			if res.DupBytes != 0 || (!tc.http1 && res.WasteBytes != 0) {
				t.Errorf("duplicate %d, waste %d bytes", res.DupBytes, res.WasteBytes)
			}
			t.Logf("%s: %.0f ms, %+v, %d requests, %d moves", tc.name, res.ElapsedMS, res.Paths, res.Requests, res.Moves)
		})
	}
}

type twoLinks struct {
	cli, srv *nstest.NS
	ca       string
	addr     string
}

// newTwoLinks: srv has 10.77.9.1 on its loopback, reachable from cli over link 1 (vb1, 10.77.1.2) and link 2
// (vb2, 10.77.2.2), each shaped to its rate towards the client. cli routes by source address, one table per link,
// like the testbed's client.
func newTwoLinks(t *testing.T, rate1, rate2 string) *twoLinks {
	b := &twoLinks{srv: nstest.New(t, "mph2", "s"), cli: nstest.New(t, "mph2", "c"), addr: "10.77.9.1"}
	for i, rate := range []string{rate1, rate2} {
		idx := i + 1
		nstest.VethPair(t, b.srv, b.cli, idx)
		nstest.Run(t, "ip", "-n", b.srv.Name, "link", "set", fmt.Sprintf("va%d", idx), "mtu", "1500")
		nstest.Run(t, "tc", "-n", b.srv.Name, "qdisc", "add", "dev", fmt.Sprintf("va%d", idx), "root", "tbf",
			"rate", rate, "burst", "32kb", "latency", "100ms")
		table := strconv.Itoa(100 + idx)
		src := fmt.Sprintf("10.77.%d.2", idx)
		nstest.Run(t, "ip", "-n", b.cli.Name, "rule", "add", "from", src, "table", table)
		nstest.Run(t, "ip", "-n", b.cli.Name, "route", "add", b.addr, "via", fmt.Sprintf("10.77.%d.1", idx),
			"dev", fmt.Sprintf("vb%d", idx), "table", table)
	}
	nstest.Run(t, "ip", "-n", b.srv.Name, "addr", "add", b.addr+"/32", "dev", "lo")
	return b
}

func (b *twoLinks) serve(t *testing.T, body []byte) {
	var ln net.Listener
	if err := b.srv.In(func() (err error) {
		ln, err = net.Listen("tcp4", b.addr+":443")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "f.bin", time.Unix(1_700_000_000, 0), bytes.NewReader(body))
	}))
	ts.Listener.Close()
	ts.Listener = ln
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	b.ca = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}))
}

func (b *twoLinks) fetch(t *testing.T, job helperJob) Result {
	job.CA = b.ca
	job.Resolve = map[string][]netip.Addr{"example.com": {netip.MustParseAddr(b.addr)}}
	raw, _ := json.Marshal(job)
	// The test binary may sit in a directory only root can enter; the unprivileged client needs a copy it can run.
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "client.test")
	if data, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(bin, data, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	cmd := exec.Command("ip", "netns", "exec", b.cli.Name, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		bin, "-test.run=^TestHelperClient$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(raw), "HOME=/tmp")
	out, err := cmd.CombinedOutput()
	var res struct {
		Result
		Err string `json:"err"`
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			if jerr := json.Unmarshal([]byte(rest), &res); jerr != nil {
				t.Fatal(jerr)
			}
		}
	}
	if err != nil || res.Err != "" || res.File == "" {
		t.Fatalf("client: %v %s\n%s", err, res.Err, out)
	}
	return res.Result
}

// txBytes is what the server side of link idx has sent.
func (b *twoLinks) txBytes(t *testing.T, idx int) int64 {
	out, err := exec.Command("ip", "netns", "exec", b.srv.Name, "cat", fmt.Sprintf("/sys/class/net/va%d/statistics/tx_bytes", idx)).Output()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	return n
}
