package mph2

import (
	"fmt"
	"net/netip"
	"slices"
	"syscall"
)

// A download reaches the public internet only, as the browser's Private Network Access lets a public page reach
// it: an https URL that names, resolves to, or (through DNS rebinding) later resolves to a loopback, private,
// link-local or other special-purpose address is refused. The check runs on the address each connection is about
// to connect to (net.Dialer.Control), after every resolver step, so no answer of a resolver gets around it.
//
// The one exception is a name the caller itself mapped to addresses (Options.Resolve: the host's MPSURF_HOSTS,
// `fetch --resolve`): those addresses may be reached through that name. A web page sets neither; the testbed and
// a user with a server on their own network do.

// special are ranges outside the public internet that netip's predicates do not name (RFC 6890 and its
// registry): "this network", shared address space (carrier-grade NAT), IETF protocol assignments, documentation,
// benchmarking, reserved; IPv6 discard-only and documentation, and the deprecated site-local.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("fec0::/10"),
}

// IPv6 prefixes that carry an IPv4 address, which decides: NAT64's well-known prefix and 6to4.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// publicAddr reports whether a is an address of the public internet: not unspecified, loopback, private (RFC 1918,
// unique-local), link-local (169.254/16 with the cloud metadata services, fe80::/10), multicast, broadcast or one
// of the special ranges; an IPv4-mapped, NAT64 or 6to4 address is judged by the IPv4 address it carries.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return publicAddr(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(a):
			return publicAddr(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	if !a.IsValid() || a.Zone() != "" || !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	for _, p := range special {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// notPublicError refuses a connection to an address outside the public internet.
type notPublicError struct{ addr netip.Addr }

func (e *notPublicError) Error() string {
	return fmt.Sprintf("%s is not a public address (loopback, private, link-local or reserved): refused, as the browser's Private Network Access refuses a public page's request to it", e.addr)
}

// targetControl is a net.Dialer.Control that refuses addresses outside the public internet but those in mapped,
// then runs next (binding to an interface), if any.
func targetControl(mapped []netip.Addr, next func(network, address string, c syscall.RawConn) error) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("connecting to %q: not an address", address)
		}
		if a := ap.Addr().Unmap(); !publicAddr(a) && !slices.Contains(mapped, a) {
			return &notPublicError{a}
		}
		if next != nil {
			return next(network, address, c)
		}
		return nil
	}
}
