package host

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/decide"
)

// Environment knobs of the actuation client.
const (
	// EnvActuator is the privileged helper's socket (mpsurf-actuator --socket). Unset: DefaultActuator when
	// the installed unit made it, else no actuation; "off": no actuation. Decisions say which in inputs.actuation.
	EnvActuator = "MPSURF_ACTUATOR"
	// DefaultActuator is the socket of the installed systemd unit (packaging/systemd/mpsurf-actuator.service).
	DefaultActuator = "/run/mpsurf/actuator.sock"
	// EnvHosts maps host names to addresses, "name=IP[|IP...],name=IP", ahead of the system resolver. It is a
	// testbed and override knob: in the testbed Chromium resolves origin.test through --host-resolver-rules,
	// which the system resolver the host uses knows nothing about.
	EnvHosts = "MPSURF_HOSTS"
)

// Actuation timing. The lease is short so that a dead host's changes are undone quickly (lease + 1 s), and
// renewed four times per lease so that one late renewal never lets it lapse. A decide waits at most
// actuateBudget for the helper: the decision goes out either way.
const (
	actuatorLease  = 2 * time.Second
	actuatorRenew  = actuatorLease / 4
	actuateBudget  = 300 * time.Millisecond
	backoffMin     = 100 * time.Millisecond
	backoffMax     = 5 * time.Second
	busyRetry      = 100 * time.Millisecond // a hello refused as busy: within one lease, 20 hellos at most
	replayCapacity = 256                    // origin policies re-sent after a reconnect; a session's recent origins
)

// actuatorClient is the host's side of the helper's socket: one connection, one session, a lease renewed in
// the background, reconnection with backoff. Requests are one line out, one line back, under mu.
type actuatorClient struct {
	path  string
	hosts map[string][]netip.Addr
	log   *slog.Logger

	mu      sync.Mutex
	conn    net.Conn
	r       *bufio.Reader
	session string
	backend string
	lastErr string
	nextID  uint64
	ready   chan struct{} // closed after the first connection attempt
	replay  map[string]actuate.Request
	order   []string // replay keys, oldest first
	// pending holds, by replay key, what the helper refused as rate_limited: the latest request of each key goes
	// again once the helper's limit allows (retryAt, from its retry_after_ms), decisions before peers, so that no
	// decision is lost to the limit (retryLoop).
	pending map[string]actuate.Request
	retryAt time.Time
	kick    chan struct{}
	// paused: multipath is paused (a cap reached, the user's pause): every policy goes to the helper as single
	// path, and an announce joins nothing (pauseAll).
	paused bool
}

// singlePath is req as the helper takes it while multipath is paused: no cellular subflow, whatever was decided.
func singlePath(req actuate.Request) actuate.Request {
	if req.Multipath == nil || !*req.Multipath {
		return req
	}
	sp := false
	req.Multipath, req.Theta1, req.Theta2, req.Group, req.PreferCellular = &sp, 0, nil, 0, false
	return req
}

// pauseAll turns every policy the client holds single path and has the helper undo what it holds now (release:
// it closes the cellular subflows it opened and forgets every policy), so that open connections and the relay's
// open tunnels lose their cellular subflows at once; until resumeAll, every policy goes single path. It answers
// what the helper said of the release ("not_configured" without a helper).
func (c *actuatorClient) pauseAll() string {
	if c == nil {
		return "not_configured"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = true
	for k, r := range c.replay {
		c.replay[k] = singlePath(r)
	}
	for k, r := range c.pending {
		c.pending[k] = singlePath(r)
	}
	if c.conn == nil {
		return "unavailable: " + c.lastErr // the helper undid everything when the session ended; a new one replays single path
	}
	if _, err := c.callLocked(actuate.Request{Verb: actuate.VerbRelease, Session: c.session}, time.Second); err != nil {
		return "unavailable: " + err.Error()
	}
	return "ok"
}

// resumeAll ends the pause: later decisions are carried out as decided. What was turned single path stays so until
// its origin is decided again (its next navigation).
func (c *actuatorClient) resumeAll() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.paused = false
	c.mu.Unlock()
}

// StartActuator reads the environment and starts the client if a socket is named (or the installed unit's
// exists); nil means decisions stay advisory. The client lives as long as the process.
func StartActuator(log *slog.Logger) *actuatorClient {
	path := os.Getenv(EnvActuator)
	if path == "" {
		if fi, err := os.Stat(DefaultActuator); err == nil && fi.Mode()&os.ModeSocket != 0 {
			path = DefaultActuator
		}
	}
	if path == "" || path == "off" {
		return nil
	}
	hosts, err := ParseHosts(os.Getenv(EnvHosts))
	if err != nil {
		log.Error("ignoring "+EnvHosts, "err", err)
	}
	c := &actuatorClient{path: path, hosts: hosts, log: log, ready: make(chan struct{}),
		replay: map[string]actuate.Request{}, lastErr: "not connected yet"}
	c.start()
	return c
}

// start runs the session and the retries of rate-limited requests until the process ends.
func (c *actuatorClient) start() {
	if c.pending == nil {
		c.pending = map[string]actuate.Request{}
	}
	c.kick = make(chan struct{}, 1)
	go c.run()
	go c.retryLoop()
}

// ParseHosts reads EnvHosts: comma-separated name=addr entries; one name may list several addresses with '|'
// or by repeating the name.
func ParseHosts(s string) (map[string][]netip.Addr, error) {
	m := map[string][]netip.Addr{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		name, addrs, ok := strings.Cut(e, "=")
		name = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
		if !ok || name == "" || strings.ContainsAny(name, " /:") {
			return nil, fmt.Errorf("%s: entry %.80q is not name=address", EnvHosts, e)
		}
		for _, a := range strings.Split(addrs, "|") {
			ip, err := netip.ParseAddr(strings.TrimSpace(a))
			if err != nil || ip.Zone() != "" {
				return nil, fmt.Errorf("%s: %.80q is not an IP address", EnvHosts, a)
			}
			m[name] = append(m[name], ip.Unmap())
		}
	}
	return m, nil
}

// run keeps a session open until the process ends.
func (c *actuatorClient) run() {
	backoff := backoffMin
	first := true
	for {
		err := c.connect()
		if first {
			close(c.ready)
			first = false
		}
		if err == nil {
			backoff = backoffMin
			err = c.renewLoop()
		}
		c.drop(err)
		var ref *errRefused
		if errors.As(err, &ref) && ref.code == actuate.CodeBusy {
			// Another client's session is live: it ends when that client's connection closes (just now, when a
			// restarted browser's old host exited) or its lease lapses. Ask again soon, without backing off.
			time.Sleep(busyRetry)
			continue
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, backoffMax)
	}
}

func (c *actuatorClient) connect() error {
	conn, err := net.DialTimeout("unix", c.path, time.Second)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn, c.r = conn, bufio.NewReaderSize(conn, 4096)
	resp, err := c.callLocked(actuate.Request{Verb: actuate.VerbHello}, time.Second)
	if err != nil {
		c.closeLocked()
		return err
	}
	c.session, c.backend, c.lastErr = resp.Session, resp.Backend, ""
	c.log.Info("actuator session", "socket", c.path, "backend", resp.Backend)
	// The helper undid the previous session's changes when it ended; the current decisions hold again. What its
	// rate limit does not take now goes through the retries.
	clear(c.pending)
	for i, k := range c.order {
		if res := c.sendLocked(k, c.replay[k], time.Second); strings.HasPrefix(res, queued) {
			for _, rest := range c.order[i+1:] {
				c.pending[rest] = c.replay[rest]
			}
			break
		} else if res != "ok" {
			c.log.Warn("actuator replay", "key", k, "result", res)
		}
	}
	return nil
}

// queued starts the result of a request the helper's rate limit deferred.
const queued = "queued: "

// sendLocked sends one request under the current session and answers what goes in inputs.actuation. A request
// the helper refuses as rate_limited is kept in pending (the latest per key) and retried once its limit allows.
func (c *actuatorClient) sendLocked(key string, req actuate.Request, timeout time.Duration) string {
	if c.conn == nil {
		return "unavailable: " + c.lastErr
	}
	req.Session = c.session
	resp, err := c.callLocked(req, timeout)
	var ref *errRefused
	switch {
	case err == nil:
		delete(c.pending, key)
		return "ok"
	case errors.As(err, &ref) && ref.code == actuate.CodeRateLimited:
		wait := retryAfter(resp)
		c.pending[key] = req
		if at := time.Now().Add(wait); at.After(c.retryAt) {
			c.retryAt = at
		}
		select {
		case c.kick <- struct{}{}:
		default:
		}
		return fmt.Sprintf("%srate limited by the helper; sent again in %d ms", queued, wait.Milliseconds())
	case errors.As(err, &ref):
		delete(c.pending, key)
		return "refused: " + ref.Error()
	}
	return "unavailable: " + err.Error()
}

// retryAfter reads a rate_limited response's retry_after_ms (100 ms when it has none, at most 5 s).
func retryAfter(resp actuate.Response) time.Duration {
	ms := 100.0
	if m, ok := resp.Result.(map[string]any); ok {
		if v, ok := m["retry_after_ms"].(float64); ok && v > 0 {
			ms = v
		}
	}
	return min(time.Duration(ms)*time.Millisecond, 5*time.Second)
}

// retryLoop sends the pending requests once the helper's limit allows: an origin's own decisions first, then the
// addresses its pages reported.
func (c *actuatorClient) retryLoop() {
	for {
		c.mu.Lock()
		wait := time.Until(c.retryAt)
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			<-c.kick
			continue
		}
		if wait > 0 {
			time.Sleep(wait)
			continue
		}
		c.mu.Lock()
		keys := make([]string, 0, len(c.pending))
		for k := range c.pending {
			keys = append(keys, k)
		}
		isPeers := func(k string) int {
			if strings.HasSuffix(k, peersSuffix) {
				return 1
			}
			return 0
		}
		slices.SortFunc(keys, func(a, b string) int { return cmp.Or(isPeers(a)-isPeers(b), cmp.Compare(a, b)) })
		for _, k := range keys {
			if res := c.sendLocked(k, c.pending[k], time.Second); strings.HasPrefix(res, queued) || c.conn == nil {
				break // again later; or the reconnect replays everything
			} else if res != "ok" {
				c.log.Warn("actuation retry", "key", k, "result", res)
			}
		}
		c.mu.Unlock()
	}
}

func (c *actuatorClient) renewLoop() error {
	t := time.NewTicker(actuatorRenew)
	defer t.Stop()
	for range t.C {
		c.mu.Lock()
		if c.conn == nil {
			c.mu.Unlock()
			return errors.New(c.lastErr)
		}
		_, err := c.callLocked(actuate.Request{Verb: actuate.VerbLeaseRenew, Session: c.session,
			LeaseMS: actuatorLease.Milliseconds()}, time.Second)
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *actuatorClient) drop(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.closeLocked()
	}
	if err != nil {
		if c.lastErr != err.Error() {
			c.log.Warn("actuator unavailable", "socket", c.path, "err", err)
		}
		c.lastErr = err.Error()
	}
}

func (c *actuatorClient) closeLocked() {
	c.conn.Close()
	c.conn, c.r, c.session = nil, nil, ""
}

// errRefused is a helper's refusal: the connection stays good.
type errRefused struct{ code, msg string }

func (e *errRefused) Error() string { return e.code + ": " + e.msg }

// callLocked sends one request and reads its response. A transport error closes the connection; the run loop
// reconnects.
func (c *actuatorClient) callLocked(req actuate.Request, timeout time.Duration) (actuate.Response, error) {
	var resp actuate.Response
	if c.conn == nil {
		return resp, errors.New(c.lastErr)
	}
	c.nextID++
	req.ID = c.nextID
	line, _ := json.Marshal(req)
	c.conn.SetDeadline(time.Now().Add(timeout))
	if _, err := c.conn.Write(append(line, '\n')); err != nil {
		c.lastErr = err.Error()
		c.closeLocked()
		return resp, err
	}
	b, err := c.r.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(b, &resp)
	}
	if err == nil && resp.ID != req.ID && resp.Code == "" {
		err = fmt.Errorf("response %d to request %d", resp.ID, req.ID)
	}
	if err != nil {
		c.lastErr = err.Error()
		c.closeLocked()
		return resp, err
	}
	if !resp.OK {
		return resp, &errRefused{resp.Code, resp.Error}
	}
	return resp, nil
}

// setOrigin sends one origin's policy and remembers it for replay. It answers what goes in inputs.actuation.
func (c *actuatorClient) setOrigin(ctx context.Context, req actuate.Request, key string) string {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return "unavailable: helper not reached yet"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		req = singlePath(req)
	}
	if _, ok := c.replay[key]; !ok {
		c.order = append(c.order, key)
		if len(c.order) > replayCapacity {
			delete(c.replay, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.replay[key] = req
	timeout := actuateBudget
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), 10*time.Millisecond)
	}
	if _, waiting := c.pending[key]; waiting || (len(c.pending) > 0 && time.Now().Before(c.retryAt)) {
		// The helper's limit is spent: join the queue rather than be refused (the latest request per key goes).
		c.pending[key] = req
		return fmt.Sprintf("%srate limited by the helper; sent again in %d ms", queued, max(0, time.Until(c.retryAt).Milliseconds()))
	}
	return c.sendLocked(key, req, timeout)
}

// resolve returns the origin's addresses: an IP literal, then EnvHosts, then the system resolver.
func (c *actuatorClient) resolve(ctx context.Context, origin string) ([]netip.Addr, error) {
	u, err := url.Parse(origin)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("origin %.80q has no host", origin)
	}
	name := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(name); err == nil {
		addrs = []netip.Addr{ip}
	} else if m, ok := c.hosts[name]; ok {
		addrs = m
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", name); err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if a = a.Unmap(); usableAddr(a) {
			out = append(out, a)
		}
	}
	if len(out) > actuate.MaxAddrs {
		out = out[:actuate.MaxAddrs]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no address a cellular subflow could reach", name)
	}
	return out, nil
}

// Carry hands a decision to the helper, within actuateBudget, and notes the outcome in it (decide.Actuator).
// It never changes the decision itself. A nil client (no helper configured) leaves the decision advisory.
func (c *actuatorClient) Carry(ctx context.Context, d *decide.Decision) {
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, actuateBudget)
	defer cancel()
	addrs, err := c.resolve(ctx, d.Origin)
	if err != nil {
		d.Actuation = clip("skipped: " + err.Error())
		c.log.Warn("actuation", "origin", d.Origin, "err", err)
		return
	}
	strs := make([]string, len(addrs))
	for i, a := range addrs {
		strs[i] = a.String()
	}
	d.ActuationAddrs = clip(strings.Join(strs, ","))
	// The helper's policy: cellular subflows once the origin's connections have received θ1 bytes together,
	// whatever this page is expected to be (single-path decisions carry θ1 too, so a page that turns out large
	// still gets it); never when θ1 is never.
	mp := d.Theta1 != nil
	req := actuate.Request{Verb: actuate.VerbOrigin, LeaseMS: actuatorLease.Milliseconds(), Addrs: strs, Multipath: &mp}
	if mp {
		// The origin's group: its peers (refreshPeers, setPeers copy this request) count towards the same θ1.
		req.Theta1, req.Theta2, req.Group = *d.Theta1, d.Theta2, thetaGroup(d.Origin)
		req.PreferCellular = d.PreferCellular
	}
	res := c.setOrigin(ctx, req, d.Origin)
	c.mu.Lock()
	c.takeBackLocked(d.Origin, req)
	c.mu.Unlock()
	if res == "ok" {
		c.refreshPeers(ctx, d.Origin, req)
	}
	d.Actuation = clip(res)
	c.log.Info("actuation", "origin", d.Origin, "multipath", mp, "addrs", strs, "result", res)
}

// refreshPeers puts the addresses the origin's pages reported (peers) under its new decision, if it changed,
// less those another decision that differs from the new one holds.
func (c *actuatorClient) refreshPeers(ctx context.Context, origin string, page actuate.Request) {
	c.mu.Lock()
	prev, ok := c.replay[peersKey(origin)]
	var addrs []string
	for _, a := range prev.Addrs {
		if _, taken := c.claimLocked(netip.MustParseAddr(a), origin, page); !taken {
			addrs = append(addrs, a)
		}
	}
	c.mu.Unlock()
	if !ok || samePolicy(prev, page) || len(addrs) == 0 {
		return
	}
	req := page
	req.Addrs = addrs
	if res := c.setOrigin(ctx, req, peersKey(origin)); res != "ok" {
		c.log.Warn("actuation of peers", "origin", origin, "result", res)
	}
}

// thetaGroup names an origin's θ1 group for the helper (actuate.OriginPolicy.Group): a hash of the origin,
// never 0 (no group). Two origins that collide would only count their bytes together, never cross users.
func thetaGroup(origin string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(origin))
	if g := h.Sum32(); g != 0 {
		return g
	}
	return 1
}

func equalCap(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func clip(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

// ActuatorHealth is what status reports of the privileged helper: "connected" (with its backend),
// "unavailable" (configured but not reachable: the message says why) or "not_configured" (MPSURF_ACTUATOR unset,
// so decisions are advisory: the header is sent, the kernel is not changed).
type ActuatorHealth struct {
	State   string `json:"state"`
	Backend string `json:"backend,omitempty"`
	Detail  string `json:"detail"`
}

// health reports the helper's state without waiting on it.
func (c *actuatorClient) health() ActuatorHealth {
	if c == nil {
		return ActuatorHealth{State: "not_configured", Detail: "no privileged helper (" + DefaultActuator + " absent, " + EnvActuator + " unset or off): decisions go into the header but the kernel is not changed"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil && c.session != "" {
		return ActuatorHealth{State: "connected", Backend: c.backend, Detail: c.path}
	}
	return ActuatorHealth{State: "unavailable", Detail: c.path + ": " + c.lastErr}
}

// BrowserMPTCP says whether the browser that started this host wraps its sockets as MPTCP, and which way, if any,
// its pages reach a second path. mptcpize works by LD_PRELOAD of libmptcpwrap, which the browser's children
// inherit, so the host sees it in its own environment. The ways, in the order they are taken:
//   - "mptcpize": the browser's own connections are MPTCP (mpsurf-browser, a "(multipath)" launcher, or
//     mptcpize run by hand), so the helper can give any site's connections a cellular subflow;
//   - "relay": the browser's sockets are plain TCP, but a proxy is configured: sites the PAC sends through the
//     relay go over MPTCP between the relay and the proxy (README "Use it on the real web"); the rest stay single path;
//   - "none": neither, so no page can use a second path.
type BrowserMPTCP struct {
	Wrapped bool   `json:"wrapped"`
	Way     string `json:"way"`
	Detail  string `json:"detail"`
}

func browserMPTCP(relay bool) BrowserMPTCP {
	pre := os.Getenv("LD_PRELOAD")
	switch {
	case strings.Contains(pre, "mptcpwrap"):
		return BrowserMPTCP{Wrapped: true, Way: "mptcpize", Detail: "the browser runs under mptcpize (LD_PRELOAD=" + clip(pre) + ")"}
	case relay:
		return BrowserMPTCP{Wrapped: false, Way: "relay", Detail: "the browser was started without mptcpize; sites sent through your MPTCP proxy still use both paths (the relay's connections are MPTCP)"}
	}
	return BrowserMPTCP{Wrapped: false, Way: "none", Detail: "the browser was started without mptcpize (no libmptcpwrap in LD_PRELOAD) and no MPTCP proxy is set"}
}
