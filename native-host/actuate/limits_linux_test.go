//go:build linux

package actuate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/nstest"
)

// What a local user other than the allowed one, and the allowed user's other processes, can make the helper do:
// issue 12 points 1, 2 and 9, each against the helper as the unit runs it (unitHelper).

// repeated is what one repeatMain process reports.
type repeated struct {
	Sent    int            `json:"sent"`
	OK      int            `json:"ok"`
	Codes   map[string]int `json:"codes"`
	Last    Response       `json:"last"`
	MsToOK  int64          `json:"ms_to_ok"`
	procErr error
}

// repeat runs n processes of repeatMain (see TestMain) as uid at once, each sending line to sock for ms
// milliseconds, and returns what each reported. bin is the test binary where uid can run it.
func repeat(t *testing.T, bin string, uid uint32, sock, line string, ms, n int, env ...string) []repeated {
	t.Helper()
	out := make([]repeated, n)
	var wg sync.WaitGroup
	for i := range n {
		cmd := exec.Command(bin)
		cmd.Env = append(append(os.Environ(), "MPSURF_ACTUATE_REPEAT="+sock, "MPSURF_ACTUATE_LINE="+line,
			fmt.Sprintf("MPSURF_ACTUATE_MS=%d", ms)), env...)
		if uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := cmd.Output()
			if err == nil {
				err = json.Unmarshal(b, &out[i])
			}
			out[i].procErr = err
		}()
	}
	wg.Wait()
	for i, r := range out {
		if r.procErr != nil {
			t.Fatalf("process %d of %d: %v", i, n, r.procErr)
		}
	}
	return out
}

func sum(rs []repeated, f func(repeated) int) int {
	n := 0
	for _, r := range rs {
		n += f(r)
	}
	return n
}

// auditLines reads the helper's audit log (and its rotated predecessor).
func auditLines(t *testing.T, dir string) (lines []auditRecord, bytes int64) {
	t.Helper()
	for _, name := range []string{"audit.jsonl.1", "audit.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		bytes += int64(len(b))
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			var r auditRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %q: %v", name, sc.Text(), err)
			}
			lines = append(lines, r)
		}
	}
	return lines, bytes
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Point 1: a flood makes the audit log grow by a bounded number of lines per uid, and the rest is summarised.
// It used to take one line per refused connection (17.5 MB in 10 s from a refused uid) and one per request,
// invalid or not (707 MB in 10 s from the allowed uid), on /run, which is RAM.
func TestIntegrationAuditFlood(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "audit")
	h := unitHelper(t, ns, map[string]any{"Backend": BackendDryRun})
	h.start()
	log := filepath.Join(h.stateDir(), "audit.jsonl")
	refused := nstest.ThrowawayUID(t)
	const floodMS = 1500

	before := fileSize(log)
	rs := repeat(t, h.unit.bin, refused, h.sock, `{"verb":"status"}`, floodMS, 4, "MPSURF_ACTUATE_RECONNECT=1")
	grewRefused := fileSize(log) - before
	conns := sum(rs, func(r repeated) int { return r.Sent })
	t.Logf("refused uid %d: %d connections in %d ms; audit log grew %d bytes", refused, conns, floodMS, grewRefused)
	if conns < 200 {
		t.Fatalf("only %d connections: the flood did not happen", conns)
	}
	if ok := sum(rs, func(r repeated) int { return r.OK }); ok != 0 {
		t.Fatalf("%d requests of a uid that is not allowed answered", ok)
	}

	before = fileSize(log)
	rs = repeat(t, h.unit.bin, 0, h.sock, `not a request`, floodMS, 8)
	grewAllowed := fileSize(log) - before
	sent := sum(rs, func(r repeated) int { return r.Sent })
	t.Logf("allowed uid 0: %d invalid lines on 8 connections in %d ms (%d rate limited); audit log grew %d bytes",
		sent, floodMS, sum(rs, func(r repeated) int { return r.Codes[CodeRateLimited] }), grewAllowed)

	h.cmd.Process.Signal(syscall.SIGTERM)
	h.wait()
	lines, total := auditLines(t, h.stateDir())
	var fromRefused, fromAllowed, summaries int
	var summary auditRecord
	for _, l := range lines {
		switch {
		case l.Verb == VerbSummary && l.Peer.Uid == refused:
			summaries++
			summary = l
		case l.Peer.Uid == refused:
			fromRefused++
		case l.Verb != VerbSummary && l.Peer.Uid == 0:
			fromAllowed++
		}
	}
	t.Logf("audit log: %d lines, %d bytes; %d from the refused uid + %d summary, %d from the allowed uid", len(lines), total, fromRefused, summaries, fromAllowed)
	if fromRefused > refusedAuditBurst+1 {
		t.Errorf("%d lines from a refused uid's %d connections; its budget is %d and a rate of %.3f/s", fromRefused, conns, refusedAuditBurst, refusedAuditRate)
	}
	if summaries == 0 || summary.Count+fromRefused < conns || !strings.Contains(summary.Error, fmt.Sprintf("refused requests from uid %d", refused)) {
		t.Errorf("no summary of the refused uid's %d connections: %d summaries, last %+v", conns, summaries, summary)
	}
	if limit := auditBurst + int(auditRate*2*floodMS/1000); fromAllowed > limit {
		t.Errorf("%d lines from the allowed uid's flood, more than its budget %d", fromAllowed, limit)
	}
	if total > 2*maxAuditBytes {
		t.Errorf("audit log %d bytes, bound %d", total, 2*maxAuditBytes)
	}
}

// The audit log rotates at maxAuditBytes, keeping one older file, and a uid over its budget is summarised.
func TestAuditRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	a, err := openAudit(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := auditRecord{Peer: Peer{Uid: 7}, Verb: VerbOrigin, Error: strings.Repeat("x", 200)}
	for range 3 * maxAuditBytes / 200 {
		a.write(rec)
	}
	written := 0
	for range 1000 {
		if a.request(rec, true) {
			written++
		}
	}
	a.Close()
	if written > auditBurst+1 {
		t.Errorf("%d of 1000 lines at once written for one uid, burst %d", written, auditBurst)
	}
	for _, name := range []string{"audit.jsonl", "audit.jsonl.1"} {
		if n := fileSize(filepath.Join(dir, name)); n == 0 || n > maxAuditBytes {
			t.Errorf("%s: %d bytes, want 1 … %d", name, n, maxAuditBytes)
		}
	}
	lines, _ := auditLines(t, dir)
	last := lines[len(lines)-1]
	if last.Verb != VerbSummary || last.Count != 1000-written || !strings.Contains(last.Error, "from uid 7") {
		t.Errorf("last line %+v, want a summary of the %d lines not written", last, 1000-written)
	}
}

// Point 2: rate limits are per uid and per session, not per process. 40 processes of the allowed uid sharing the
// session's token got 40 times the limit; now the token works on the connection that said hello only, and every
// other request of the uid shares one budget. The session's own renewals go through meanwhile.
func TestIntegrationRateLimitSharedToken(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "rate")
	h := unitHelper(t, ns, map[string]any{"Backend": BackendDryRun})
	h.start()
	c := h.conn()
	hello := c.hello()
	renew := func() Response {
		return c.do(map[string]any{"verb": VerbLeaseRenew, "session": hello.Session, "lease_ms": 5000})
	}
	if r := renew(); !r.OK {
		t.Fatalf("renew: %+v", r)
	}
	const ms = 1000
	start := time.Now()
	var shared []repeated
	done := make(chan struct{})
	go func() {
		defer close(done)
		shared = repeat(t, h.unit.bin, 0, h.sock, `{"verb":"lease-renew","session":"`+hello.Session+`","lease_ms":5000}`, ms, 40)
	}()
	renewed, refused := 0, 0
	for time.Since(start) < ms*time.Millisecond {
		if r := renew(); r.OK {
			renewed++
		} else {
			refused++
		}
		time.Sleep(100 * time.Millisecond)
	}
	<-done
	okShared := sum(shared, func(r repeated) int { return r.OK })
	t.Logf("40 processes sharing the session's token: %d of %d requests accepted in %d ms; the session's own renewals: %d accepted, %d refused",
		okShared, sum(shared, func(r repeated) int { return r.Sent }), ms, renewed, refused)
	if okShared != 0 {
		t.Errorf("%d requests with the session's token accepted from other processes", okShared)
	}
	if refused > 0 || renewed == 0 {
		t.Errorf("the session's own renewals while other processes flooded: %d accepted, %d refused", renewed, refused)
	}

	status := repeat(t, h.unit.bin, 0, h.sock, `{"verb":"status"}`, ms, 40)
	okStatus := sum(status, func(r repeated) int { return r.OK })
	limit := DefaultBurst + DefaultRate*(ms/1000+1)
	t.Logf("40 processes of one uid asking status: %d accepted in %d ms (limit %d: burst %d + %d/s)", okStatus, ms, limit, DefaultBurst, DefaultRate)
	if okStatus > limit {
		t.Errorf("%d status requests accepted from one uid in %d ms, more than its limit %d", okStatus, ms, limit)
	}
}

// Point 2: the per-address policy map is bounded: addresses beyond maxAddrPolicies forget the least recently set
// (back to single path, the safe default). It grew without bound (139 MB seen).
func TestIntegrationAddressChurn(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "churn")
	h := unitHelper(t, ns, map[string]any{"Backend": BackendUserspace, "Cell": "10.77.2.1", "Rate": 1e6, "Burst": 1e6})
	h.start()
	c := h.conn()
	hello := c.hello()
	const requests = 200 // × MaxAddrs addresses each: 12,800
	for i := range requests {
		addrs := make([]string, MaxAddrs)
		for k := range addrs {
			n := i*MaxAddrs + k
			addrs[k] = fmt.Sprintf("10.%d.%d.%d", 100+n>>16, n>>8&255, n&255)
		}
		if r := c.do(map[string]any{"verb": VerbOrigin, "session": hello.Session, "lease_ms": 10000, "addrs": addrs, "multipath": i%2 == 0}); !r.OK {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	st := c.do(map[string]any{"verb": VerbStatus})
	b, _ := json.Marshal(st.Result)
	var res struct {
		Backend struct {
			Addresses int `json:"addresses"`
			Stats     struct {
				AddrsForgotten int `json:"addrs_forgotten"`
			} `json:"stats"`
		} `json:"backend"`
	}
	json.Unmarshal(b, &res)
	rss, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	var vmRSS string
	for _, l := range strings.Split(string(rss), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			vmRSS = strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
	}
	t.Logf("%d addresses sent: %d kept, %d forgotten; helper RSS %s", requests*MaxAddrs, res.Backend.Addresses, res.Backend.Stats.AddrsForgotten, vmRSS)
	if res.Backend.Addresses != maxAddrPolicies || res.Backend.Stats.AddrsForgotten != requests*MaxAddrs-maxAddrPolicies {
		t.Fatalf("%d addresses kept, %d forgotten; want %d and %d", res.Backend.Addresses, res.Backend.Stats.AddrsForgotten,
			maxAddrPolicies, requests*MaxAddrs-maxAddrPolicies)
	}
}

// Point 9: a hello does not take over another client's live session. The browser restarting is the case that
// matters: the new host's hello succeeds at once when the old host is gone (its connection closed), and within
// the old lease when the old host hangs. Before, any hello replaced the session, and what it held was undone.
func TestIntegrationHelloDoesNotKick(t *testing.T) {
	needRoot(t)
	ns := newNS(t, "kick")
	other := nstest.ThrowawayUID(t)
	h := unitHelper(t, ns, map[string]any{"Backend": BackendDryRun, "AllowUIDs": []uint32{0, other}})
	h.start()
	// A: a host of uid 0 with a live session, renewing a 500 ms lease every 100 ms.
	startClient := func() (*exec.Cmd, *bufio.Scanner) {
		cmd := exec.Command(h.unit.bin)
		cmd.Env = append(os.Environ(), "MPSURF_ACTUATE_CLIENT="+h.sock, `MPSURF_ACTUATE_VERB={"verb":"lease-renew","lease_ms":500}`)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		sc := bufio.NewScanner(out)
		for range 2 {
			if !sc.Scan() || !strings.Contains(sc.Text(), `"ok":true`) {
				t.Fatalf("client: %q", sc.Text())
			}
		}
		return cmd, sc
	}
	a, _ := startClient()
	// B: another process (of another allowed uid) says hello meanwhile: refused, and A's session stays.
	hellos := repeat(t, h.unit.bin, other, h.sock, `{"verb":"hello"}`, 300, 1)[0]
	if hellos.OK != 0 || hellos.Codes[CodeBusy] == 0 || hellos.Codes[CodeBusy]+hellos.Codes[CodeRateLimited] != hellos.Sent ||
		!strings.Contains(hellos.Last.Error, fmt.Sprintf("pid %d", a.Process.Pid)) {
		t.Fatalf("hello while another client's session is live: %+v", hellos)
	}
	st := h.conn().do(map[string]any{"verb": VerbStatus})
	if left := st.Result.(map[string]any)["lease_left_ms"].(float64); left <= 0 {
		t.Fatalf("the live session lost its lease to the refused hellos: %+v", st)
	}
	// A is killed: its connection closes, and B's hello succeeds at once.
	a.Process.Kill()
	a.Wait()
	b := repeat(t, h.unit.bin, other, h.sock, `{"verb":"hello"}`, 2000, 1, "MPSURF_ACTUATE_UNTIL_OK=1")[0]
	t.Logf("hello after the session's client was killed: ok after %d ms", b.MsToOK)
	if b.OK != 1 || b.MsToOK > 300 {
		t.Fatalf("hello after kill -9 of the session's client: %+v", b)
	}
	// A hung client (SIGSTOP) keeps its connection: B waits for its 500 ms lease to lapse (checked every 100 ms).
	c, _ := startClient()
	c.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	b = repeat(t, h.unit.bin, other, h.sock, `{"verb":"hello"}`, 3000, 1, "MPSURF_ACTUATE_UNTIL_OK=1")[0]
	waited := time.Since(stopped)
	c.Process.Signal(syscall.SIGCONT)
	t.Logf("hello after the session's client hung: ok after %d ms (lease 500 ms)", b.MsToOK)
	if b.OK != 1 || waited > 1500*time.Millisecond || b.Codes[CodeBusy] == 0 {
		t.Fatalf("hello while the session's client hung: %+v after %v", b, waited)
	}
}

// Point 9: status shows the caller its own uid's connections only, and a session's decisions apply to its own
// uid's connections only. Before, every allowed client saw every user's MPTCP connections (their destinations),
// and another user's connection to a decided address got a cellular subflow.
func TestIntegrationStatusOwnConnections(t *testing.T) {
	cli, h, server, other := twoUsers(t, "o")
	c := h.conn()
	hello := c.hello()
	if r := c.do(map[string]any{"verb": VerbOrigin, "session": hello.Session, "lease_ms": 10000,
		"addrs": []string{"10.77.1.2"}, "multipath": true}); !r.OK {
		t.Fatalf("%+v", r)
	}
	mine := cli.DialMPTCP(t, server)
	mine.Write([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	io.ReadFull(mine, make([]byte, 1))
	// The other user's connection to the same server, from a process of its own.
	theirs := dialAs(t, cli, other, h.unit.bin, server)
	records := func(r Response) []ConnRecord {
		b, _ := json.Marshal(r.Result)
		var res struct {
			Backend struct {
				Connections []ConnRecord `json:"connections"`
			} `json:"backend"`
		}
		json.Unmarshal(b, &res)
		var out []ConnRecord
		for _, rec := range res.Backend.Connections {
			if rec.Open && rec.Dst == server {
				out = append(out, rec)
			}
		}
		return out
	}
	var rootSees []ConnRecord
	if !waitUntil(3*time.Second, func() bool {
		rootSees = records(c.do(map[string]any{"verb": VerbStatus}))
		return len(rootSees) >= 1 && rootSees[0].Subflow
	}) {
		t.Fatalf("root's own connection, decided multipath, has no cellular subflow: %+v", rootSees)
	}
	time.Sleep(300 * time.Millisecond)
	rootSees = records(c.do(map[string]any{"verb": VerbStatus}))
	otherSees := records(repeat(t, h.unit.bin, other, h.sock, `{"verb":"status"}`, 2000, 1, "MPSURF_ACTUATE_UNTIL_OK=1")[0].Last)
	t.Logf("uid 0 (%s) sees %+v; uid %d (%s) sees %+v", mine.LocalAddr(), rootSees, other, theirs, otherSees)
	if len(rootSees) != 1 || len(otherSees) != 1 {
		t.Fatalf("each uid should see its one connection: uid 0 sees %d, uid %d sees %d", len(rootSees), other, len(otherSees))
	}
	if otherSees[0].Subflow || otherSees[0].Multipath {
		t.Fatalf("uid 0's decision gave uid %d's connection a cellular subflow: %+v", other, otherSees[0])
	}
}

// twoUsers runs the helper as the unit does, with the userspace backend, in a client namespace of two links
// (10.77.1.1 WiFi, 10.77.2.1 cellular) to a server namespace, and allows uid 0 and another, throwaway uid to
// reach it. It returns the client namespace, the helper, the server's address:port (thetaServer) and the other
// uid.
func twoUsers(t *testing.T, tag string) (*testNS, *helper, string, uint32) {
	t.Helper()
	needRoot(t)
	cli, srv := newNS(t, tag+"c"), newNS(t, tag+"s")
	vethPair(t, cli, srv, 1)
	vethPair(t, cli, srv, 2)
	other := nstest.ThrowawayUID(t)
	h := unitHelper(t, cli, map[string]any{"Backend": BackendUserspace, "Cell": "10.77.2.1", "AllowUIDs": []uint32{0, other}})
	h.start()
	port := thetaServer(t, srv)
	return cli, h, net.JoinHostPort("10.77.1.2", fmt.Sprint(port)), other
}

// Point 3, in the kernel: a decision that turns an address single path closes the cellular subflow a connection to
// it already has (opened under another decision that held the address first), rather than leaving it open.
func TestIntegrationSinglePathClosesSubflows(t *testing.T) {
	needRoot(t)
	cli, srv := newNS(t, "spc"), newNS(t, "sps")
	vethPair(t, cli, srv, 1)
	vethPair(t, cli, srv, 2)
	h := unitHelper(t, cli, map[string]any{"Backend": BackendUserspace, "Cell": "10.77.2.1"})
	h.start()
	port := thetaServer(t, srv)
	server := net.JoinHostPort("10.77.1.2", fmt.Sprint(port))
	c := h.conn()
	hello := c.hello()
	set := func(multipath bool) {
		if r := c.do(map[string]any{"verb": VerbOrigin, "session": hello.Session, "lease_ms": 10000,
			"addrs": []string{"10.77.1.2"}, "multipath": multipath}); !r.OK {
			t.Fatalf("%+v", r)
		}
	}
	set(true)
	conn := cli.DialMPTCP(t, server)
	conn.Write([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	io.ReadFull(conn, make([]byte, 1))
	cellSubflows := func() int { return establishedFrom(cli, "10.77.2.1") }
	if !waitUntil(3*time.Second, func() bool { return cellSubflows() == 1 }) {
		t.Fatalf("no cellular subflow under the multipath decision")
	}
	set(false)
	if !waitUntil(2*time.Second, func() bool { return cellSubflows() == 0 }) {
		t.Fatalf("the cellular subflow stayed open after the address turned single path")
	}
	// The connection itself goes on over WiFi.
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	conn.Write([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	if _, err := io.ReadFull(conn, make([]byte, 1)); err != nil {
		t.Fatalf("the connection broke when its subflow closed: %v", err)
	}
}
