package carry

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/actuate"
)

// DefaultHelper is the privileged helper's socket as the installed systemd unit makes it
// (packaging/systemd/mpsurf-actuator.service).
const DefaultHelper = "/run/mpsurf/actuator.sock"

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

// helper is the host's side of the privileged helper's socket: one connection, one session, a lease renewed in
// the background, reconnection with backoff. Requests are one line out, one line back, under mu.
type helper struct {
	path  string
	hosts Hosts
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
func (c *helper) pauseAll() string {
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
func (c *helper) resumeAll() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.paused = false
	c.mu.Unlock()
}

// newHelper returns the client of the helper at the socket path; start connects it.
func newHelper(path string, hosts Hosts, log *slog.Logger) *helper {
	return &helper{path: path, hosts: hosts, log: log, ready: make(chan struct{}), replay: map[string]actuate.Request{},
		lastErr: "not connected yet"}
}

// start runs the session and the retries of rate-limited requests until the process ends.
func (c *helper) start() {
	if c.pending == nil {
		c.pending = map[string]actuate.Request{}
	}
	c.kick = make(chan struct{}, 1)
	go c.run()
	go c.retryLoop()
}

// run keeps a session open until the process ends.
func (c *helper) run() {
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

func (c *helper) connect() error {
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
func (c *helper) sendLocked(key string, req actuate.Request, timeout time.Duration) string {
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
func (c *helper) retryLoop() {
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

func (c *helper) renewLoop() error {
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

func (c *helper) drop(err error) {
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

func (c *helper) closeLocked() {
	c.conn.Close()
	c.conn, c.r, c.session = nil, nil, ""
}

// errRefused is a helper's refusal: the connection stays good.
type errRefused struct{ code, msg string }

func (e *errRefused) Error() string { return e.code + ": " + e.msg }

// callLocked sends one request and reads its response. A transport error closes the connection; the run loop
// reconnects.
func (c *helper) callLocked(req actuate.Request, timeout time.Duration) (actuate.Response, error) {
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
func (c *helper) setOrigin(ctx context.Context, req actuate.Request, key string) string {
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

// ActuatorHealth is what status reports of the privileged helper: "connected" (with its backend),
// "unavailable" (configured but not reachable: the message says why) or "not_configured" (no helper's socket,
// so decisions are advisory: the header is sent, the kernel is not changed).
type ActuatorHealth struct {
	State   string `json:"state"`
	Backend string `json:"backend,omitempty"`
	Detail  string `json:"detail"`
}

// health reports the helper's state without waiting on it.
func (c *helper) health() ActuatorHealth {
	if c == nil {
		return ActuatorHealth{State: "not_configured", Detail: "no privileged helper (" + DefaultHelper + " absent, MPSURF_ACTUATOR unset or off): decisions go into the header but the kernel is not changed"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil && c.session != "" {
		return ActuatorHealth{State: "connected", Backend: c.backend, Detail: c.path}
	}
	return ActuatorHealth{State: "unavailable", Detail: c.path + ": " + c.lastErr}
}

// call sends one request on the helper session (a per-connection policy: not replayed after a reconnect, since
// the connection's lifetime is the tunnel's). A nil client (no helper configured) answers "not_configured".
func (c *helper) call(ctx context.Context, req actuate.Request) string {
	if c == nil {
		return "not_configured"
	}
	select {
	case <-c.ready:
	case <-ctx.Done():
		return "unavailable: helper not reached yet"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return "unavailable: " + c.lastErr
	}
	if c.paused {
		req = singlePath(req) // a tunnel's policy looked up before the pause, sent after it
	}
	req.Session = c.session
	timeout := actuateBudget
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), 10*time.Millisecond)
	}
	_, err := c.callLocked(req, timeout)
	var ref *errRefused
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &ref):
		return "refused: " + ref.Error()
	}
	return "unavailable: " + err.Error()
}
