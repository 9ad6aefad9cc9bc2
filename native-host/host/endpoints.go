package host

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/mptcp"
)

// EndpointsHealth is what status says of the kernel's MPTCP endpoints. NetworkManager ≥ 1.40 adds an endpoint with
// the subflow flag for the address of each connection it manages (connection.mptcp-flags, on by default when
// net.mptcp.enabled is 1), and with the in-kernel path manager every MPTCP connection then gets a subflow on every
// such address, the cellular one included, whatever MPSurf decided. Under the userspace path manager, which MPSurf's
// helper selects while it runs, the kernel ignores endpoints for new connections (shown on this kernel by
// TestIntegrationEndpointsIgnoredUnderUserspace in native-host/actuate), so the helper warns rather than refuses:
// refusing to start would leave no per-site control at all.
type EndpointsHealth struct {
	PathManager      string   `json:"path_manager"` // kernel, userspace, or unknown
	SubflowEndpoints []string `json:"subflow_endpoints"`
	State            string   `json:"state"` // ok, warn, unknown
	Detail           string   `json:"detail"`
	Fix              *string  `json:"fix"`
}

// The fix the README gives (section "Use it on the real web", NetworkManager).
const endpointsFix = "sudo nmcli connection modify <connection> connection.mptcp-flags disabled (each connection), or for all: " +
	"printf '[connection]\\nconnection.mptcp-flags=0x1\\n' | sudo tee /etc/NetworkManager/conf.d/90-mpsurf-mptcp.conf && sudo systemctl reload NetworkManager"

// MPTCPEndpoints reads the path manager (sysctl) and the endpoints (genetlink; no privilege needed to read).
func MPTCPEndpoints(sysctlDir string) EndpointsHealth {
	h := EndpointsHealth{PathManager: pathManager(sysctlDir), SubflowEndpoints: []string{}}
	c, err := mptcp.Dial(0)
	if err != nil {
		h.State, h.Detail = "unknown", "the kernel's MPTCP endpoints could not be read: "+err.Error()
		return h
	}
	defer c.Close()
	eps, err := c.Endpoints()
	if err != nil {
		h.State, h.Detail = "unknown", "the kernel's MPTCP endpoints could not be read: "+err.Error()
		return h
	}
	for _, e := range eps {
		if e.Flags&mptcp.FlagSubflow != 0 {
			name := e.Addr.String()
			if e.IfIndex != 0 {
				if ifi, err := netInterfaceName(int(e.IfIndex)); err == nil {
					name += " (" + ifi + ")"
				}
			}
			h.SubflowEndpoints = append(h.SubflowEndpoints, name)
		}
	}
	who := "something"
	if nm := networkManagerSetting(); nm != "" {
		who = "NetworkManager (" + nm + ")"
	} else if _, err := os.Stat("/run/NetworkManager"); err == nil {
		who = "NetworkManager (connection.mptcp-flags, on by default since 1.40)"
	}
	fix := endpointsFix
	switch {
	case len(h.SubflowEndpoints) == 0:
		h.State, h.Detail = "ok", "no in-kernel subflow endpoints: only MPSurf's helper adds subflows"
	case h.PathManager == "userspace":
		h.State = "ok"
		h.Detail = who + " added subflow endpoints (" + strings.Join(h.SubflowEndpoints, ", ") + "); they are ignored while MPSurf's helper " +
			"selects the userspace path manager, but once it stops every MPTCP connection would get a subflow on them"
		h.Fix = &fix
	default:
		h.State = "warn"
		h.Detail = who + " added subflow endpoints (" + strings.Join(h.SubflowEndpoints, ", ") + "): with the in-kernel path manager every " +
			"MPTCP connection gets a subflow on them, the cellular one included, whatever MPSurf decides per site"
		h.Fix = &fix
	}
	return h
}

func pathManager(dir string) string {
	if b, err := os.ReadFile(filepath.Join(dir, "path_manager")); err == nil {
		return strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "pm_type")); err == nil {
		switch strings.TrimSpace(string(b)) {
		case "0":
			return "kernel"
		case "1":
			return "userspace"
		}
	}
	return "unknown"
}

// networkManagerSetting reads NetworkManager's global default for connection.mptcp-flags from its configuration
// files, "" when none sets it (per-connection settings live in NetworkManager, readable with nmcli).
func networkManagerSetting() string {
	files := []string{"/etc/NetworkManager/NetworkManager.conf"}
	for _, d := range []string{"/usr/lib/NetworkManager/conf.d", "/etc/NetworkManager/conf.d", "/run/NetworkManager/conf.d"} {
		m, _ := filepath.Glob(filepath.Join(d, "*.conf"))
		files = append(files, m...)
	}
	val := ""
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
			if ok && strings.TrimSpace(k) == "connection.mptcp-flags" {
				val = "connection.mptcp-flags=" + strings.TrimSpace(v) + " in " + f
			}
		}
		fh.Close()
	}
	return val
}

func netInterfaceName(index int) (string, error) {
	ifi, err := net.InterfaceByIndex(index)
	if err != nil {
		return "", err
	}
	return ifi.Name, nil
}
