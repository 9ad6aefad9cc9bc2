package host

import (
	"context"
	"os"
	"time"

	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/install"
	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// StatusBody is the status reply: the required fields, what the decision pipeline measures and remembers, and
// the health of the privileged helper and of the browser's MPTCP wrapping.
type StatusBody struct {
	protocol.StatusReply
	decide.Status
	Actuator     *ActuatorHealth `json:"actuator,omitempty"`
	BrowserMPTCP *BrowserMPTCP   `json:"browser_mptcp,omitempty"`
	// MPTCPEndpoints says whether in-kernel subflow endpoints (NetworkManager's) would defeat per-site decisions.
	MPTCPEndpoints *EndpointsHealth `json:"mptcp_endpoints,omitempty"`
	// Network is what the OS says of the cellular link's cost: metered, roaming.
	Network *NetworkInfo `json:"network,omitempty"`
	// BrowserProfile is where the browser that started this host keeps its profile, so that the extension can
	// show install commands that reach it.
	BrowserProfile *BrowserProfile `json:"browser_profile,omitempty"`
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
	body.Status = s.dec.Status(context.Background())
	act, mp, eps, prof := s.act.health(), browserMPTCP(s.proxy.hasRelay()), MPTCPEndpoints("/proc/sys/net/mptcp"), browserProfile()
	body.Actuator, body.BrowserMPTCP, body.MPTCPEndpoints, body.BrowserProfile = &act, &mp, &eps, &prof
	if f := s.network.Load(); f != nil {
		n := (*f)()
		body.Network = &n
	}
	return protocol.OK(req, body)
}
