package actuate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mpsurf/mpsurf/native-host/diag"
	"github.com/mpsurf/mpsurf/native-host/limit"
)

// Config is the helper's configuration (the actuator subcommand's flags).
type Config struct {
	Socket    string   // Unix socket path
	AllowUIDs []uint32 // peers with one of these uids are served; uid 0 only if listed here
	AllowGIDs []uint32 // or with one of these primary gids (never for uid 0)
	// AllowGroup names a group whose members are served (never uid 0): primary members by the peer's gid,
	// others as the group database lists them, re-read every groupTTL. The package's unit uses it.
	AllowGroup string
	Backend    string
	StateDir   string // undo record
	AuditFile  string // JSON lines; "" means StateDir/audit.jsonl
	CellAddr   netip.Addr
	CellIf     string
	SysctlDir  string // default SysctlDir; tests point it elsewhere only for the dry run
	Log        *slog.Logger
	// Rate limit per uid and per session: Burst requests at once, then Rate per second.
	Rate  float64
	Burst float64
}

// Peer is a client as the kernel reports it.
type Peer struct {
	Pid int
	Uid uint32
	Gid uint32
}

// Default rate limit: a host renews its lease a few times per lease and sends one policy per navigation;
// 20/s with a burst of 50 leaves room for a page's burst of origins while bounding a runaway client. It applies
// per uid, however many processes share it, and separately to the session's own connection, so that another
// process of the allowed uid that floods the helper cannot starve the host's renewals.
const (
	DefaultRate  = 20
	DefaultBurst = 50
)

// Connection bounds. A host keeps one connection; status readers come and go. A client over its rate limit is
// also made to wait before its next line is read (at most maxPause), so that a flood costs the helper little.
const (
	maxConnsPerUID = 16
	maxConns       = 128
	maxUIDs        = 4096 // uids whose rate limit is remembered at once (least recently seen forgotten)
	idleTimeout    = 2 * time.Minute
	maxPause       = time.Second
)

func (c *Config) allowed(p Peer, group *groupMembers, now time.Time) bool {
	if slices.Contains(c.AllowUIDs, p.Uid) {
		return true
	}
	if p.Uid == 0 {
		return false
	}
	return slices.Contains(c.AllowGIDs, p.Gid) || (group != nil && group.member(p, now))
}

// ParseIDs reads "N[,M...]".
func ParseIDs(s string) ([]uint32, error) {
	if s == "" {
		return nil, nil
	}
	var out []uint32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("bad id %q", f)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}

// Server is a running helper.
type Server struct {
	cfg     Config
	group   *groupMembers // nil: no --allow-group
	log     *slog.Logger
	journal *Journal
	backend Backend
	ln      *net.UnixListener
	audit   *auditLog

	mu sync.Mutex
	// The session: one client at a time, bound to the connection that said hello (see hello).
	session   string
	owner     *client
	began     time.Time
	expiry    time.Time            // zero: no lease held
	sessLimit limit.Bucket         // the session's own connection's rate limit
	uidLimit  *limit.Keyed[uint32] // everything else, per uid
	open      map[uint32]int
	nopen     int
	// findSock looks a connection up: its owner's uid, whether it exists. nil: sock_diag (findSock).
	findSock func(local, remote netip.AddrPort) (uint32, bool, error)
}

// Start restores what a crashed run left, picks the backend, and listens. Serve runs it.
func Start(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.SysctlDir == "" {
		cfg.SysctlDir = SysctlDir
	}
	if cfg.Rate == 0 {
		cfg.Rate, cfg.Burst = DefaultRate, DefaultBurst
	}
	if len(cfg.AllowUIDs) == 0 && len(cfg.AllowGIDs) == 0 && cfg.AllowGroup == "" {
		return nil, errors.New("no peer allowed: give --allow-uid, --allow-gid or --allow-group")
	}
	var group *groupMembers
	if cfg.AllowGroup != "" {
		group = newGroupMembers(cfg.AllowGroup)
		if err := group.check(); err != nil {
			return nil, err
		}
	}
	if err := checkDir(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	j, left, err := OpenJournal(cfg.StateDir, cfg.SysctlDir)
	if len(left) > 0 {
		cfg.Log.Warn("restored the undo record of a previous run", "entries", len(left), "err", err)
	}
	if err != nil {
		return nil, err
	}
	name, why := chooseBackend(cfg.Backend, j)
	b, err := newBackend(BackendConfig{Name: name, CellAddr: cfg.CellAddr, CellIf: cfg.CellIf, Log: func(m string, a ...any) { cfg.Log.Warn(m, a...) }}, j)
	if err != nil {
		j.Restore("")
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	auditPath := cfg.AuditFile
	if auditPath == "" {
		auditPath = filepath.Join(cfg.StateDir, "audit.jsonl")
	}
	audit, err := openAudit(auditPath)
	if err != nil {
		b.Close()
		j.Restore("")
		return nil, err
	}
	// A stale socket from a crash goes (the undo record was handled above). Anyone may connect, SO_PEERCRED decides
	// who is served: the socket is made 0666 by the umask at bind, never by a chmod that a symlink could redirect.
	err = prepareSocket(cfg.Socket)
	var ln *net.UnixListener
	if err == nil {
		old := syscall.Umask(0o111)
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: cfg.Socket, Net: "unix"})
		syscall.Umask(old)
	}
	if err != nil {
		b.Close()
		j.Restore("")
		audit.Close()
		return nil, err
	}
	cfg.Log.Info("actuator started", "backend", name, "why", why, "socket", cfg.Socket, "pid", os.Getpid())
	return &Server{cfg: cfg, group: group, log: cfg.Log, journal: j, backend: b, ln: ln, audit: audit,
		uidLimit: limit.NewKeyed[uint32](cfg.Rate, cfg.Burst, maxUIDs), open: map[uint32]int{}}, nil
}

// BackendName is the backend in use.
func (s *Server) BackendName() string { return s.backend.Name() }

// Serve accepts clients until ctx ends, then undoes everything and removes the undo record. An accept error
// that passes (out of descriptors or memory, a connection aborted while queued) is waited out; any other ends the
// helper with an error, so that its exit status is not 0 and the unit restarts it.
func (s *Server) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { defer wg.Done(); s.leaseWatch(stop) }()
	go func() { <-ctx.Done(); s.ln.Close() }()
	var conns sync.Map
	var fatal error
	var delay time.Duration
	var warned time.Time
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if !transient(err) {
				fatal = fmt.Errorf("accept: %w", err)
				s.log.Error("cannot accept; stopping", "err", err)
				break
			}
			// As net/http does: 5 ms, doubling to 1 s, while the error lasts.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			if now := time.Now(); now.Sub(warned) >= time.Second { // at most one line a second
				s.log.Warn("accept failed; retrying", "err", err, "retry_in", delay)
				warned = now
			}
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			continue
		}
		delay = 0
		conns.Store(c, true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conns.Delete(c)
			s.serveConn(c)
		}()
	}
	close(stop)
	conns.Range(func(k, _ any) bool { k.(*net.UnixConn).Close(); return true })
	wg.Wait()
	return errors.Join(fatal, s.shutdown())
}

// transient reports whether an accept error passes by itself.
func transient(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (s *Server) shutdown() error {
	errs := []error{s.backend.Close(), s.journal.Restore("")}
	os.Remove(s.cfg.Socket)
	s.audit.Close()
	s.log.Info("actuator stopped; kernel state restored", "pending_undo", s.journal.Pending())
	return errors.Join(errs...)
}

// leaseWatch releases the client's changes once its lease lapses, within the 100 ms tick of the expiry, and ends
// its session: a client that resumes (it was stopped, not dead) finds its session gone, says hello again and
// sends its decisions anew, rather than renewing a lease over changes that were undone. It also writes the audit
// log's pending summaries.
func (s *Server) leaseWatch(stop chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.mu.Lock()
			expired := !s.expiry.IsZero() && now.After(s.expiry)
			if expired {
				s.expiry, s.session, s.owner = time.Time{}, "", nil
			}
			s.mu.Unlock()
			if expired {
				err := s.release()
				s.audit.write(auditRecord{Verb: "lease-expired", OK: err == nil, Error: errString(err)})
				s.log.Info("lease expired; changes undone, session ended", "err", err)
			}
			s.audit.flush(false)
		}
	}
}

func (s *Server) release() error {
	return errors.Join(s.backend.Release(), s.journal.Restore(ScopeLease))
}

// client is one connection and the peer behind it.
type client struct {
	c      *net.UnixConn
	peer   Peer
	closed atomic.Bool
}

func (s *Server) serveConn(c *net.UnixConn) {
	defer c.Close()
	peer, err := peerCred(c)
	allowed := err == nil && s.cfg.allowed(peer, s.group, time.Now())
	if !s.admit(peer.Uid) {
		if s.audit.request(auditRecord{Peer: peer, Verb: "connect", Error: "connection limit"}, allowed) {
			s.log.Warn("connection limit", "pid", peer.Pid, "uid", peer.Uid)
		}
		json.NewEncoder(c).Encode(Response{Code: CodeRateLimited, Error: fmt.Sprintf("more than %d connections from uid %d or %d in all", maxConnsPerUID, peer.Uid, maxConns)})
		return
	}
	defer s.leave(peer.Uid)
	if !allowed {
		if s.audit.request(auditRecord{Peer: peer, Verb: "connect", Error: "peer not allowed"}, false) {
			s.log.Warn("refused peer", "pid", peer.Pid, "uid", peer.Uid, "gid", peer.Gid, "err", err)
		}
		json.NewEncoder(c).Encode(Response{Code: CodeRefused, Error: fmt.Sprintf("uid %d gid %d is not allowed", peer.Uid, peer.Gid)})
		return
	}
	cl := &client{c: c, peer: peer}
	defer cl.closed.Store(true)
	r := bufio.NewReaderSize(c, 4096)
	enc := json.NewEncoder(c)
	for {
		c.SetReadDeadline(time.Now().Add(idleTimeout))
		line, err := readLine(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
				enc.Encode(Response{Code: CodeBadRequest, Error: err.Error()})
			}
			return
		}
		if len(line) == 0 {
			continue
		}
		resp, pause := s.handle(cl, line)
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if err := enc.Encode(resp); err != nil {
			return
		}
		if pause > 0 {
			time.Sleep(min(pause, maxPause))
		}
	}
}

// admit counts a new connection of uid, or refuses it over the limits.
func (s *Server) admit(uid uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[uid] >= maxConnsPerUID || s.nopen >= maxConns {
		return false
	}
	s.open[uid]++
	s.nopen++
	return true
}

func (s *Server) leave(uid uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[uid]--; s.open[uid] <= 0 {
		delete(s.open, uid)
	}
	s.nopen--
}

// readLine reads one line of at most MaxLine bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if len(line) > 0 && err == io.EOF {
				return line, nil
			}
			return nil, err
		}
		return line[:len(line)-1], nil
	}
}

// handle answers one line. Every line counts against a rate limit, valid or not: the session's own when it comes
// on the session's connection with its token, its uid's otherwise. pause is how long the client must wait before
// its next line is read, when it is over its limit.
func (s *Server) handle(cl *client, line []byte) (resp Response, pause time.Duration) {
	req, err := parseRequest(line)
	resp = Response{ID: req.ID}
	if ok, wait := s.charge(cl, req, time.Now()); !ok {
		err, pause = errorf(CodeRateLimited, "more than %g requests per second; retry in %d ms", s.cfg.Rate, wait.Milliseconds()), wait
		resp.Result = RateLimited{RetryAfterMS: max(1, wait.Milliseconds())}
	}
	var result any
	if err == nil {
		result, err = s.do(cl, req, &resp)
	}
	// Renewals and status reads change nothing: they are not written (a host renews twice a second).
	if err != nil || (req.Verb != VerbLeaseRenew && req.Verb != VerbStatus) {
		rec := auditRecord{Peer: cl.peer, Verb: req.Verb, ID: req.ID, OK: err == nil, Error: errString(err)}
		if spec, ok := verbSpecOf(req.Verb); ok && spec.change && err == nil {
			rec.Args = argsOf(req)
		}
		s.audit.request(rec, true)
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeKernel, Msg: err.Error()}
		}
		resp.Code, resp.Error = e.Code, e.Msg
		return resp, pause
	}
	resp.OK, resp.Result = true, result
	return resp, 0
}

// RateLimited is the result of a rate_limited response: when to send again.
type RateLimited struct {
	RetryAfterMS int64 `json:"retry_after_ms"`
}

// charge takes one request from the right rate limit.
func (s *Server) charge(cl *client, req Request, now time.Time) (bool, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != "" && s.owner == cl && req.Session == s.session {
		return s.sessLimit.Take(now, s.cfg.Rate, s.cfg.Burst)
	}
	return s.uidLimit.Allow(cl.peer.Uid, now)
}

func (s *Server) do(cl *client, req Request, resp *Response) (any, error) {
	peer := cl.peer
	switch req.Verb {
	case VerbHello:
		return s.hello(cl, resp)
	case VerbStatus:
		s.mu.Lock()
		var left int64
		if !s.expiry.IsZero() {
			left = time.Until(s.expiry).Milliseconds()
		}
		s.mu.Unlock()
		resp.Backend = s.backend.Name()
		// The caller sees its own uid's connections only: another user's destinations are theirs.
		return map[string]any{"lease_left_ms": left, "undo_entries": s.journal.Pending(), "backend": s.backend.Status(peer.Uid)}, nil
	}
	s.mu.Lock()
	if req.Session != s.session || s.session == "" {
		s.mu.Unlock()
		return nil, errorf(CodeBadSession, "no such session (send hello)")
	}
	if s.owner != cl {
		s.mu.Unlock()
		return nil, errorf(CodeBadSession, "the session belongs to another connection: each client says hello on its own")
	}
	if req.Verb != VerbRelease {
		// The lease starts (or is extended) before the change so that a change is never left without one.
		s.expiry = time.Now().Add(time.Duration(req.LeaseMS) * time.Millisecond)
	}
	s.mu.Unlock()
	switch req.Verb {
	case VerbLeaseRenew:
		return nil, nil
	case VerbRelease:
		s.mu.Lock()
		s.expiry = time.Time{}
		s.mu.Unlock()
		return nil, s.release()
	case VerbOrigin:
		p, _ := req.originPolicy()
		p.UID = peer.Uid // the policy applies to the session owner's connections only
		return nil, s.backend.SetOrigin(p)
	case VerbConn:
		p, _ := req.connPolicy()
		// Only the caller's own connections: another user's must not get (or lose) a cellular subflow.
		if err := s.owns(peer, p.Local, p.Remote); err != nil {
			return nil, err
		}
		p.UID = peer.Uid
		return nil, s.backend.SetConn(p)
	case VerbEndpoint:
		return nil, s.backend.SetEndpointSubflow(*req.Enabled)
	case VerbEnabled:
		return nil, s.backend.SetEnabled(*req.Value, func() (bool, error) {
			if req.Mptcpize {
				return true, nil
			}
			return underMptcpize(peer.Pid)
		})
	}
	return nil, errorf(CodeUnknownVerb, "unknown verb %.40q", req.Verb)
}

// owns checks that the established TCP socket local -> remote (a connection's initial subflow) belongs to the
// peer's uid, from sock_diag in the helper's network namespace.
func (s *Server) owns(peer Peer, local, remote netip.AddrPort) error {
	find := s.findSock
	if find == nil {
		find = findSock
	}
	uid, ok, err := find(local, remote)
	switch {
	case err != nil:
		return errorf(CodeKernel, "sock_diag: %v", err)
	case !ok:
		return errorf(CodeBadArgument, "no established connection %s -> %s", local, remote)
	case uid != peer.Uid:
		return errorf(CodeRefused, "connection %s -> %s belongs to uid %d, not %d", local, remote, uid, peer.Uid)
	}
	return nil
}

func findSock(local, remote netip.AddrPort) (uint32, bool, error) {
	d, err := diag.Open()
	if err != nil {
		return 0, false, err
	}
	defer d.Close()
	k, ok, err := d.Find(local, remote)
	if err != nil || !ok || k.State != diag.TCPEstablished {
		return 0, false, err
	}
	return k.UID, true, nil
}

// underMptcpize reports whether the peer or its parent (the browser that started the host) runs with
// mptcpize's LD_PRELOAD wrapper. An error means the helper cannot tell: an unknown pid (another pid namespace),
// or an environment it may not read (under the unit, every other uid's).
func underMptcpize(pid int) (bool, error) {
	if pid <= 0 {
		return false, errors.New("the caller's pid is unknown")
	}
	for i := 0; i < 2 && pid > 1; i++ {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			return false, err
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if strings.HasPrefix(kv, "LD_PRELOAD=") && strings.Contains(kv, "libmptcpwrap") {
				return true, nil
			}
		}
		if pid, err = parentPid(pid); err != nil {
			return false, err
		}
	}
	return false, nil
}

func parentPid(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses: the fields start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: no parent pid", pid)
	}
	return strconv.Atoi(f[1])
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func argsOf(r Request) map[string]any {
	m := map[string]any{"lease_ms": r.LeaseMS}
	if r.Addrs != nil {
		m["addrs"] = r.Addrs
	}
	if r.Local != "" {
		m["local"], m["remote"] = r.Local, r.Remote
	}
	if r.Multipath != nil {
		m["multipath"] = *r.Multipath
	}
	if r.Theta1 != 0 {
		m["theta1"] = r.Theta1
	}
	if r.Theta2 != nil {
		m["theta2"] = *r.Theta2
	}
	if r.Group != 0 {
		m["group"] = r.Group
	}
	if r.PreferCellular {
		m["prefer_cellular"] = true
	}
	if r.Enabled != nil {
		m["enabled"] = *r.Enabled
	}
	if r.Value != nil {
		m["value"] = *r.Value
	}
	if r.Mptcpize {
		m["mptcpize"] = true
	}
	return m
}

// RestoreOnly undoes what the record in dir holds and removes it: the unit's ExecStopPost, after a crash.
func RestoreOnly(dir, sysctlDir string) (int, error) {
	if sysctlDir == "" {
		sysctlDir = SysctlDir
	}
	if err := checkOwn(dir, true, false); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil // never started: nothing to undo
		}
		return 0, fmt.Errorf("state directory: %w", err)
	}
	_, left, err := OpenJournal(dir, sysctlDir)
	return len(left), err
}
