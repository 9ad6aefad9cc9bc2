package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/native-host/carry"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/install"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// StatusBody is the status reply: the required fields, what the decision pipeline measures and remembers, and
// the health of the privileged helper and of the browser's MPTCP wrapping.
type StatusBody struct {
	protocol.StatusReply
	decide.Status
	Actuator     *carry.ActuatorHealth `json:"actuator,omitempty"`
	BrowserMPTCP *BrowserMPTCP         `json:"browser_mptcp,omitempty"`
	// MPTCPEndpoints says whether in-kernel subflow endpoints (NetworkManager's) would defeat per-site decisions.
	MPTCPEndpoints *EndpointsHealth `json:"mptcp_endpoints,omitempty"`
	// Network is what the OS says of the cellular link's cost: metered, roaming.
	Network *NetworkInfo `json:"network,omitempty"`
	// BrowserProfile is where the browser that started this host keeps its profile, so that the extension can
	// show install commands that reach it.
	BrowserProfile *BrowserProfile `json:"browser_profile,omitempty"`
	// Install says how this host was installed, so that the commands the extension shows to fix something are the
	// ones that apply: the Debian package's, or the source build's.
	Install InstallKind `json:"install,omitempty"`
}

// InstallKind is how the running host was installed.
type InstallKind string

const (
	// InstallPackage: the running executable is a file the mpsurf Debian package installed (/usr/bin/mpsurf-host).
	InstallPackage InstallKind = "package"
	// InstallSource: anything else, such as dist/mpsurf-host built from the source tree.
	InstallSource InstallKind = "source"
)

// packageFiles is the list of executables the mpsurf package ships (packaging/deb/mpsurf.package-files, installed
// by packaging/deb/mpsurf.yaml). The package's own record, not dpkg's database, which Debian policy keeps private
// to dpkg; and not the executable's directory: a source build copied to /usr/bin is still a source build.
const packageFiles = "/usr/share/mpsurf/package-files"

// installKind tells whether exe (the running executable, symlinks resolved) is one of the files listed in list
// (one absolute path a line).
func installKind(exe, list string) InstallKind {
	data, err := os.ReadFile(list)
	if err != nil || exe == "" {
		return InstallSource
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == exe {
			return InstallPackage
		}
	}
	return InstallSource
}

// runningInstall is installKind of this process's own executable.
func runningInstall() InstallKind {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return InstallSource
	}
	return installKind(exe, packageFiles)
}

// BrowserProfile names the --user-data-dir of the browser that started the host; null: its default directory.
type BrowserProfile struct {
	UserDataDir *string `json:"user_data_dir"`
}

// browserProfile reads the command line of the host's parent: Chrome starts a native host itself.
func browserProfile() BrowserProfile {
	if dir := install.ProcessUserDataDir("/proc", os.Getppid()); dir != "" {
		return BrowserProfile{UserDataDir: &dir}
	}
	return BrowserProfile{}
}

func (s *Server) status(req protocol.Request) protocol.Reply {
	snap, perr := s.snapshot()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	body := StatusBody{StatusReply: protocol.StatusReply{
		Host:      protocol.HostName,
		Version:   Version,
		Protocol:  protocol.Version,
		PID:       s.pid,
		UptimeMS:  time.Since(s.start).Milliseconds(),
		Decisions: s.decisions.Load(),
		Policy:    snap.Policy,
	}}
	s.logged(req) // the log's counts include the decisions already replied
	body.Status = s.dec.Status(context.Background())
	if body.Store != nil {
		body.Store.Unlogged = s.dlog.dropped()
	}
	act, mp, eps, prof := s.carry.Health(), browserMPTCP(s.preload, s.carry.HasRelay()), MPTCPEndpoints("/proc/sys/net/mptcp"), browserProfile()
	body.Actuator, body.BrowserMPTCP, body.MPTCPEndpoints, body.BrowserProfile = &act, &mp, &eps, &prof
	body.Install = s.install
	if s.network != nil {
		n := s.network()
		body.Network = &n
	}
	return protocol.OK(req, body)
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

// browserMPTCP reads the LD_PRELOAD the host was started with, pre, and whether a relay to a configured proxy runs.
func browserMPTCP(pre string, relay bool) BrowserMPTCP {
	switch {
	case strings.Contains(pre, "mptcpwrap"):
		return BrowserMPTCP{Wrapped: true, Way: "mptcpize", Detail: "the browser runs under mptcpize (LD_PRELOAD=" + clip(pre) + ")"}
	case relay:
		return BrowserMPTCP{Wrapped: false, Way: "relay", Detail: "the browser was started without mptcpize; sites sent through your MPTCP proxy still use both paths (the relay's connections are MPTCP)"}
	}
	return BrowserMPTCP{Wrapped: false, Way: "none", Detail: "the browser was started without mptcpize (no libmptcpwrap in LD_PRELOAD) and no MPTCP proxy is set"}
}

// clip cuts a message to 200 bytes, as inputs.actuation's are.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}
