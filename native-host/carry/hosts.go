package carry

import (
	"fmt"
	"net/netip"
	"strings"
)

// Hosts maps host names to addresses ahead of the system resolver: the helper's addresses of an origin, the
// relay's of a site it dials itself, a download's of its server. It is a testbed and override knob: in the
// testbed Chromium resolves origin.test through --host-resolver-rules, which the system resolver the host uses
// knows nothing about.
type Hosts map[string][]netip.Addr

// ParseHosts reads "name=IP[|IP...],name=IP": comma-separated name=addr entries; one name may list several
// addresses with '|' or by repeating the name. Anything else is an error, with nothing taken.
func ParseHosts(s string) (Hosts, error) {
	m := Hosts{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		name, addrs, ok := strings.Cut(e, "=")
		name = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
		if !ok || name == "" || strings.ContainsAny(name, " /:") {
			return nil, fmt.Errorf("entry %.80q is not name=address", e)
		}
		for _, a := range strings.Split(addrs, "|") {
			ip, err := netip.ParseAddr(strings.TrimSpace(a))
			if err != nil || ip.Zone() != "" {
				return nil, fmt.Errorf("%.80q is not an IP address", a)
			}
			m[name] = append(m[name], ip.Unmap())
		}
	}
	return m, nil
}
