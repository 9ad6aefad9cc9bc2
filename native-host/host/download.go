package host

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
	TypeDownloadOffer   = "download_offer"
	TypeDownloadControl = "download_control"
	TypeDownloadList    = "download_list"
	TypeDownloadPush    = "download"
)

// EnvDownloadCA names a PEM file of extra roots the host's downloads trust (a private server's; the testbed's).
const EnvDownloadCA = "MPSURF_DOWNLOAD_CA"

// Download states.
const (
	DownloadDeclined = "declined" // the model (or a rule) chose single path: the browser's own download goes on
	DownloadStarting = "starting" // asking the server; the browser's download goes on until "running"
	DownloadRunning  = "running"  // the first response checked out: the browser may cancel its own download
	DownloadPaused   = "paused"
	DownloadDone     = "done"
	DownloadFailed   = "failed"
	DownloadCanceled = "canceled"
)

// Limits of an offer.
const (
	maxDownloadID     = 64
	maxDownloadURL    = 8192
	maxDownloadPath   = 4096
	maxCookieHeader   = 16384
	maxHeaderValue    = 8192
	maxActiveDownload = 8
	downloadPushEvery = 500 * time.Millisecond
)

// DownloadPath is one path's share of a download.
type DownloadPath struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
}

// DownloadState is the body of download replies and pushes.
type DownloadState struct {
	ID        string         `json:"id"`
	State     string         `json:"state"`
	URL       string         `json:"url"`
	File      string         `json:"file"`
	Size      int64          `json:"size"`
	Received  int64          `json:"received"`
	Paths     []DownloadPath `json:"paths"`
	Multipath bool           `json:"multipath"`
	Reason    string         `json:"reason"`
	Digest    string         `json:"digest,omitempty"`
	ElapsedMS int64          `json:"elapsed_ms"`
}

type downloadOffer struct {
	id, url, origin, file, proto string
	size                         int64
	header                       http.Header
	resume                       bool
}

type download struct {
	offer downloadOffer
	// single is closed when multipath is paused while the download runs over two paths (downloadHub.pause); a
	// new one comes with each start.
	single     chan struct{}
	singleOnce *sync.Once
	kinds      map[string]string // path name -> kind
	priors     map[string]mph2.Prior
	paths      []mph2.Path
	cap        int64
	mu         sync.Mutex
	st         DownloadState
	cancel     context.CancelCauseFunc
	done       chan struct{}
	started    time.Time
}

type downloadHub struct {
	s      *Server
	mu     sync.Mutex
	items  map[string]*download
	pushes chan any
	wg     sync.WaitGroup
}

func newDownloadHub(s *Server) *downloadHub {
	return &downloadHub{s: s, items: map[string]*download{}, pushes: make(chan any, 32)}
}

var (
	errPaused   = errors.New("paused")
	errCanceled = errors.New("canceled")
)

func (s *Server) downloadOffer(req protocol.Request) protocol.Reply {
	o, perr := parseDownloadOffer(req.Body)
	if perr != nil {
		s.log.Warn("download offer refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	h := s.downloads
	h.mu.Lock()
	if d := h.items[o.id]; d != nil {
		h.mu.Unlock()
		return protocol.OK(req, d.state())
	}
	active := 0
	for _, d := range h.items {
		if st := d.state().State; st == DownloadStarting || st == DownloadRunning {
			active++
		}
	}
	h.mu.Unlock()
	st := DownloadState{ID: o.id, URL: o.url, File: o.file, Size: o.size, State: DownloadDeclined}
	if active >= maxActiveDownload {
		st.Reason = fmt.Sprintf("%d downloads are running already", active)
		return protocol.OK(req, st)
	}
	s.paused.mu.Lock()
	paused := s.paused.why
	s.paused.mu.Unlock()
	dec, err := s.dec.Transfer(context.Background(), decide.Request{Origin: o.origin, Tab: -1, Nav: "download-" + o.id, Paused: paused}, o.size, o.proto)
	if err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodePolicyUnavailable, "%v", err))
	}
	s.logTransfer(req, o, dec)
	st.Multipath, st.Reason = dec.Multipath, dec.Reason
	primary, secondary := s.dec.Interfaces()
	use := []*paths.Path{primary, secondary}
	switch {
	case o.resume:
		// The browser's own download was cancelled when this one started: declining now would lose the file.
		// Without multipath it resumes on one path.
		use = nil
		for _, p := range []*paths.Path{primary, secondary} {
			if p != nil && (dec.Multipath || len(use) == 0) {
				use = append(use, p)
			}
		}
		if len(use) == 0 {
			return protocol.OK(req, DownloadState{ID: o.id, URL: o.url, File: o.file, Size: o.size, State: DownloadFailed,
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
	st.State = DownloadStarting
	d.st = st
	h.mu.Lock()
	h.items[o.id] = d
	h.mu.Unlock()
	h.start(d, o.resume)
	return protocol.OK(req, d.state())
}

// logTransfer puts the transfer's decision in the decision log, with a request that names the origin and size
// only: the URL and the request's headers (cookies) stay out of the log.
func (s *Server) logTransfer(req protocol.Request, o downloadOffer, dec decide.Decision) {
	if s.rec.db == nil {
		return
	}
	logged, _ := json.Marshal(map[string]any{"kind": "download", "origin": o.origin, "size": o.size, "protocol": o.proto})
	body := dec.Body()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.rec.db.LogDecision(ctx, logged, body.Decision, body, store.DecisionMeta{Basis: string(dec.Basis)}); err != nil {
		s.log.Error("download decision not logged", "origin", o.origin, "err", err)
	}
	s.decisions.Add(1)
}

// start runs the download in the background; it pushes its state as it goes.
func (h *downloadHub) start(d *download, resume bool) {
	ctx, cancel := context.WithCancelCause(context.Background())
	d.mu.Lock()
	d.cancel = cancel
	d.done = make(chan struct{})
	d.st.State = DownloadStarting
	d.mu.Unlock()
	tlsConf, err := downloadTLS()
	if err != nil {
		h.finish(d, mph2.Result{}, err)
		return
	}
	resolve, _ := ParseHosts(os.Getenv(EnvHosts))
	use := d.paths
	if h.s.isPaused() != "" && len(use) > 1 {
		use = use[:1] // resumed during a pause: the first path alone
	}
	d.mu.Lock()
	d.single, d.singleOnce = make(chan struct{}), new(sync.Once)
	d.mu.Unlock()
	o := mph2.Options{
		URL: d.offer.url, Header: d.offer.header, Paths: use, Out: d.offer.file, Size: d.offer.size, DropSecondary: d.single,
		Resume: resume, SecondaryCap: d.cap, Priors: d.priors, TLS: tlsConf, Resolve: resolve, Log: h.s.log.With("download", d.offer.id),
		ProgressEvery: downloadPushEvery,
		OnStart: func(int64) {
			d.mu.Lock()
			d.st.State = DownloadRunning
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

func (d *download) pathsOf(ps []mph2.PathStat) []DownloadPath {
	out := make([]DownloadPath, len(ps))
	for i, p := range ps {
		out[i] = DownloadPath{Name: p.Name, Kind: d.kinds[p.Name], Bytes: p.Bytes}
	}
	return out
}

func (h *downloadHub) finish(d *download, res mph2.Result, err error) {
	d.mu.Lock()
	d.st.Paths = d.pathsOf(res.Paths)
	d.st.ElapsedMS = time.Since(d.started).Milliseconds()
	switch {
	case err == nil:
		d.st.State, d.st.File, d.st.Received, d.st.Digest = DownloadDone, res.File, res.Size, res.Digest
		if res.Fallback != "" {
			d.st.Reason = "finished on one path: " + res.Fallback
		}
	case errors.Is(err, errPaused):
		d.st.State = DownloadPaused
	case errors.Is(err, errCanceled):
		d.st.State, d.st.Reason = DownloadCanceled, "canceled"
		mph2.RemovePart(d.offer.file)
	default:
		wasRunning := d.st.State == DownloadRunning
		d.st.State, d.st.Reason = DownloadFailed, clip(err.Error())
		if !wasRunning {
			// The browser's own download still runs: nothing of ours may stay behind.
			mph2.RemovePart(d.offer.file)
		}
	}
	close(d.done)
	d.mu.Unlock()
	h.s.log.Info("download ended", "download", d.offer.id, "state", d.st.State, "bytes", res.Size, "ms", res.ElapsedMS, "reason", d.st.Reason)
	h.push(d)
}

func (d *download) state() DownloadState {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.st
	st.Paths = append([]DownloadPath(nil), d.st.Paths...)
	return st
}

// push queues a download push; a full queue drops it (the next one carries newer numbers), never a final state,
// which waits for room.
func (h *downloadHub) push(d *download) {
	st := d.state()
	p := protocol.Push{V: protocol.Version, Type: TypeDownloadPush, Push: true, Body: st}
	switch st.State {
	case DownloadStarting, DownloadRunning:
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
	obj, perr := protocol.AsObject(req.Body, "body")
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	action, perr := obj.OneOf("action", "pause", "resume", "cancel", "discard")
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	if action == "discard" {
		// A partial file a stopped host left (the extension keeps the list): remove it and its sidecar only.
		file, perr := downloadFile(obj)
		if perr != nil {
			return protocol.Fail(req, perr)
		}
		if err := mph2.RemovePart(file); err != nil {
			return protocol.Fail(req, protocol.Errorf(protocol.CodeInternal, "%v", err))
		}
		return protocol.OK(req, DownloadState{File: file, State: DownloadCanceled, Reason: "partial file removed"})
	}
	id, perr := obj.String("id", maxDownloadID)
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	h := s.downloads
	h.mu.Lock()
	d := h.items[id]
	h.mu.Unlock()
	if d == nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeBadRequest, "id: no download %q in this host", id))
	}
	st := d.state()
	switch action {
	case "pause":
		if st.State == DownloadStarting || st.State == DownloadRunning {
			d.cancel(errPaused)
			<-d.done
		}
	case "resume":
		if st.State == DownloadPaused || st.State == DownloadFailed && st.Received > 0 {
			h.start(d, true)
		}
	case "cancel":
		switch st.State {
		case DownloadStarting, DownloadRunning:
			d.cancel(errCanceled)
			<-d.done
		case DownloadPaused, DownloadFailed:
			mph2.RemovePart(d.offer.file)
			d.mu.Lock()
			d.st.State, d.st.Reason = DownloadCanceled, "canceled"
			d.mu.Unlock()
			h.push(d)
		}
	}
	return protocol.OK(req, d.state())
}

// DownloadList is the body of a download_list reply.
type DownloadList struct {
	Downloads []DownloadState `json:"downloads"`
}

func (s *Server) downloadList(req protocol.Request) protocol.Reply {
	h := s.downloads
	h.mu.Lock()
	out := DownloadList{Downloads: []DownloadState{}}
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

func downloadTLS() (*tls.Config, error) {
	var extra []byte
	if f := os.Getenv(EnvDownloadCA); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvDownloadCA, err)
		}
		extra = b
	}
	return mph2.TLSWithRoots(extra)
}

// parseDownloadOffer checks a download_offer body (PROTOCOL.md §4 Downloads).
func parseDownloadOffer(body json.RawMessage) (downloadOffer, *protocol.Error) {
	var o downloadOffer
	obj, perr := protocol.AsObject(body, "body")
	if perr != nil {
		return o, perr
	}
	if o.id, perr = obj.String("id", maxDownloadID); perr != nil {
		return o, perr
	}
	if o.id == "" {
		return o, protocol.Errorf(protocol.CodeBadRequest, "id: empty")
	}
	if o.url, perr = obj.String("url", maxDownloadURL); perr != nil {
		return o, perr
	}
	u, err := url.Parse(o.url)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return o, protocol.Errorf(protocol.CodeBadRequest, "url: not an https URL without credentials")
	}
	u.Fragment = ""
	o.url = u.String()
	raw, perr := obj.String("origin", -1)
	if perr != nil {
		return o, perr
	}
	if o.origin, err = protocol.NormalizeOrigin(raw); err != nil {
		return o, protocol.Errorf(protocol.CodeBadOrigin, "origin: %v", err)
	}
	if want, _ := protocol.NormalizeOrigin(u.Scheme + "://" + u.Host); want != o.origin {
		return o, protocol.Errorf(protocol.CodeBadRequest, "origin: %s is not the URL's origin", o.origin)
	}
	if o.size, perr = obj.Int("size", 1, 1<<50); perr != nil {
		return o, perr
	}
	if o.file, perr = downloadFile(obj); perr != nil {
		return o, perr
	}
	if obj.Has("protocol") {
		if o.proto, perr = obj.OneOf("protocol", "h2", "http/1.1", ""); perr != nil {
			return o, perr
		}
	}
	if obj.Has("resume") {
		if o.resume, perr = obj.Bool("resume"); perr != nil {
			return o, perr
		}
	}
	o.header = http.Header{}
	if obj.Has("headers") {
		hs, perr := protocol.AsObject(obj["headers"], "headers")
		if perr != nil {
			return o, perr
		}
		limits := map[string]int{"cookie": maxCookieHeader, "authorization": maxHeaderValue, "referer": maxHeaderValue, "user-agent": 512}
		for name := range hs {
			lim, ok := limits[name]
			if !ok {
				return o, protocol.Errorf(protocol.CodeBadRequest, "headers.%.40s: not one of cookie, authorization, referer, user-agent", name)
			}
			v, perr := hs.String(name, lim)
			if perr != nil {
				return o, protocol.Errorf(protocol.CodeBadRequest, "headers.%s", perr.Message)
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				return o, protocol.Errorf(protocol.CodeBadRequest, "headers.%s: control characters", name)
			}
			if v != "" {
				o.header.Set(name, v)
			}
		}
	}
	return o, nil
}

// downloadFile reads the "file" field: an absolute path whose directory exists.
func downloadFile(obj protocol.Object) (string, *protocol.Error) {
	f, perr := obj.String("file", maxDownloadPath)
	if perr != nil {
		return "", perr
	}
	if !filepath.IsAbs(f) || filepath.Clean(f) != f || strings.ContainsRune(f, 0) {
		return "", protocol.Errorf(protocol.CodeBadRequest, "file: not a clean absolute path")
	}
	if fi, err := os.Stat(filepath.Dir(f)); err != nil || !fi.IsDir() {
		return "", protocol.Errorf(protocol.CodeBadRequest, "file: its directory does not exist")
	}
	return f, nil
}
