package host

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/carry"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/mph2"
	"github.com/mpsurf/mpsurf/native-host/paths"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// Downloads the browser hands over (PROTOCOL.md §4 Downloads): the host decides with the same model whether the
// transfer is worth both links and, if so, fetches it with the MP-H2 scheduler (native-host/mph2) into the file
// the browser chose. The request's cookies and authorization live in memory for that one download only: never
// logged, never written.
const (
	maxActiveDownload = 8
	downloadPushEvery = 500 * time.Millisecond
)

// Downloads are the settings of handed-over downloads.
type Downloads struct {
	// Hosts name addresses ahead of the system resolver, as for the helper.
	Hosts carry.Hosts
	// CA is a PEM file of extra roots the downloads trust (a private server's; the testbed's); "": none. It is
	// read when a download starts.
	CA string
}

type download struct {
	offer protocol.DownloadOffer
	// single is closed when multipath is paused while the download runs over two paths (downloadHub.pause); a
	// new one comes with each start.
	single     chan struct{}
	singleOnce *sync.Once
	kinds      map[string]string // path name -> kind
	priors     map[string]mph2.Prior
	paths      []mph2.Path
	cap        int64
	mu         sync.Mutex
	st         protocol.DownloadState
	cancel     context.CancelCauseFunc
	done       chan struct{}
	started    time.Time
}

type downloadHub struct {
	cfg    Downloads
	paused func() string // why multipath is paused, "" while it is not
	log    *slog.Logger
	mu     sync.Mutex
	items  map[string]*download
	pushes chan any
	wg     sync.WaitGroup
}

func newDownloadHub(cfg Downloads, paused func() string, log *slog.Logger) *downloadHub {
	return &downloadHub{cfg: cfg, paused: paused, log: log, items: map[string]*download{}, pushes: make(chan any, 32)}
}

var (
	errPaused   = errors.New("paused")
	errCanceled = errors.New("canceled")
)

func (s *Server) downloadOffer(req protocol.Request) protocol.Reply {
	o, perr := protocol.ParseDownloadOffer(req.Body, isDir)
	if perr != nil {
		s.log.Warn("download offer refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	h := s.downloads
	h.mu.Lock()
	if d := h.items[o.ID]; d != nil {
		h.mu.Unlock()
		return protocol.OK(req, d.state())
	}
	active := 0
	for _, d := range h.items {
		if st := d.state().State; st == protocol.DownloadStarting || st == protocol.DownloadRunning {
			active++
		}
	}
	h.mu.Unlock()
	st := protocol.DownloadState{ID: o.ID, URL: o.URL, File: o.File, Size: o.Size, State: protocol.DownloadDeclined}
	if active >= maxActiveDownload {
		st.Reason = fmt.Sprintf("%d downloads are running already", active)
		return protocol.OK(req, st)
	}
	dec, err := s.dec.Transfer(context.Background(), decide.Request{Origin: o.Origin, Tab: -1, Nav: "download-" + o.ID, Paused: s.carry.Paused()}, o.Size, o.Proto)
	if err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodePolicyUnavailable, "%v", err))
	}
	s.logTransfer(req, o, dec)
	st.Multipath, st.Reason = dec.Multipath, dec.Reason
	primary, secondary := s.dec.Interfaces()
	use := []*paths.Path{primary, secondary}
	switch {
	case o.Resume:
		// The browser's own download was cancelled when this one started: declining now would lose the file.
		// Without multipath it resumes on one path.
		use = nil
		for _, p := range []*paths.Path{primary, secondary} {
			if p != nil && (dec.Multipath || len(use) == 0) {
				use = append(use, p)
			}
		}
		if len(use) == 0 {
			return protocol.OK(req, protocol.DownloadState{ID: o.ID, URL: o.URL, File: o.File, Size: o.Size, State: protocol.DownloadFailed,
				Reason: "no network interface is up to resume on"})
		}
		st.Multipath = len(use) == 2
	case !dec.Multipath:
		return protocol.OK(req, st)
	case primary == nil || secondary == nil:
		st.Multipath = false
		st.Reason = "single path: the host does not see both a WiFi (or wired) and a cellular interface up"
		return protocol.OK(req, st)
	}
	d := &download{offer: o, kinds: map[string]string{}, priors: map[string]mph2.Prior{}, done: make(chan struct{}), started: time.Now()}
	for _, p := range use {
		mp := mph2.Path{Name: p.Name, Interface: p.Name}
		for _, a := range p.Addrs {
			if pfx, err := netip.ParsePrefix(a); err == nil && pfx.Addr().Is4() {
				mp.Addr = pfx.Addr()
				break
			} else if ip, err := netip.ParseAddr(a); err == nil && ip.Is4() {
				mp.Addr = ip
				break
			}
		}
		d.paths = append(d.paths, mp)
		d.kinds[p.Name] = p.Kind
		if p.DownBPS != nil && p.RTTMS != nil && *p.DownBPS > 0 && *p.RTTMS > 0 {
			// What the host measured of the link seeds the scheduler's first split (seed 003 §3.6).
			d.priors[p.Name] = mph2.Prior{BPS: *p.DownBPS, RTT: time.Duration(*p.RTTMS * float64(time.Millisecond))}
		}
	}
	if dec.Theta2 != nil {
		d.cap = max(*dec.Theta2, 1) // θ2 = 0 decides single path above; a cap is never "none" here
	}
	st.State = protocol.DownloadStarting
	d.st = st
	h.mu.Lock()
	h.items[o.ID] = d
	h.mu.Unlock()
	h.start(d, o.Resume)
	return protocol.OK(req, d.state())
}

// logTransfer queues the transfer's decision for the decision log, with a request that names the origin and size
// only: the URL and the request's headers (cookies) stay out of the log.
func (s *Server) logTransfer(req protocol.Request, o protocol.DownloadOffer, dec decide.Decision) {
	if s.rec.db == nil {
		return
	}
	logged, _ := json.Marshal(map[string]any{"kind": "download", "origin": o.Origin, "size": o.Size, "protocol": o.Proto})
	body := dec.Body()
	s.dlog.add(req.ID, store.DecisionRow{Request: logged, Decision: body.Decision, Reply: body,
		Meta: store.DecisionMeta{Basis: string(dec.Basis), At: time.Now()}})
	s.decisions.Add(1)
}

// start runs the download in the background; it pushes its state as it goes.
func (h *downloadHub) start(d *download, resume bool) {
	ctx, cancel := context.WithCancelCause(context.Background())
	d.mu.Lock()
	d.cancel = cancel
	d.done = make(chan struct{})
	d.st.State = protocol.DownloadStarting
	d.mu.Unlock()
	tlsConf, err := h.tls()
	if err != nil {
		h.finish(d, mph2.Result{}, err)
		return
	}
	use := d.paths
	if h.paused() != "" && len(use) > 1 {
		use = use[:1] // resumed during a pause: the first path alone
	}
	d.mu.Lock()
	d.single, d.singleOnce = make(chan struct{}), new(sync.Once)
	d.mu.Unlock()
	o := mph2.Options{
		URL: d.offer.URL, Header: d.offer.Header, Paths: use, Out: d.offer.File, Size: d.offer.Size, DropSecondary: d.single,
		Resume: resume, SecondaryCap: d.cap, Priors: d.priors, TLS: tlsConf, Resolve: h.cfg.Hosts, Log: h.log.With("download", d.offer.ID),
		ProgressEvery: downloadPushEvery,
		OnStart: func(int64) {
			d.mu.Lock()
			d.st.State = protocol.DownloadRunning
			d.mu.Unlock()
			h.push(d)
		},
		Progress: func(p mph2.Progress) {
			d.mu.Lock()
			d.st.Received = p.Received
			d.st.Paths = d.pathsOf(p.Paths)
			d.st.ElapsedMS = time.Since(d.started).Milliseconds()
			d.mu.Unlock()
			h.push(d)
		},
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		res, err := mph2.Fetch(ctx, o)
		if errors.Is(err, mph2.ErrStopped) {
			err = context.Cause(ctx)
		}
		h.finish(d, res, err)
	}()
	h.push(d)
}

func (d *download) pathsOf(ps []mph2.PathStat) []protocol.DownloadPath {
	out := make([]protocol.DownloadPath, len(ps))
	for i, p := range ps {
		out[i] = protocol.DownloadPath{Name: p.Name, Kind: d.kinds[p.Name], Bytes: p.Bytes}
	}
	return out
}

func (h *downloadHub) finish(d *download, res mph2.Result, err error) {
	d.mu.Lock()
	d.st.Paths = d.pathsOf(res.Paths)
	d.st.ElapsedMS = time.Since(d.started).Milliseconds()
	switch {
	case err == nil:
		d.st.State, d.st.File, d.st.Received, d.st.Digest = protocol.DownloadDone, res.File, res.Size, res.Digest
		if res.Fallback != "" {
			d.st.Reason = "finished on one path: " + res.Fallback
		}
	case errors.Is(err, errPaused):
		d.st.State = protocol.DownloadPaused
	case errors.Is(err, errCanceled):
		d.st.State, d.st.Reason = protocol.DownloadCanceled, "canceled"
		mph2.RemovePart(d.offer.File)
	default:
		wasRunning := d.st.State == protocol.DownloadRunning
		d.st.State, d.st.Reason = protocol.DownloadFailed, clip(err.Error())
		if !wasRunning {
			// The browser's own download still runs: nothing of ours may stay behind.
			mph2.RemovePart(d.offer.File)
		}
	}
	close(d.done)
	d.mu.Unlock()
	h.log.Info("download ended", "download", d.offer.ID, "state", d.st.State, "bytes", res.Size, "ms", res.ElapsedMS, "reason", d.st.Reason)
	h.push(d)
}

func (d *download) state() protocol.DownloadState {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.st
	st.Paths = append([]protocol.DownloadPath(nil), d.st.Paths...)
	return st
}

// push queues a download push; a full queue drops it (the next one carries newer numbers), never a final state,
// which waits for room.
func (h *downloadHub) push(d *download) {
	st := d.state()
	p := protocol.Push{V: protocol.Version, Type: protocol.TypeDownloadPush, Push: true, Body: st}
	switch st.State {
	case protocol.DownloadStarting, protocol.DownloadRunning:
		select {
		case h.pushes <- p:
		default:
		}
	default:
		select {
		case h.pushes <- p:
		case <-time.After(2 * time.Second):
		}
	}
}

func (s *Server) downloadControl(req protocol.Request) protocol.Reply {
	c, perr := protocol.ParseDownloadControl(req.Body, isDir)
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	if c.Action == "discard" {
		// A partial file a stopped host left (the extension keeps the list): remove it and its sidecar only.
		if err := mph2.RemovePart(c.File); err != nil {
			return protocol.Fail(req, protocol.Errorf(protocol.CodeInternal, "%v", err))
		}
		return protocol.OK(req, protocol.DownloadState{File: c.File, State: protocol.DownloadCanceled, Reason: "partial file removed"})
	}
	h := s.downloads
	h.mu.Lock()
	d := h.items[c.ID]
	h.mu.Unlock()
	if d == nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeBadRequest, "id: no download %q in this host", c.ID))
	}
	st := d.state()
	switch c.Action {
	case "pause":
		if st.State == protocol.DownloadStarting || st.State == protocol.DownloadRunning {
			d.cancel(errPaused)
			<-d.done
		}
	case "resume":
		if st.State == protocol.DownloadPaused || st.State == protocol.DownloadFailed && st.Received > 0 {
			h.start(d, true)
		}
	case "cancel":
		switch st.State {
		case protocol.DownloadStarting, protocol.DownloadRunning:
			d.cancel(errCanceled)
			<-d.done
		case protocol.DownloadPaused, protocol.DownloadFailed:
			mph2.RemovePart(d.offer.File)
			d.mu.Lock()
			d.st.State, d.st.Reason = protocol.DownloadCanceled, "canceled"
			d.mu.Unlock()
			h.push(d)
		}
	}
	return protocol.OK(req, d.state())
}

func (s *Server) downloadList(req protocol.Request) protocol.Reply {
	h := s.downloads
	h.mu.Lock()
	out := protocol.DownloadList{Downloads: []protocol.DownloadState{}}
	for _, d := range h.items {
		out.Downloads = append(out.Downloads, d.state())
	}
	h.mu.Unlock()
	return protocol.OK(req, out)
}

// pause drops the cellular path of every download running over two (multipath paused, a cap reached): the rest of
// each goes over the first path (mph2 Options.DropSecondary).
func (h *downloadHub) pause() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.items {
		d.mu.Lock()
		if ch, once := d.single, d.singleOnce; ch != nil && once != nil {
			once.Do(func() { close(ch) })
		}
		d.mu.Unlock()
	}
}

// stop pauses every running download (the browser went away), waiting at most wait for their sidecars.
func (h *downloadHub) stop(wait time.Duration) {
	h.mu.Lock()
	for _, d := range h.items {
		if d.cancel != nil {
			d.cancel(errPaused)
		}
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
	}
}

// tls is the downloads' TLS configuration: the system's roots and the extra ones in Downloads.CA.
func (h *downloadHub) tls() (*tls.Config, error) {
	var extra []byte
	if f := h.cfg.CA; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("extra roots for downloads: %w", err)
		}
		extra = b
	}
	return mph2.TLSWithRoots(extra)
}

// isDir says whether a directory exists: an offered file's must.
func isDir(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}
