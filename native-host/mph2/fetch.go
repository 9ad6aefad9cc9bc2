package mph2

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options describe one download.
type Options struct {
	URL string
	// Header goes on every request (cookies, authorization, user agent, referer); Range, If-Range and
	// Accept-Encoding are the scheduler's own.
	Header http.Header
	// Paths to use, primary first (WiFi, as in seed 003). One path makes a single-path download.
	Paths []Path
	// Out is the final file. The download writes Out+PartSuffix and its sidecar until it is complete and checked.
	Out string
	// Size, when > 0, is the size the caller expects (the browser's Content-Length): a server that says otherwise
	// fails the download before a byte is written. Over two paths it also lets both ask at once (the known-size
	// start, seed 003 §3.6).
	Size int64
	// Resume continues from Out's partial file when its sidecar matches URL; otherwise the download starts over.
	Resume bool
	// SecondaryCap, when > 0, is the most bytes the paths after the first may be given in all (θ2).
	SecondaryCap int64
	// DropSecondary, when closed, stops the paths after the first at once (multipath paused, a cellular cap
	// reached): their connections close, and what they still had to fetch goes to the first path.
	DropSecondary <-chan struct{}
	// Priors are what the caller measured of the paths before (by path name): the scheduler uses them until its own
	// estimates exist, so the first split follows Eq. 1 instead of halving (seed 003 §3.6, MP-H2+BW/L).
	Priors map[string]Prior
	// TLS is the client's TLS configuration (nil: the system's roots).
	TLS *tls.Config
	// Resolve maps host names to addresses ahead of the system resolver.
	Resolve map[string][]netip.Addr
	// HTTP1 offers only http/1.1 in ALPN.
	HTTP1 bool
	// Delta is δ (0: Delta); PathTimeout how long a path may deliver nothing while it owes bytes before it counts
	// as gone and its work moves to the other path (0: 5 s; with one path at least a minute); ProgressEvery how
	// often Progress is called (0: 500 ms).
	Delta, PathTimeout, ProgressEvery time.Duration
	Progress                          func(Progress)
	// OnStart, when set, is called once the first response has been checked (status, size, validators): from
	// then on the download is under way. It must not block.
	OnStart func(size int64)
	Log     *slog.Logger
}

// Prior is an earlier measurement of a path: its downlink rate in bits per second and its RTT.
type Prior struct {
	BPS float64
	RTT time.Duration
}

// PathStat is one path's share of a download.
type PathStat struct {
	Name     string  `json:"name"`
	Proto    string  `json:"proto,omitempty"`
	Bytes    int64   `json:"bytes"`
	Requests int     `json:"requests"`
	BWBps    float64 `json:"bw_bps,omitempty"` // bits per second, the scheduler's last estimate
	RTTMS    float64 `json:"rtt_ms,omitempty"` // the application-layer RTT estimate
	Error    string  `json:"error,omitempty"`  // why the path stopped being used
}

// Progress is a download's state while it runs.
type Progress struct {
	Received int64      `json:"received"`
	Size     int64      `json:"size"` // -1 until known
	Paths    []PathStat `json:"paths"`
}

// Result is what a finished download did.
type Result struct {
	File      string     `json:"file"`
	Size      int64      `json:"size"`
	ElapsedMS float64    `json:"elapsed_ms"`
	Paths     []PathStat `json:"paths"`
	// Requests is the number of GETs sent; Moves how often a range end moved to hand work to the faster path.
	Requests int `json:"requests"`
	Moves    int `json:"moves"`
	// DupBytes counts body bytes received for offsets already on disk; WasteBytes body bytes the servers sent that
	// were thrown away (past a range end, on reset streams, or of an abandoned representation). HTTP/1.1 tails lost
	// with a closed connection are not visible here.
	DupBytes   int64 `json:"dup_bytes"`
	WasteBytes int64 `json:"waste_bytes"`
	// Resumed is how many bytes were on disk from an earlier run.
	Resumed int64 `json:"resumed_bytes"`
	// Fallback says why the download went single-path, "" when it did not.
	Fallback string `json:"fallback,omitempty"`
	// Digest names the digest the file was checked against, "" when the server gave none.
	Digest string `json:"digest,omitempty"`
}

// singlePathTimeout is how long a single-path download may receive nothing before it fails.
const singlePathTimeout = time.Minute

// ErrStopped is returned when the context ends: the partial file and its sidecar stay for a later Resume.
var ErrStopped = errors.New("download stopped; the partial file is kept")

// errTooLarge ends a download whose data went past what the object may be (engine.bound).
var errTooLarge = errors.New("too large")

type pathState struct {
	i        int
	spec     Path
	d        *dialer
	c        conn
	bw       Bandwidth
	streams  []*est
	redial   bool // a new connection is being made (the old one drains after a GOAWAY)
	dead     bool
	errMsg   string
	bytes    int64
	requests int
	assigned int64
}

// est is one request in the engine's books.
type est struct {
	p          *pathState
	s          stream
	start, end int64 // [start, end) wanted; end < 0 until the size is known
	pos        int64 // next offset the engine expects
	first      bool  // the download's first request
	tail       bool  // the known-size start's secondary request, sent before any response was checked
	sent       time.Time
	lastData   time.Time
	ended      bool

	mu      sync.Mutex // the handler's side: the offset it writes at, and whether it may still write
	off     int64
	stopped bool
}

type evKind int

const (
	evConn evKind = iota
	evHead
	evData
	evEnd
)

type event struct {
	kind   evKind
	p      *pathState
	c      conn
	st     *est
	n      int64
	at     time.Time
	err    error
	status int
	h      http.Header
	reply  chan error
}

type engine struct {
	ctx  context.Context
	o    Options
	u    *url.URL
	ev   chan event
	quit chan struct{} // closed when run returns: handlers stop sending
	file *os.File
	part string

	started bool
	checked bool // a first response has been checked: size, validators and range support are known
	size    int64
	// split is where the known-size start divides the object (seed 003 §3.6, MP-H2+FS): the first request stops
	// there and the secondary's starts there. 0 until planned, -1 when there is none.
	split    int64
	tailSent bool // the secondary's request of the known-size start has been sent
	etag     string
	lastMod  string
	ifRange  string
	digest   *expectedDigest
	ranges   bool
	single   bool
	fallback string
	restarts int
	done     Spans
	orphans  []Span
	paths    []*pathState
	res      Result
	t0       time.Time
	resume   *Sidecar
	dirty    bool
	// most bounds the partial file's size (bound), -1 when nothing does; mostWhy names the bound. free is what the
	// disk had free for the file at the start, -1 when unknown. Set before any stream runs, read by their handlers.
	most    int64
	mostWhy string
	free    int64
}

// Fetch downloads o.URL into o.Out over o.Paths.
func Fetch(ctx context.Context, o Options) (Result, error) {
	if len(o.Paths) == 0 {
		return Result{}, errors.New("no path")
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		return Result{}, fmt.Errorf("url: %w", err)
	}
	if o.Delta == 0 {
		o.Delta = Delta
	}
	if o.PathTimeout == 0 {
		o.PathTimeout = 5 * time.Second
	}
	if len(o.Paths) == 1 {
		// With one path, giving it up ends the download: wait out what TCP itself waits out (a radio's outage).
		o.PathTimeout = max(o.PathTimeout, singlePathTimeout)
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 500 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.TLS == nil {
		o.TLS = &tls.Config{}
	}
	e := &engine{o: o, u: u, ev: make(chan event, 256), quit: make(chan struct{}), size: -1, t0: time.Now()}
	e.part, _ = PartPaths(o.Out)
	if o.Resume {
		if sc, err := ReadSidecar(o.Out); err == nil && sc.URL == o.URL && (o.Size <= 0 || sc.Size == o.Size) {
			e.resume = sc
		}
	}
	resumed := false
	if e.file, resumed, err = openPart(e.part, e.resume != nil); err != nil { // part.go: never through a symlink
		return Result{}, err
	}
	if !resumed {
		e.resume = nil
	}
	e.bound(o)
	if e.resume != nil {
		e.done = append(Spans{}, e.resume.Done...)
		e.res.Resumed = e.done.Total()
	}
	for i, p := range o.Paths {
		d, err := newDialer(u, p, o.Resolve, o.TLS, o.HTTP1, 10*time.Second)
		if err != nil {
			e.file.Close()
			return Result{}, err
		}
		ps := &pathState{i: i, spec: p, d: d}
		e.paths = append(e.paths, ps)
		e.dial(ctx, ps)
	}
	e.ctx = ctx
	return e.run(ctx)
}

// bound sets the most bytes the partial file may hold (most, why): the size the caller announced (the browser's
// Content-Length), else what the disk has free. A response that does not say its size is written only that far,
// and one that says it is larger fails before it writes.
func (e *engine) bound(o Options) {
	e.most = -1
	free, ok := freeSpace(filepath.Dir(o.Out))
	if ok {
		if fi, err := e.file.Stat(); err == nil {
			free += fi.Size() // what a resumed file holds is rewritten in place
		}
		e.free = free
	} else {
		e.free = -1
	}
	switch {
	case o.Size > 0:
		e.most, e.mostWhy = o.Size, fmt.Sprintf("the %d bytes announced", o.Size)
	case ok:
		e.most, e.mostWhy = free, fmt.Sprintf("the %d bytes free on the disk", free)
	}
}

// dial connects p in the background; evConn reports the outcome.
func (e *engine) dial(ctx context.Context, p *pathState) {
	target := e.u.RequestURI()
	go func() {
		c, err := e.connect(ctx, p, target)
		if !e.send(event{kind: evConn, p: p, c: c, err: err}) && c != nil {
			c.close()
		}
	}()
}

func (e *engine) connect(ctx context.Context, p *pathState, target string) (conn, error) {
	tc, err := p.d.dialTLS(ctx)
	if err != nil {
		return nil, err
	}
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		c, err := newH2(tc, e.u.Host, target, e.o.Header, e.o.PathTimeout)
		if err != nil {
			return nil, err // not a nil *h2conn inside a non-nil conn: dial would close it
		}
		return c, nil
	}
	return newH1(e.u.String(), e.o.Header, func(ctx context.Context) (net.Conn, error) {
		c, err := p.d.dialTLS(ctx)
		if err != nil {
			return nil, err
		}
		return c, nil
	}, tc), nil
}

// send hands an event to the engine; false once the engine has stopped.
func (e *engine) send(ev event) bool {
	select {
	case e.ev <- ev:
		return true
	case <-e.quit:
		return false
	}
}

func (e *engine) run(ctx context.Context) (res Result, err error) {
	defer close(e.quit)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastProgress, lastSidecar := time.Now(), time.Now()
	drop := e.o.DropSecondary
	defer func() {
		for _, p := range e.paths {
			if p.c != nil {
				p.c.close()
			}
		}
		// Streams may still deliver while they wind down; nothing may write to the file after this.
		for _, p := range e.paths {
			for _, st := range p.streams {
				e.stop(st)
			}
		}
		resumable := e.done.Total() > 0 && e.size > 0 && e.ranges && e.ifRange != ""
		if err != nil && resumable {
			// Bytes on disk, a size, ranges and a validator to check them against: kept for a later Resume.
			e.saveSidecar()
		}
		if e.file != nil {
			e.file.Close()
		}
		if err != nil && !resumable {
			RemovePart(e.o.Out) // a partial file nobody can finish must not stay behind
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return e.result(), fmt.Errorf("%w: %v", ErrStopped, context.Cause(ctx))
		case <-drop:
			drop = nil
			if err := e.dropSecondary(); err != nil {
				return e.result(), err
			}
		case now := <-tick.C:
			if err := e.watch(now); err != nil {
				return e.result(), err
			}
			if now.Sub(lastProgress) >= e.o.ProgressEvery && e.o.Progress != nil {
				lastProgress = now
				e.o.Progress(e.progress())
			}
			if e.dirty && now.Sub(lastSidecar) >= time.Second {
				lastSidecar = now
				e.saveSidecar()
			}
		case ev := <-e.ev:
			var err error
			switch ev.kind {
			case evConn:
				err = e.onConn(ev)
			case evHead:
				reply, fatal := e.onHead(ev.st, ev.status, ev.h)
				ev.reply <- reply
				if fatal != nil {
					return e.result(), fatal
				}
				// The size may be known now: an idle path gets work at once rather than at the first data.
				err = e.kick()
			case evData:
				err = e.onData(ev.st, ev.n, ev.at)
			case evEnd:
				err = e.onEnd(ev.st, ev.err)
			}
			if err != nil {
				return e.result(), err
			}
			if e.size >= 0 && e.done.Total() >= e.size && e.started {
				return e.finish()
			}
		}
	}
}

func (e *engine) saveSidecar() {
	if e.size <= 0 || !e.ranges || e.file == nil {
		return
	}
	e.dirty = false
	sc := &Sidecar{Version: sidecarFormat, URL: e.o.URL, Size: e.size, ETag: e.etag, LastModified: e.lastMod, Done: e.done}
	if err := writeSidecar(e.file, e.o.Out, sc); err != nil {
		e.o.Log.Warn("sidecar not written", "err", err)
	}
}

func (e *engine) alive() []*pathState {
	var out []*pathState
	for _, p := range e.paths {
		if !p.dead && p.c != nil && !p.redial {
			out = append(out, p)
		}
	}
	return out
}

// otherPath says whether a path other than p is alive or still connecting: one that work could move to.
func (e *engine) otherPath(p *pathState) bool {
	for _, q := range e.paths {
		if q != p && !q.dead {
			return true
		}
	}
	return false
}

func (e *engine) pending() bool {
	for _, p := range e.paths {
		if !p.dead && (p.c == nil || p.redial) {
			return true
		}
	}
	return false
}

func (e *engine) onConn(ev event) error {
	p := ev.p
	p.redial = false
	if ev.err != nil {
		e.kill(p, ev.err)
	} else {
		// A replaced connection (GOAWAY) keeps serving the streams it took; they end on their own.
		p.c = ev.c
		e.o.Log.Info("path connected", "path", p.spec.Name, "proto", p.c.proto())
	}
	return e.kick()
}

// dropSecondary stops every path but the first (Options.DropSecondary): the rest of the download goes to the first
// path alone.
func (e *engine) dropSecondary() error {
	const why = "the paths after the first were stopped (multipath paused)"
	for _, p := range e.paths[1:] {
		e.kill(p, errors.New(why))
	}
	e.split = -1
	e.goSingle(why)
	return e.kick()
}

// kill marks a path gone: its streams end (their ranges go to the others) and it gets no more work.
func (e *engine) kill(p *pathState, err error) {
	if p.dead {
		return
	}
	p.dead = true
	p.errMsg = err.Error()
	e.o.Log.Warn("path gone", "path", p.spec.Name, "err", err)
	for _, st := range append([]*est{}, p.streams...) {
		e.endStream(st)
	}
	if p.c != nil {
		p.c.close()
	}
}

// kick gives work to paths that have room for it: the first request, ranges left by ended streams, and a share
// of another path's range for an idle path.
func (e *engine) kick() error {
	alive := e.alive()
	if len(alive) == 0 {
		if e.pending() {
			return nil
		}
		return fmt.Errorf("%w: %s", errNoPath, e.pathErrors())
	}
	e.startTail()
	if !e.started {
		// The first request goes to the primary path (seed 003 §3.3), waited for while it is still connecting.
		if p0 := e.paths[0]; p0 != alive[0] && !p0.dead {
			return nil
		}
		return e.open(alive[0], e.firstRequest(), roleFirst)
	}
	if e.size < 0 {
		return nil // the first response has not said how large the object is
	}
	for _, p := range e.workers(alive) {
		for len(e.orphans) > 0 && len(p.streams) < 2 {
			sp := e.orphans[0]
			if room := e.room(p); room == 0 {
				break
			} else if room > 0 && sp.Len() > room {
				// θ2: the secondary takes what its cap allows; the rest waits for the primary.
				e.orphans[0].Start += room
				sp.End = sp.Start + room
			} else {
				e.orphans = e.orphans[1:]
			}
			if err := e.open(p, request{start: sp.Start, end: sp.End, ifRange: e.ifRange}, roleRange); err != nil {
				return nil // open has killed the path; its ranges are orphans again
			}
		}
	}
	if !e.single {
		for _, p := range alive {
			if len(p.streams) == 0 {
				e.balance(p)
			}
		}
	}
	return nil
}

// workers are the paths that may get work: all alive ones, or in single-path mode the first.
func (e *engine) workers(alive []*pathState) []*pathState {
	if e.single {
		return alive[:1]
	}
	return alive
}

func (e *engine) firstRequest() request {
	if e.resume != nil {
		miss := e.done.Missing(e.resume.Size)
		if len(miss) > 0 {
			return request{start: miss[0].Start, end: -1, ifRange: validatorOf(e.resume.ETag, e.resume.LastModified)}
		}
	}
	// Open-ended, so that the first response says the size and whether ranges work; with a known-size start the
	// stream stops at the split, and goes on to the end if the download turns single-path.
	end := int64(-1)
	switch {
	case e.split > 0:
		end = e.split
	case e.size >= 0:
		end = e.size // the tail's response was checked first and the download went single-path
	}
	return request{start: 0, end: end, open: true}
}

// plan decides the known-size start's split: only for a new download over two paths whose size the caller gave,
// before anything was sent or checked, with both paths still there.
func (e *engine) plan() int64 {
	if e.o.Size <= 0 || e.resume != nil || len(e.paths) < 2 || e.started || e.checked || e.single {
		return -1
	}
	p0, p1 := e.paths[0], e.paths[1]
	if p0.dead || p1.dead {
		return -1
	}
	secondary := e.estimate(p1)
	secondary.Cap = e.room(p1)
	split := StartSplit(e.o.Size, e.estimate(p0), secondary, MinChunk)
	if split >= e.o.Size {
		return -1
	}
	e.o.Log.Debug("known-size start", "size", e.o.Size, "split", split)
	return split
}

// startTail sends the known-size start's second request (seed 003 §3.6, MP-H2+FS): the secondary path asks for
// [split, size) as soon as its connection is up, instead of waiting for the primary's first response (one
// primary round trip, and the primary's own handshake if it connects later) to learn the size. The response is
// checked like the first one against the size given (see firstHead).
func (e *engine) startTail() {
	if e.split == 0 {
		e.split = e.plan()
	}
	if e.split < 0 || e.tailSent {
		return
	}
	p0, p1 := e.paths[0], e.paths[1]
	if p0.dead || p1.dead || e.checked || e.single {
		// Nothing sent on the secondary yet: the download goes on as without a known size.
		e.split = -1
		return
	}
	if p1.c == nil || p1.redial {
		return
	}
	e.tailSent = true
	e.open(p1, request{start: e.split, end: e.o.Size}, roleTail)
}

func validatorOf(etag, lastMod string) string {
	if etag != "" && !strings.HasPrefix(etag, "W/") {
		return etag
	}
	return lastMod
}

func (e *engine) pathErrors() string {
	var parts []string
	for _, p := range e.paths {
		if p.errMsg != "" {
			parts = append(parts, p.spec.Name+": "+p.errMsg)
		}
	}
	return strings.Join(parts, "; ")
}

// role is what a request is for.
type role int

const (
	roleRange role = iota // a range of a download whose first response has been checked
	roleFirst             // the download's first request
	roleTail              // the known-size start's request on the secondary path
)

// open sends a request on p. On failure the path is killed.
func (e *engine) open(p *pathState, req request, r role) error {
	first := r == roleFirst
	st := &est{p: p, start: req.start, end: req.end, pos: req.start, off: req.start, first: first, tail: r == roleTail, sent: time.Now()}
	st.lastData = st.sent
	if first {
		e.started = true
	}
	h := handler{
		head: func(status int, hd http.Header) error {
			reply := make(chan error, 1)
			if !e.send(event{kind: evHead, st: st, status: status, h: hd, reply: reply}) {
				return errCanceled
			}
			select {
			case err := <-reply:
				return err
			case <-e.quit:
				return errCanceled
			}
		},
		data: func(b []byte) {
			st.mu.Lock()
			if st.stopped {
				st.mu.Unlock()
				return
			}
			if e.most >= 0 && st.off+int64(len(b)) > e.most {
				// More than the object may be: stop before the file grows past the bound.
				st.stopped = true
				st.mu.Unlock()
				e.send(event{kind: evEnd, st: st, err: fmt.Errorf("%w: the server sent more than %s", errTooLarge, e.mostWhy)})
				return
			}
			_, err := e.file.WriteAt(b, st.off)
			st.off += int64(len(b))
			st.mu.Unlock()
			if err != nil {
				e.send(event{kind: evEnd, st: st, err: fmt.Errorf("writing %s: %w", e.part, err)})
				return
			}
			e.send(event{kind: evData, st: st, n: int64(len(b)), at: time.Now()})
		},
		// end may be called from the engine's own goroutine (Cancel, SetLimit): never block it. The data events
		// sent before it are ahead of it in the channel.
		end: func(err error) { go e.send(event{kind: evEnd, st: st, err: err}) },
	}
	if p.redial {
		err := errors.New("reconnecting")
		e.unopened(req, first)
		return err
	}
	s, err := p.c.get(req, h)
	if err != nil {
		e.unopened(req, first)
		if p.c.draining() {
			// The server said GOAWAY: a new connection on the same path takes the next requests.
			p.redial = true
			e.o.Log.Info("server sent GOAWAY; reconnecting", "path", p.spec.Name)
			e.dial(e.ctx, p)
			return err
		}
		e.kill(p, err)
		return err
	}
	st.s = s
	p.streams = append(p.streams, st)
	p.requests++
	e.res.Requests++
	if req.end >= 0 {
		p.assigned += req.end - req.start
	}
	return nil
}

// unopened puts back the work of a request that could not be sent.
func (e *engine) unopened(req request, first bool) {
	if first {
		e.started = false // sent again as it was: its range is nobody else's
		return
	}
	if req.end >= 0 {
		e.orphans = append(e.orphans, Span{req.start, req.end})
	}
}

// stop makes sure the stream's handler writes nothing more.
func (e *engine) stop(st *est) {
	st.mu.Lock()
	st.stopped = true
	st.mu.Unlock()
}

// endStream takes a stream out of the books: cancelled if still running, its undone range an orphan.
func (e *engine) endStream(st *est) {
	if st.ended {
		return
	}
	st.ended = true
	e.stop(st)
	st.s.Cancel()
	p := st.p
	for i, x := range p.streams {
		if x == st {
			p.streams = append(p.streams[:i], p.streams[i+1:]...)
			break
		}
	}
	if len(p.streams) == 0 {
		p.bw.Idle()
	}
	if st.first && !e.checked {
		// Ended before its response was checked (a dead path, GOAWAY): kick sends it again as it was.
		e.started = false
		if st.end >= 0 {
			p.assigned -= st.end - st.pos
		}
		return
	}
	if st.end >= 0 && st.pos < st.end {
		p.assigned -= st.end - st.pos
		e.orphans = append(e.orphans, Span{st.pos, st.end})
	} else if st.end < 0 && e.size > st.pos {
		e.orphans = append(e.orphans, Span{st.pos, e.size})
	}
}

// onHead checks a response's status and headers before any of its body is written. reply goes back to the stream
// (an error cancels it); fatal ends the download: the first response contradicts what was asked or expected.
func (e *engine) onHead(st *est, status int, h http.Header) (reply, fatal error) {
	if st.ended {
		return errCanceled, nil
	}
	if !e.checked {
		err := e.firstHead(st, status, h)
		if err != nil && !errors.Is(err, errCanceled) {
			return err, err
		}
		return err, nil
	}
	return e.rangeHead(st, status, h), nil
}

// rangeHead checks a response against the first one.
func (e *engine) rangeHead(st *est, status int, h http.Header) error {
	etag, lastMod := h.Get("ETag"), h.Get("Last-Modified")
	switch status {
	case http.StatusPartialContent:
		cr, err := ParseContentRange(h.Get("Content-Range"))
		if err != nil || cr.First != st.start || cr.Complete != e.size || (st.end >= 0 && cr.Last < st.end-1) {
			e.restart(st, fmt.Sprintf("a range response did not match its request (%s, asked %s)",
				h.Get("Content-Range"), RangeHeader(st.start, st.end)))
			e.kick()
			return errCanceled
		}
		if etag != e.etag || lastMod != e.lastMod {
			e.restart(st, "the object changed during the download (ETag or Last-Modified)")
			e.kick()
			return errCanceled
		}
		return nil
	case http.StatusOK:
		if etag != e.etag || lastMod != e.lastMod {
			e.restart(st, "the object changed during the download (If-Range failed)")
			e.kick()
			return errCanceled
		}
		e.goSingle(fmt.Sprintf("the server ignored a range request on %s", st.p.spec.Name))
		e.kill(st.p, errors.New("the server ignores range requests on this path"))
		e.kick()
		return errCanceled
	}
	err := fmt.Errorf("HTTP %d to a range request", status)
	e.kill(st.p, err)
	return err
}

// firstHead checks the first response to arrive, the first request's or the known-size start's tail's: it sets the
// size, validators and whether ranges work, against which every later response is checked (rangeHead). An error
// other than errCanceled ends the download.
func (e *engine) firstHead(st *est, status int, h http.Header) error {
	etag, lastMod := h.Get("ETag"), h.Get("Last-Modified")
	if ce := h.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		// Ranges would count the encoded bytes, and the file would be the encoding, not the object.
		return fmt.Errorf("the server sent the object with Content-Encoding %.40q although identity was asked for", ce)
	}
	if st.tail && status != http.StatusPartialContent {
		// Sent on the size given beforehand, before any response said whether the server serves ranges: a 200 says
		// it does not, another status that the size was wrong (416) or the request refused. The primary's
		// response decides; this one writes nothing.
		if status == http.StatusOK {
			e.goSingle("the server does not serve ranges")
			e.split = -1
			e.drop(st)
		} else {
			e.endStream(st) // its range waits for the first response to say whether it exists
		}
		return errCanceled
	}
	var err error
	last := int64(-1)
	switch status {
	case http.StatusPartialContent:
		cr, perr := ParseContentRange(h.Get("Content-Range"))
		if perr != nil || cr.First != st.start {
			return fmt.Errorf("bad first response: %v", perr)
		}
		if cr.Complete < 0 {
			if st.tail {
				e.endStream(st) // nothing to check the size against: the primary's response decides
				return errCanceled
			}
			e.goSingle("the server does not say the object's size")
		}
		e.ranges = true
		e.size, last = cr.Complete, cr.Last
		if e.resume != nil && (etag != e.resume.ETag || lastMod != e.resume.LastModified || e.size != e.resume.Size) {
			// If-Range should have made this a 200; a server that answers 206 anyway cannot be resumed safely.
			e.restart(st, "the object changed since the partial download")
			e.kick()
			return errCanceled
		}
	case http.StatusOK:
		e.size = -1
		if n := h.Get("Content-Length"); n != "" {
			if e.size, err = parseLen(n); err != nil {
				return fmt.Errorf("Content-Length %q: %w", n, err)
			}
		}
		if st.start > 0 || e.done.Total() > 0 {
			// The resumed part belongs to another representation: start over with this response.
			e.done = nil
			if err := e.file.Truncate(0); err != nil {
				return err
			}
			e.res.Resumed = 0
			st.mu.Lock()
			st.off, st.start, st.pos = 0, 0, 0
			st.mu.Unlock()
			e.goSingle("the object changed since the partial download")
		} else {
			e.goSingle("the server does not serve ranges")
		}
	default:
		return fmt.Errorf("HTTP %d", status)
	}
	if e.o.Size > 0 && e.size >= 0 && e.size != e.o.Size {
		return fmt.Errorf("the server says %d bytes, the browser expected %d", e.size, e.o.Size)
	}
	if e.free >= 0 && e.size > e.free {
		return fmt.Errorf("the object is %d bytes and the disk has %d free for it", e.size, e.free)
	}
	if st.tail && last < st.end-1 {
		return fmt.Errorf("bad first response: %s for %s", h.Get("Content-Range"), RangeHeader(st.start, st.end))
	}
	e.checked = true
	e.etag, e.lastMod = etag, lastMod
	e.ifRange = validatorOf(etag, lastMod)
	if e.digest, err = digestOf(h, status == http.StatusOK); err != nil {
		e.o.Log.Warn("digest header ignored", "err", err)
	}
	if !e.tailSent {
		e.split = -1 // the secondary was not connected in time: it joins as without a known size
	}
	if !e.single && e.ifRange == "" {
		e.goSingle("the server gives no validator (ETag or Last-Modified) to check ranges against")
	}
	if !e.single && len(e.o.Paths) < 2 {
		e.single = true
	}
	if e.single {
		e.solo()
	}
	if first := e.firstStream(); first != nil && e.split < 0 {
		// No split (any more): the first stream runs to the end, or to the first gap when resuming.
		end := e.size
		if e.resume != nil && status == http.StatusPartialContent {
			// Resuming: this stream fills the first gap; the other gaps are work for any path.
			miss := e.done.Missing(e.size)
			end = miss[0].End
			e.orphans = append(e.orphans, miss[1:]...)
		}
		e.setEnd(first, end)
	}
	e.dirty = true
	if e.o.OnStart != nil && e.restarts == 0 {
		e.o.OnStart(e.size)
	}
	if st.ended {
		return errCanceled // the tail, dropped by solo: the first stream carries its range
	}
	return nil
}

// solo leaves the first stream alone once the first response says the download is single-path: requests sent on
// a size given beforehand are dropped before they write a byte, and the first stream, which asked for everything
// from its start, is to deliver to the end (firstHead moves its end).
func (e *engine) solo() {
	for _, p := range e.paths {
		for _, st := range append([]*est{}, p.streams...) {
			if !st.first {
				e.drop(st)
			}
		}
	}
	e.orphans = nil
	e.split = -1
}

// firstStream is the download's first stream while it runs.
func (e *engine) firstStream() *est {
	for _, p := range e.paths {
		for _, st := range p.streams {
			if st.first {
				return st
			}
		}
	}
	return nil
}

// setEnd moves a stream's range end (< 0: to the object's end, size unknown) and its limit with it.
func (e *engine) setEnd(st *est, end int64) {
	given := func(end int64) int64 {
		if end < 0 {
			return 0
		}
		return end - st.start
	}
	st.p.assigned += given(end) - given(st.end)
	st.end = end
	limit := int64(-1)
	if end >= 0 {
		limit = end - st.start
	}
	st.s.SetLimit(limit)
}

// drop ends a stream whose range another stream carries: nothing of it becomes an orphan.
func (e *engine) drop(st *est) {
	if st.end > st.pos {
		st.p.assigned -= st.end - st.pos
	}
	st.end = st.pos
	e.endStream(st)
}

// goSingle stops splitting: whatever is left goes to one path.
func (e *engine) goSingle(why string) {
	if e.single {
		return
	}
	e.single = true
	if len(e.o.Paths) > 1 {
		e.fallback = why
		e.o.Log.Info("single path", "why", why)
	}
}

// restart abandons everything fetched so far: the object changed. The next request starts from byte 0 on one
// path, so no file ever mixes two representations.
func (e *engine) restart(cause *est, why string) {
	e.restarts++
	e.res.WasteBytes += e.done.Total()
	for _, p := range e.paths {
		for _, st := range append([]*est{}, p.streams...) {
			e.endStream(st)
		}
		p.assigned = 0
	}
	e.stop(cause)
	e.done, e.orphans, e.size, e.ranges, e.started, e.resume = nil, nil, -1, false, false, nil
	e.checked, e.split = false, -1
	e.etag, e.lastMod, e.ifRange, e.digest = "", "", "", nil
	e.file.Truncate(0)
	_, sc := PartPaths(e.o.Out)
	os.Remove(sc)
	e.single = false
	e.goSingle(why)
}

func (e *engine) onData(st *est, n int64, at time.Time) error {
	if st.ended {
		return nil
	}
	p := st.p
	e.res.DupBytes += e.done.Add(st.pos, st.pos+n)
	st.pos += n
	st.lastData = at
	p.bytes += n
	p.bw.Add(n, at)
	e.dirty = true
	if e.single || !e.otherPath(p) {
		p.c.setCredit(maxCredit) // no work will move: nothing to hold back
	} else if c, ok := Credit(&p.bw, p.c.baseRTT()); ok {
		p.c.setCredit(c)
	}
	if !e.single && e.size >= 0 && e.ranges {
		for _, other := range e.alive() {
			switch {
			case other == p:
			case len(other.streams) == 0:
				e.balance(other) // idle, e.g. connected before the size was known
			default:
				e.step(p, other)
			}
		}
	}
	return nil
}

// estimate is what the scheduler knows of p's rate and RTT: its own measurements, else the caller's prior.
func (e *engine) estimate(p *pathState) PathView {
	v := PathView{Streams: len(p.streams), Cap: -1}
	prior := e.o.Priors[p.spec.Name]
	if bw, ok := p.bw.Value(); ok {
		v.BW = bw
	} else if prior.BPS > 0 && prior.RTT > 0 {
		v.BW = prior.BPS / 8
	}
	if p.c != nil {
		if rtt, ok := p.c.rtt(); ok {
			v.RTT = rtt
			return v
		}
	}
	if v.BW > 0 {
		v.RTT = prior.RTT
	}
	return v
}

// view is what Algorithm 1 reads of p now.
func (e *engine) view(p *pathState) PathView {
	v := e.estimate(p)
	for _, st := range p.streams {
		if st.end >= 0 {
			v.Remaining += st.end - st.pos
		}
	}
	if n := len(p.streams); n > 0 {
		last := p.streams[n-1]
		v.TailEnd = last.end
		// What the transport has read already, even if the engine has not handled it yet: a range end moved
		// below it would fetch those bytes twice (seen over HTTP/1.1 with both cores busy: 17 kB).
		v.TailStart = max(last.pos, last.start+last.s.Received())
		if c := last.s.Committed(); c >= 0 {
			v.TailStart = max(v.TailStart, last.start+c)
		} else {
			// HTTP/1.1: what may be in flight already, plus a socket buffer's worth.
			v.TailStart += int64(v.BW*v.RTT.Seconds()) + 64<<10
		}
		if last.end < 0 {
			v.TailEnd = v.TailStart
		}
	}
	v.Cap = e.room(p)
	return v
}

// room is how many more bytes p may be given: what is left of θ2 for the secondary paths, -1 without a cap. Only
// when the primary is gone does the secondary get work beyond it: the file would otherwise never finish.
func (e *engine) room(p *pathState) int64 {
	if p.i == 0 || e.o.SecondaryCap <= 0 || e.paths[0].dead {
		return -1
	}
	var given int64
	for _, q := range e.paths[1:] {
		given += q.assigned
	}
	return max(e.o.SecondaryCap-given, 0)
}

// step runs Algorithm 1 for this path against other and moves work when it says so.
func (e *engine) step(this, other *pathState) {
	split, ok := Step(e.view(this), e.view(other), e.o.Delta, MinChunk)
	if !ok {
		return
	}
	last := other.streams[len(other.streams)-1]
	oldEnd := last.end
	last.end = split
	other.assigned -= oldEnd - split
	last.s.SetLimit(split - last.start)
	e.res.Moves++
	tv, ov := e.view(this), e.view(other)
	e.o.Log.Debug("range end moved", "t_ms", time.Since(e.t0).Milliseconds(), "from", other.spec.Name, "to", this.spec.Name,
		"split", split, "end", oldEnd, "this_bw", tv.BW*8, "this_rtt", tv.RTT, "this_left", tv.Remaining,
		"other_bw", ov.BW*8, "other_left", ov.Remaining)
	e.open(this, request{start: split, end: oldEnd, ifRange: e.ifRange}, roleRange)
}

// balance gives an idle path work: Algorithm 1 with its empty queue, which also covers the start (§3.3: once the
// size is known the secondary asks for the second half).
func (e *engine) balance(p *pathState) {
	for _, other := range e.alive() {
		if other != p && len(other.streams) > 0 {
			e.step(p, other)
			if len(p.streams) > 0 {
				return
			}
		}
	}
}

func (e *engine) onEnd(st *est, err error) error {
	if st == nil {
		return nil
	}
	if st.ended {
		return e.kick()
	}
	p := st.p
	e.o.Log.Debug("stream ended", "t_ms", time.Since(e.t0).Milliseconds(), "path", p.spec.Name, "start", st.start,
		"pos", st.pos, "end", st.end, "err", err)
	if errors.Is(err, errTooLarge) {
		return err
	}
	if st.end < 0 && err == nil && e.size < 0 {
		// A response without a length ended: that was the whole object, and it must be what was announced.
		e.size = st.pos
		if e.o.Size > 0 && e.size != e.o.Size {
			return fmt.Errorf("the server sent %d bytes without saying the object's size; the browser announced %d", e.size, e.o.Size)
		}
	}
	e.endStream(st)
	if errors.Is(err, errGoAway) {
		if !p.redial && !p.dead {
			p.redial = true
			e.dial(e.ctx, p)
		}
		return e.kick()
	}
	if err != nil && !errors.Is(err, errCanceled) {
		if p.c != nil {
			select {
			case <-p.c.dead():
				e.kill(p, err)
			default:
				if st.first && !e.ranges {
					return err
				}
				e.kill(p, err)
			}
		}
	}
	return e.kick()
}

// watch handles a tick: a path that owes bytes and has sent none for PathTimeout is gone; a failed connection
// reported through dead() is handled here too.
func (e *engine) watch(now time.Time) error {
	if len(e.orphans) > 0 || !e.started {
		if err := e.kick(); err != nil {
			return err
		}
	}
	for _, p := range e.paths {
		if p.dead || p.c == nil || p.redial {
			continue
		}
		select {
		case <-p.c.dead():
			e.kill(p, p.c.err())
			if err := e.kick(); err != nil {
				return err
			}
			continue
		default:
		}
		for _, st := range p.streams {
			if now.Sub(st.lastData) > e.o.PathTimeout {
				e.kill(p, fmt.Errorf("no data for %v", e.o.PathTimeout))
				if err := e.kick(); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

func (e *engine) stats() []PathStat {
	out := make([]PathStat, 0, len(e.paths))
	for _, p := range e.paths {
		ps := PathStat{Name: p.spec.Name, Bytes: p.bytes, Requests: p.requests, Error: p.errMsg}
		if p.c != nil {
			ps.Proto = p.c.proto()
			if rtt, ok := p.c.rtt(); ok {
				ps.RTTMS = float64(rtt.Microseconds()) / 1000
			}
		}
		if bw, ok := p.bw.Value(); ok {
			ps.BWBps = bw * 8
		}
		out = append(out, ps)
	}
	return out
}

func (e *engine) progress() Progress {
	return Progress{Received: e.done.Total(), Size: e.size, Paths: e.stats()}
}

func (e *engine) result() Result {
	r := e.res
	r.Size = e.size
	r.ElapsedMS = float64(time.Since(e.t0).Microseconds()) / 1000
	r.Paths = e.stats()
	r.Fallback = e.fallback
	for _, p := range e.paths {
		if p.c != nil {
			r.WasteBytes += p.c.waste()
		}
	}
	return r
}

// finish checks the file (size, then digest) and gives it its final name.
func (e *engine) finish() (Result, error) {
	for _, p := range e.paths {
		for _, st := range append([]*est{}, p.streams...) {
			e.endStream(st)
		}
	}
	res := e.result()
	if e.done.Total() != e.size || len(e.done.Missing(e.size)) > 0 {
		return res, fmt.Errorf("internal: %d of %d bytes on disk", e.done.Total(), e.size)
	}
	if err := e.file.Truncate(e.size); err != nil {
		return res, err
	}
	if err := e.file.Sync(); err != nil {
		return res, err
	}
	if fi, err := e.file.Stat(); err != nil || fi.Size() != e.size {
		return res, fmt.Errorf("the partial file has the wrong size: %v", err)
	}
	if e.digest != nil {
		if err := e.digest.check(e.file, e.size); err != nil {
			e.file.Close()
			e.file = nil
			RemovePart(e.o.Out)
			return res, err
		}
		res.Digest = e.digest.String()
	}
	e.file.Close()
	e.file = nil
	name, err := publish(e.part, e.o.Out)
	if err != nil {
		return res, err
	}
	_, sc := PartPaths(e.o.Out)
	os.Remove(sc)
	res.File = name
	res.ElapsedMS = float64(time.Since(e.t0).Microseconds()) / 1000
	return res, nil
}
