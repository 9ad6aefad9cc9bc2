package topo

import "fmt"

// DefaultPrefix starts the names of the testbed's namespaces.
const DefaultPrefix = "mps"

// Namespaces of the default testbed.
const (
	ClientNS = DefaultPrefix + "-client"
	RouterNS = DefaultPrefix + "-router"
	ServerNS = DefaultPrefix + "-server"
)

// Interfaces. The client side keeps the names a phone would have; the router
// side of each emulated link is prefixed with "r-".
const (
	WiFiIf         = "wlan0"
	CellIf         = "wwan0"
	ServerIf       = "eth0"
	RouterWiFiIf   = "r-wlan0"
	RouterCellIf   = "r-wwan0"
	RouterServerIf = "r-eth0"
	ProxyIf        = "eth0" // in the proxy namespace (Options.Proxy)
	RouterProxyIf  = "r-eth1"
)

// Addresses (all /24).
const (
	WiFiAddr       = "10.200.1.2"
	WiFiGateway    = "10.200.1.1"
	CellAddr       = "10.200.2.2"
	CellGateway    = "10.200.2.1"
	ServerAddr     = "10.200.3.2" // the origin server listens here
	ServerGateway  = "10.200.3.1"
	ProxyAddr      = "10.200.4.2" // the MPTCP proxy (Squid) listens here when the testbed has one
	ProxyGateway   = "10.200.4.1"
	PrefixLen      = 24
	WiFiTable      = 101 // client routing table for traffic from WiFiAddr
	CellTable      = 102 // client routing table for traffic from CellAddr
	WiFiRulePref   = 1001
	CellRulePref   = 1002
	MPTCPSubflows  = 2 // ip mptcp limits: subflows
	MPTCPAddAddrOK = 2 // ip mptcp limits: add_addr_accepted
)

// Names are the namespace names of one testbed instance.
type Names struct {
	Prefix string `json:"prefix"`
	Client string `json:"client_ns"`
	Router string `json:"router_ns"`
	Server string `json:"server_ns"`
	// Proxy is the proxy host's namespace, between the router and the origins; it exists only when the testbed
	// was brought up with Options.Proxy.
	Proxy string `json:"proxy_ns"`
}

// NamesFor returns the namespace names for prefix.
func NamesFor(prefix string) Names {
	return Names{Prefix: prefix, Client: prefix + "-client", Router: prefix + "-router", Server: prefix + "-server", Proxy: prefix + "-proxy"}
}

func (n Names) all() []string { return []string{n.Client, n.Router, n.Server} }

// ValidPrefix checks that prefix makes usable namespace names.
func ValidPrefix(prefix string) error {
	if len(prefix) == 0 || len(prefix) > 20 {
		return fmt.Errorf("prefix %q: want 1-20 characters", prefix)
	}
	for _, c := range prefix {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return fmt.Errorf("prefix %q: want only a-z and 0-9", prefix)
		}
	}
	return nil
}

// Mode selects which paths the client uses.
type Mode string

const (
	// SPWiFi: default route via wlan0, no MPTCP subflow endpoint.
	SPWiFi Mode = "sp-wifi"
	// SPCell: default route via wwan0, no MPTCP subflow endpoint.
	SPCell Mode = "sp-cell"
	// MP: default route via wlan0 (the primary subflow on WiFi, as in seed
	// 000 §4.1.1) plus a subflow endpoint on wwan0, so the in-kernel path
	// manager opens a cellular subflow once a connection is established.
	MP Mode = "mp"
)

// Modes lists the valid modes.
var Modes = []Mode{SPWiFi, SPCell, MP}

// ParseMode checks s.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown mode %q (want sp-wifi, sp-cell or mp)", s)
}
