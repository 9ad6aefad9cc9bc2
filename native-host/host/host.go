package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpsurf/mpsurf"
	"github.com/mpsurf/mpsurf/native-host/carry"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/limit"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
	"github.com/mpsurf/mpsurf/native-host/wire"
)

// Version is the host's version, reported in hello and status: package.json's, the one version of the release.
var Version = mpsurf.Version()

// Parts are what a Server is assembled from; cmd/mpsurf-host builds each once.
type Parts struct {
	Policy  *policy.Store   // the network-wide policy, for hello and status
	Decider *decide.Decider // required
	Carrier *carry.Carrier  // carries each decision out; required
	// Store is the decision log; nil when it could not be opened, StoreErr saying why: store requests then get
	// store_unavailable and decisions go on unlogged.
	Store    *store.Store
	StoreErr error
	// LogQueue is how many decisions may wait to be written to Store after their replies (decisionlog.go); 0 means
	// DefaultLogQueue.
	LogQueue int
	// Downloads are the handed-over downloads' settings.
	Downloads Downloads
	// Preload is the LD_PRELOAD the browser started the host with: mptcpize's library says its sockets are MPTCP.
	Preload string
	// Network gives the status's network facts (the cellular link's cost); nil: none.
	Network func() NetworkInfo
	// Hold is told of every change between paused and not (the path meter's decide.Meter.HoldCellular: no probe of
	// the host's own goes over cellular while multipath is paused); nil: nothing to tell.
	Hold func(paused bool)
	Log  *slog.Logger
}

// Server answers requests. It is safe for concurrent use.
type Server struct {
	store     *policy.Store
	dec       *decide.Decider
	carry     *carry.Carrier
	log       *slog.Logger
	start     time.Time
	pid       int
	install   InstallKind // how this executable was installed (status.go)
	decisions atomic.Int64
	rec       record       // the store, or why there is none
	dlog      *decisionLog // writes the decisions to the store after their replies; nil without a store
	downloads *downloadHub // download.go
	network   func() NetworkInfo
	hold      func(paused bool)
	preload   string
	// peerBudget limits peers requests per page origin (peers.go).
	peerMu     sync.Mutex
	peerBudget *limit.Keyed[string]
	// announceBudget limits announce requests per page origin (announce.go), under peerMu too.
	announceBudget *limit.Keyed[string]
}

// NewServer returns a Server that answers hello and status with the network-wide policy, decides with the
// Decider, and hands each decision to the Carrier. It panics without a Decider or a Carrier: they are the
// caller's to build.
func NewServer(p Parts) *Server {
	if p.Decider == nil || p.Carrier == nil {
		panic("host: NewServer without a Decider or a Carrier")
	}
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{store: p.Policy, dec: p.Decider, carry: p.Carrier, log: log, start: time.Now(), pid: os.Getpid(),
		install: runningInstall(),
		rec:     record{db: p.Store, err: p.StoreErr}, dlog: newDecisionLog(p.Store, p.LogQueue, log),
		network: p.Network, hold: p.Hold, preload: p.Preload,
		peerBudget:     limit.NewKeyed[string](peersRate, peersBurst, peersOrigins),
		announceBudget: limit.NewKeyed[string](announceRate, announceBurst, peersOrigins)}
	s.downloads = newDownloadHub(p.Downloads, s.carry.Paused, log)
	return s
}

// closeWait bounds how long closing waits for the decision log's queued rows to be written.
const closeWait = storeTimeout

// Close writes the decisions still queued for the log (waiting at most closeWait), then stops what the Server's
// Carrier runs (the relay). The caller closes the store after it.
func (s *Server) Close() {
	s.dlog.close(closeWait)
	s.carry.Close()
}

// Handle answers one request payload. It never fails: a bad request gets an error reply. It returns once the
// decisions it made, if any, are in the log, for callers that read the store next; Serve does not wait so.
func (s *Server) Handle(payload []byte) protocol.Reply {
	reply, row := s.handle(payload)
	if row != nil {
		s.dlog.add(reply.ID, *row)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.dlog.flush(ctx); err != nil {
		s.log.Warn("decisions not logged in time", "id", reply.ID, "err", err)
	}
	return reply
}

// handle answers one request payload, and returns beside the reply the decision row to log after it (decide).
func (s *Server) handle(payload []byte) (protocol.Reply, *store.DecisionRow) {
	req, perr := protocol.Parse(payload)
	if perr == nil {
		switch req.Type {
		case protocol.TypeHello:
			return s.hello(req), nil
		case protocol.TypeDecide:
			return s.decide(req)
		case protocol.TypeStatus:
			return s.status(req), nil
		case protocol.TypeReport:
			return s.report(req), nil
		case protocol.TypePrefs:
			return s.prefs(req), nil
		case protocol.TypeLogExport:
			return s.logExport(req), nil
		case protocol.TypeLogDelete:
			return s.logDelete(req), nil
		case protocol.TypePeers:
			return s.peers(req), nil
		case protocol.TypeAnnounce:
			return s.announce(req), nil
		case protocol.TypeDownloadOffer:
			return s.downloadOffer(req), nil
		case protocol.TypeDownloadControl:
			return s.downloadControl(req), nil
		case protocol.TypeDownloadList:
			return s.downloadList(req), nil
		case protocol.TypeProxyStatus:
			return s.proxyStatus(req), nil
		case protocol.TypeProxyConfig:
			return s.proxyConfig(req), nil
		case protocol.TypeProxyTest:
			return s.proxyTest(req), nil
		case protocol.TypePause:
			return s.pause(req), nil
		}
		perr = protocol.Errorf(protocol.CodeUnknownType, "type: not one of %s", strings.Join(protocol.RequestTypes, ", "))
	}
	s.log.Warn("bad request", "id", req.ID, "type", req.Type, "err", perr)
	return protocol.Fail(req, perr), nil
}

// snapshot returns the current policy, or the policy_unavailable error to reply with.
func (s *Server) snapshot() (*policy.Snapshot, *protocol.Error) {
	snap, err := s.store.Snapshot()
	if err != nil {
		return nil, protocol.Errorf(protocol.CodePolicyUnavailable, "%v", err)
	}
	return snap, nil
}

// Config is what Serve needs.
type Config struct {
	In  io.Reader // the browser's side of the port (stdin)
	Out io.Writer // the browser's side of the port (stdout); nothing else may write to it
	Log *slog.Logger
	// Hup delivers a value when the policy should be re-read now (SIGHUP).
	Hup <-chan struct{}
	// PollInterval is how often a policy file on disk is checked; 0 means policy.PollInterval.
	PollInterval time.Duration
}

// Serve answers requests from cfg.In on cfg.Out and pushes policy changes until the browser closes the port. It
// returns nil for every way of ending that PROTOCOL.md §1 calls normal (EOF between frames, a truncated frame, a
// length over the cap after its error reply) and an error when reading or writing the port fails or ctx ends.
// Before it returns, the request being answered (if any) has its reply sent, and the decisions replied are in the
// log (waiting at most closeWait for the store).
//
// When Serve returns because of a write error or ctx, the goroutine reading cfg.In may still be blocked in Read;
// closing cfg.In releases it. The host process simply exits.
func (s *Server) Serve(ctx context.Context, cfg Config) error {
	interval := cfg.PollInterval
	if interval == 0 {
		interval = policy.PollInterval
	}
	w := wire.NewWriter(cfg.Out, wire.MaxOut)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	done := make(chan error, 2)
	fail := func(err error) {
		select {
		case done <- err:
		default:
		}
	}
	var watching sync.WaitGroup
	watching.Add(1)
	go func() {
		defer watching.Done()
		s.store.Watch(ctx, interval, cfg.Hup, s.log, func(p protocol.Policy) {
			if err := s.send(w, protocol.PolicyPush(p)); err != nil {
				fail(err)
			}
		})
	}()
	g := &gate{}
	go func() { fail(s.readLoop(wire.NewReader(cfg.In, wire.MaxIn), w, g)) }()
	watching.Add(1)
	go func() {
		defer watching.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case p := <-s.carry.Pushes():
				if err := s.send(w, p); err != nil {
					fail(err)
				}
			case p := <-s.downloads.pushes:
				if err := s.send(w, p); err != nil {
					fail(err)
				}
			}
		}
	}()

	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	// No push may be written after Serve returns, and no reply: the request being answered finishes (its decision
	// queued for the log), the next one is not read.
	cancel()
	watching.Wait()
	if !g.stop(closeWait) {
		s.log.Error("a request was still being answered when the port closed", "wait", closeWait)
	}
	// The decisions replied are written before the caller closes the store (a signal, or the port closed).
	flushCtx, flushed := context.WithTimeout(context.Background(), closeWait)
	if ferr := s.dlog.flush(flushCtx); ferr != nil {
		s.log.Error("decisions not all logged before the port closed", "err", ferr)
	}
	flushed()
	// Downloads pause with their partial files and sidecars written, for the next host to resume.
	s.downloads.stop(time.Second)
	return err
}

// gate lets Serve stop the read loop between requests: once stopped, no request is answered, and stop waits for the
// one being answered, whose reply and log row then go out before Serve returns.
type gate struct {
	mu       sync.Mutex
	stopped  bool
	inflight sync.WaitGroup
}

// enter reports whether a request may be answered now; the caller calls leave after it.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.inflight.Add(1)
	return true
}

func (g *gate) leave() { g.inflight.Done() }

// stop lets no further request in and waits up to wait for the one being answered; false when it did not finish.
func (g *gate) stop(wait time.Duration) bool {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	finished := make(chan struct{})
	go func() { g.inflight.Wait(); close(finished) }()
	select {
	case <-finished:
		return true
	case <-time.After(wait):
		return false
	}
}

// readLoop answers each frame through g. A decision's reply is sent before its row is queued for the log, so the
// navigation never waits for the store's commit.
func (s *Server) readLoop(r *wire.Reader, w *wire.Writer, g *gate) error {
	for {
		payload, err := r.Read()
		if !g.enter() {
			return nil
		}
		err = s.answer(w, payload, err)
		g.leave()
		if err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
	}
}

// errStop is answer's "stop reading, a normal end".
var errStop = errors.New("stop reading")

// answer replies to one frame read (payload, or the error reading it).
func (s *Server) answer(w *wire.Writer, payload []byte, err error) error {
	switch {
	case err == nil:
		reply, row := s.handle(payload)
		err := s.send(w, reply)
		if row != nil {
			s.dlog.add(reply.ID, *row)
		}
		return err
	case errors.Is(err, wire.ErrEmpty):
		s.log.Warn("zero-length frame")
		return s.send(w, protocol.Fail(protocol.Request{}, protocol.Errorf(protocol.CodeBadFrame, "zero-length frame")))
	case errors.Is(err, wire.ErrTooLarge):
		// The payload was not read, so the next bytes are not a length: answer once and stop.
		s.log.Error("closing the port", "err", err)
		if err := s.send(w, protocol.Fail(protocol.Request{},
			protocol.Errorf(protocol.CodeFrameTooLarge, "%v; the host stops reading", err))); err != nil {
			return err
		}
		return errStop
	case errors.Is(err, wire.ErrTruncated):
		s.log.Info("truncated frame", "err", err)
		return errStop
	case err == io.EOF:
		s.log.Info("port closed")
		return errStop
	default:
		return fmt.Errorf("reading the port: %w", err)
	}
}

// send marshals and writes one message. A reply that cannot be sent as it is (it would exceed Chrome's 1 MiB)
// becomes an internal error reply, so the request still gets its one answer.
func (s *Server) send(w *wire.Writer, msg any) error {
	data, err := json.Marshal(msg)
	if err == nil && len(data) > wire.MaxOut {
		err = fmt.Errorf("message of %d bytes exceeds the %d-byte output cap", len(data), wire.MaxOut)
	}
	if err != nil {
		s.log.Error("cannot send", "err", err)
		reply, ok := msg.(protocol.Reply)
		if !ok {
			return nil // a push that cannot be sent is dropped; the next one carries a newer revision
		}
		data, _ = json.Marshal(protocol.Fail(protocol.Request{ID: reply.ID, Type: reply.Type},
			protocol.Errorf(protocol.CodeInternal, "%v", err)))
	}
	if err := w.Write(data); err != nil {
		return fmt.Errorf("writing the port: %w", err)
	}
	return nil
}
