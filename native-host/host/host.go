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
	rec       record       // the decision log
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
		rec:     record{db: p.Store, err: p.StoreErr}, network: p.Network, hold: p.Hold, preload: p.Preload,
		peerBudget:     limit.NewKeyed[string](peersRate, peersBurst, peersOrigins),
		announceBudget: limit.NewKeyed[string](announceRate, announceBurst, peersOrigins)}
	s.downloads = newDownloadHub(p.Downloads, s.carry.Paused, log)
	return s
}

// Close stops what the Server's Carrier runs (the relay).
func (s *Server) Close() { s.carry.Close() }

// Handle answers one request payload. It never fails: a bad request gets an error reply.
func (s *Server) Handle(payload []byte) protocol.Reply {
	req, perr := protocol.Parse(payload)
	if perr == nil {
		switch req.Type {
		case protocol.TypeHello:
			return s.hello(req)
		case protocol.TypeDecide:
			return s.decide(req)
		case protocol.TypeStatus:
			return s.status(req)
		case protocol.TypeReport:
			return s.report(req)
		case protocol.TypePrefs:
			return s.prefs(req)
		case protocol.TypeLogExport:
			return s.logExport(req)
		case protocol.TypeLogDelete:
			return s.logDelete(req)
		case protocol.TypePeers:
			return s.peers(req)
		case protocol.TypeAnnounce:
			return s.announce(req)
		case protocol.TypeDownloadOffer:
			return s.downloadOffer(req)
		case protocol.TypeDownloadControl:
			return s.downloadControl(req)
		case protocol.TypeDownloadList:
			return s.downloadList(req)
		case protocol.TypeProxyStatus:
			return s.proxyStatus(req)
		case protocol.TypeProxyConfig:
			return s.proxyConfig(req)
		case protocol.TypeProxyTest:
			return s.proxyTest(req)
		case protocol.TypePause:
			return s.pause(req)
		}
		perr = protocol.Errorf(protocol.CodeUnknownType, "type: not one of %s", strings.Join(protocol.RequestTypes, ", "))
	}
	s.log.Warn("bad request", "id", req.ID, "type", req.Type, "err", perr)
	return protocol.Fail(req, perr)
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
	go func() { fail(s.readLoop(wire.NewReader(cfg.In, wire.MaxIn), w)) }()
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
	// No push may be written after Serve returns.
	cancel()
	watching.Wait()
	// Downloads pause with their partial files and sidecars written, for the next host to resume.
	s.downloads.stop(time.Second)
	return err
}

func (s *Server) readLoop(r *wire.Reader, w *wire.Writer) error {
	for {
		payload, err := r.Read()
		switch {
		case err == nil:
			if err := s.send(w, s.Handle(payload)); err != nil {
				return err
			}
		case errors.Is(err, wire.ErrEmpty):
			s.log.Warn("zero-length frame")
			if err := s.send(w, protocol.Fail(protocol.Request{},
				protocol.Errorf(protocol.CodeBadFrame, "zero-length frame"))); err != nil {
				return err
			}
		case errors.Is(err, wire.ErrTooLarge):
			// The payload was not read, so the next bytes are not a length: answer once and stop.
			s.log.Error("closing the port", "err", err)
			if err := s.send(w, protocol.Fail(protocol.Request{},
				protocol.Errorf(protocol.CodeFrameTooLarge, "%v; the host stops reading", err))); err != nil {
				return err
			}
			return nil
		case errors.Is(err, wire.ErrTruncated):
			s.log.Info("truncated frame", "err", err)
			return nil
		case err == io.EOF:
			s.log.Info("port closed")
			return nil
		default:
			return fmt.Errorf("reading the port: %w", err)
		}
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
