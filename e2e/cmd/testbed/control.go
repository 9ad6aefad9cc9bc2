//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/e2e/profiles"
	"github.com/mpsurf/mpsurf/e2e/topo"
	"github.com/mpsurf/mpsurf/native-host/cli"
)

// The control socket lets other commands reach the process that runs the
// emulators: one request line ("status", "stats", "flush",
// "set-profile NAME|ABSPATH", "rewind MS"), one JSON reply line.

// maxRewindMS bounds a trace offset: a day, far beyond any trace here.
const maxRewindMS = 24 * 3600 * 1000

func socketPath(prefix string) string { return filepath.Join(topo.RunDir, prefix+".sock") }

type reply struct {
	OK    bool            `json:"ok"`
	Error string          `json:"error,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
}

type statusReply struct {
	Pid         int    `json:"pid"`
	Profile     string `json:"profile"`
	TimelineDir string `json:"timeline_dir,omitempty"`
}

type controlServer struct {
	ln       net.Listener
	path     string
	tb       *topo.Testbed
	timeline string
}

func serveControl(prefix string, tb *topo.Testbed, timeline string) (*controlServer, error) {
	path := socketPath(prefix)
	// A killed instance leaves its socket file; we hold the instance lock,
	// so nobody else is listening on it.
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	s := &controlServer{ln: ln, path: path, tb: tb, timeline: timeline}
	go s.accept()
	return s, nil
}

func (s *controlServer) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.handle(c)
	}
}

func (s *controlServer) handle(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(io.LimitReader(c, 4096)).ReadString('\n')
	if err != nil {
		return
	}
	data, err := s.do(strings.TrimSpace(line))
	r := reply{OK: err == nil}
	if err != nil {
		r.Error = err.Error()
	} else if data != nil {
		r.Data, _ = json.Marshal(data)
	}
	json.NewEncoder(c).Encode(r)
}

func (s *controlServer) do(req string) (any, error) {
	cmd, arg, _ := strings.Cut(req, " ")
	switch cmd {
	case "status":
		return statusReply{Pid: os.Getpid(), Profile: s.tb.Profile().ID, TimelineDir: s.timeline}, nil
	case "stats":
		return s.tb.Stats(), nil
	case "flush":
		return nil, s.tb.Flush()
	case "rewind":
		ms, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || ms < 0 || ms > maxRewindMS {
			return nil, fmt.Errorf("rewind wants a trace offset in ms, 0 to %d: %q", maxRewindMS, arg)
		}
		return nil, s.tb.Rewind(time.Duration(ms) * time.Millisecond)
	case "set-profile":
		p, err := profiles.Load(arg)
		if err != nil {
			return nil, err
		}
		return statusReply{Pid: os.Getpid(), Profile: p.ID}, s.tb.SetProfile(p)
	}
	return nil, fmt.Errorf("unknown request %q", cmd)
}

func (s *controlServer) Close() {
	s.ln.Close()
	os.Remove(s.path)
}

// control sends one request to the running instance and decodes its data
// into out (if not nil).
func control(prefix, req string, out any) error {
	c, err := net.DialTimeout("unix", socketPath(prefix), 2*time.Second)
	if err != nil {
		return fmt.Errorf("testbed %q is not running (%v)", prefix, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(c, req+"\n"); err != nil {
		return err
	}
	var r reply
	if err := json.NewDecoder(c).Decode(&r); err != nil {
		return fmt.Errorf("reading reply: %w", err)
	}
	if !r.OK {
		return errors.New(r.Error)
	}
	if out != nil && r.Data != nil {
		return json.Unmarshal(r.Data, out)
	}
	return nil
}

func cmdControl(cmd string, args []string, w io.Writer) error {
	fs, prefix := newFlags(cmd)
	pos, err := cli.ParseMixed(fs, args)
	if err != nil {
		return err
	}
	req := cmd
	switch {
	case cmd == "set-profile" && len(pos) == 1:
		arg := pos[0]
		// The running instance may have another working directory.
		if strings.ContainsRune(arg, '/') || strings.HasSuffix(arg, ".json") {
			abs, err := filepath.Abs(arg)
			if err != nil {
				return err
			}
			arg = abs
		}
		// Validate here too, for an error that names the field at once.
		if _, err := profiles.Load(arg); err != nil {
			return err
		}
		req += " " + arg
	case cmd == "set-profile":
		return cli.Usagef("set-profile takes one profile")
	case cmd == "rewind":
		if len(pos) != 1 {
			return cli.Usagef("rewind takes one offset in ms")
		}
		if ms, err := strconv.ParseInt(pos[0], 10, 64); err != nil || ms < 0 || ms > maxRewindMS {
			return cli.Usagef("rewind: %q is not an offset in ms from 0 to %d", pos[0], maxRewindMS)
		}
		req += " " + pos[0]
	case len(pos) != 0:
		return cli.Usagef("%s takes no arguments", cmd)
	}
	var data json.RawMessage
	if err := control(*prefix, req, &data); err != nil {
		return err
	}
	if len(data) > 0 {
		fmt.Fprintf(w, "%s\n", data)
	}
	return nil
}

func cmdRewind(args []string, w io.Writer) error { return cmdControl("rewind", args, w) }
