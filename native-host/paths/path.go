package paths

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/ifaces"
)

// Kinds of path: those of their interfaces.
const (
	WiFi     = ifaces.WiFi
	Cellular = ifaces.Cellular
	Ethernet = ifaces.Ethernet
	Other    = ifaces.Other
)

// Iface is one interface as sysfs describes it.
type Iface = ifaces.Iface

// Discover lists root/sys/class/net and classifies each interface (package ifaces).
func Discover(root string, names map[string]string) ([]Iface, error) {
	return ifaces.Discover(root, names)
}

// RTT and rate sources.
const (
	SourcePassive = "passive"
	SourceProbe   = "probe"
	// SourceProbeBound: the rate probe could only bound the rate from below (a fast link, a short transfer).
	SourceProbeBound = "probe_bound"
	// SourcePassiveBound: on a WiFi or wired path, passive windows with pauses in them alone (Rate.Bound): a lower
	// bound. A cellular path's windows are taken as measurements even so: its own bursts make the pauses, and
	// they are all it gets.
	SourcePassiveBound = "passive_bound"
)

// Path is the PROTOCOL.md Path object. Pointers are null when unknown.
type Path struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Up        bool     `json:"up"`
	Addrs     []string `json:"addrs"`
	RTTMS     *float64 `json:"rtt_ms"`
	DownBPS   *float64 `json:"down_bps"`
	UpBPS     *float64 `json:"up_bps"`
	Loss      *float64 `json:"loss"`
	RTTSource *string  `json:"rtt_source"`
	// DownSource says where DownBPS came from: passive (busy traffic), probe, or probe_bound and passive_bound
	// (lower bounds).
	DownSource *string `json:"down_source,omitempty"`
	// DownAgeMS is how long ago DownBPS was measured (the newest busy window that set or confirmed it, the
	// probe, or the kept measurement it was seeded from). A cellular rate soon says little of the link's rate now.
	DownAgeMS *int64 `json:"down_age_ms,omitempty"`
	// DownMeanBPS is the path's long-run downlink rate, the geometric mean of its measurements (Rate.Mean), and
	// DownMeanN how many measurements it rests on: where an old rate of this link tends to return to.
	DownMeanBPS *float64 `json:"down_mean_bps,omitempty"`
	DownMeanN   int      `json:"down_mean_n,omitempty"`
	// DownSustainedBPS is what a bulk flow held on the path under loss (Rate.Sustained), measured
	// DownSustainedAgeMS ago; absent when no long busy period with losses was seen within BoundHorizon.
	DownSustainedBPS   *float64 `json:"down_sustained_bps,omitempty"`
	DownSustainedAgeMS *int64   `json:"down_sustained_age_ms,omitempty"`
}

// ParseNames reads a name override such as "wlan0=wifi,wwan0=cellular".
func ParseNames(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		name, kind, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("names: %q: want NAME=KIND", item)
		}
		if len(name) > 15 || strings.ContainsAny(name, "/ \t") {
			return nil, fmt.Errorf("names: %q is not an interface name", name)
		}
		switch kind {
		case WiFi, Cellular, Ethernet, Other:
		default:
			return nil, fmt.Errorf("names: %s=%q: kind must be %s, %s, %s or %s", name, kind, WiFi, Cellular, Ethernet, Other)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("names: %s given twice", name)
		}
		out[name] = kind
	}
	return out, nil
}

// FormatNames is ParseNames' inverse, sorted by name.
func FormatNames(m map[string]string) string {
	var parts []string
	for n, k := range m {
		parts = append(parts, n+"="+k)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
