package carry

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/actuate"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/relay"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// Config is what a Carrier is built from. cmd/mpsurf-host fills it once, from its environment and the proxy
// settings file; nothing in this package reads the environment.
type Config struct {
	// Helper is the privileged helper's socket (mpsurf-actuator --socket); "": no helper, so decisions stay
	// advisory (the header is sent, the kernel is not changed).
	Helper string
	// Hosts name addresses ahead of the system resolver, for the helper and for the sites the relay dials itself.
	Hosts Hosts
	// ProxyFile is where the MPTCP proxy's settings live (ReadProxyConfig, WriteProxyConfig). Proxy is what the
	// caller read from it, nil when there was nothing to read, and ProxyErr why it could not be read (an absent
	// file is no error).
	ProxyFile string
	Proxy     *relay.Upstream
	ProxyErr  error
	// Tunnel decides for a proxy tunnel to a host that has no decision of its own (decide.Decider.Tunnel); nil:
	// such a tunnel goes single path.
	Tunnel func(ctx context.Context, origin, paused string) (decide.Decision, error)
	// Store keeps the peers of earlier sessions, the recent decisions whose origins the relay routes at once, and
	// the user's site rules; nil: none of them.
	Store *store.Store
	// Cellular says whether a local address is the cellular interface's, for the relay's per-origin accounting;
	// nil: none is.
	Cellular func(netip.Addr) bool
	// Reached says which of addrs a connection of this user reaches now; nil: ReachedByMe (sock_diag).
	Reached func(addrs []netip.Addr) (map[netip.Addr]bool, error)
	Log     *slog.Logger
}

// Carrier carries decisions out: it hands each to the privileged helper (helper.go, origin.go), lets the
// addresses a page reached follow the page's decision (claims.go, peers.go), routes the proxy leg (relay.go), and
// turns all of it single path while multipath is paused. It is safe for concurrent use.
type Carrier struct {
	log     *slog.Logger
	helper  *helper // nil: no helper configured
	relay   *hub
	store   *store.Store
	reached func([]netip.Addr) (map[netip.Addr]bool, error)
	proxy   *relay.Upstream // the settings to start the relay with

	mu     sync.Mutex
	paused string // why multipath is paused, "" while it is not
}

// New assembles a Carrier; Start sets it going.
func New(cfg Config) *Carrier {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Carrier{log: log, store: cfg.Store, reached: cfg.Reached, proxy: cfg.Proxy}
	if c.reached == nil {
		c.reached = ReachedByMe
	}
	if cfg.Helper != "" {
		c.helper = newHelper(cfg.Helper, cfg.Hosts, log)
	}
	c.relay = &hub{file: cfg.ProxyFile, log: log, paused: c.Paused, tunnel: cfg.Tunnel, cellular: cfg.Cellular,
		call:  func(ctx context.Context, req actuate.Request) string { return c.helper.call(ctx, req) },
		hosts: cfg.Hosts, routes: map[string]hubRoute{}, pushes: make(chan any, 4), sitePort: "443"}
	if cfg.ProxyErr != nil && !errors.Is(cfg.ProxyErr, os.ErrNotExist) {
		c.relay.err, c.relay.errSince = cfg.ProxyErr.Error(), time.Now().UnixMilli()
		log.Warn("proxy settings unreadable", "file", cfg.ProxyFile, "err", cfg.ProxyErr)
	}
	return c
}

// Start connects to the helper (the session lives as long as the process, reconnecting when the helper
// restarts), starts the relay with the proxy's settings, and routes the origins of recent decisions on it before
// the browser asks again. Call it once.
func (c *Carrier) Start() {
	if c.helper != nil {
		c.helper.start()
	}
	if c.proxy != nil {
		c.relay.start(*c.proxy)
	}
	if c.store != nil {
		c.relay.warm(c.store)
	}
}

// Close stops the relay.
func (c *Carrier) Close() { c.relay.close() }

// Carry carries a navigation's decision out: the helper gets its policy for the origin's addresses, within its
// budget, and the decision notes what the helper said (Actuation); the relay applies it to the origin's tunnels;
// and the peers the origin's pages reported in earlier sessions follow it. It never changes the decision itself.
func (c *Carrier) Carry(ctx context.Context, d *decide.Decision) {
	c.helper.carry(ctx, d)
	if d.Paused == "" {
		c.relay.route(d.Origin, relayRoute(*d)) // relay.go: the relay applies it to the origin's tunnels
	} else {
		// A pause says nothing of the site: its tunnels are decided at run time, single path while the pause
		// lasts and by the model after it, and the host does not stay DIRECT once multipath is back.
		c.relay.forget(d.Origin)
	}
	// Off the reply's path: the decide reply gates the page's header, and a third party connects only once the
	// page has loaded enough to name it, hundreds of milliseconds later.
	go c.restorePeers(d.Origin, *d)
}

// Paused says why multipath is paused now, "" when it is not.
func (c *Carrier) Paused() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// SetPause records why multipath is paused ("" when it is not: PROTOCOL.md §4 Pause) and, when that turns it
// from not paused to paused or back, carries the change to every path that could give a connection a cellular
// subflow at once, rather than to the next decision only: the helper undoes what it holds (the cellular subflows
// it opened close, MPTCP moves what they held to WiFi) and takes every later policy as single path until the
// pause ends; the relay's open tunnels are the helper's connections too, and its new ones go single path
// (hub.policy). It says whether it turned.
func (c *Carrier) SetPause(why string) (turned bool) {
	c.mu.Lock()
	changed := c.paused != why
	turned = (c.paused == "") != (why == "")
	c.paused = why
	c.mu.Unlock()
	if changed {
		c.log.Info("pause", "paused", why != "", "why", why)
	}
	switch {
	case !turned:
	case why != "":
		if res := c.helper.pauseAll(); res != "ok" && res != "not_configured" {
			c.log.Warn("pause: the helper did not undo its changes", "result", res)
		}
		c.relay.pause()
	default:
		c.helper.resumeAll()
	}
	return turned
}

// Health is what status reports of the privileged helper.
func (c *Carrier) Health() ActuatorHealth { return c.helper.health() }

// Pushes delivers the relay's state changes as proxy pushes.
func (c *Carrier) Pushes() <-chan any { return c.relay.pushes }

// HasRelay says whether a relay to a configured proxy runs, up or not (status's browser_mptcp.way).
func (c *Carrier) HasRelay() bool { return c.relay.hasRelay() }

// ProxyStatus is what proxy_status answers.
func (c *Carrier) ProxyStatus() ProxyStatus { return c.relay.status() }

// SetProxy saves the MPTCP proxy's settings and starts the relay with them.
func (c *Carrier) SetProxy(up relay.Upstream) error {
	if err := WriteProxyConfig(c.relay.file, up); err != nil {
		return err
	}
	c.log.Info("proxy settings saved", "file", c.relay.file, "server", up.Addr, "user", up.User)
	c.relay.start(up)
	return nil
}

// ClearProxy stops the relay and removes the proxy's settings.
func (c *Carrier) ClearProxy() error {
	c.relay.close()
	if err := os.Remove(c.relay.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	c.relay.mu.Lock()
	c.relay.err = ""
	c.relay.mu.Unlock()
	c.log.Info("proxy settings removed", "file", c.relay.file)
	return nil
}

// TestProxy connects through the proxy to target (host:443; "" the proxy alone) and says what worked.
func (c *Carrier) TestProxy(target string) relay.TestResult {
	c.relay.mu.Lock()
	r := c.relay.relay
	c.relay.mu.Unlock()
	if r == nil {
		return relay.TestResult{Stage: "config", Detail: c.relay.status().Detail}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	res := r.Test(ctx, target, testWait)
	c.log.Info("proxy test", "ok", res.OK, "stage", res.Stage, "subflows", res.Subflows, "cell", res.CellSubflow, "detail", res.Detail)
	return res
}
