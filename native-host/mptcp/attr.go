package mptcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/mdlayher/netlink"
)

// Family and multicast group names (uapi MPTCP_PM_NAME, MPTCP_PM_EV_GRP_NAME).
const (
	FamilyName = "mptcp_pm"
	EventGroup = "mptcp_pm_events"
)

// Commands (uapi MPTCP_PM_CMD_*).
const (
	cmdAddAddr        = 1
	cmdDelAddr        = 2
	cmdGetAddr        = 3
	cmdFlushAddrs     = 4
	cmdSetLimits      = 5
	cmdGetLimits      = 6
	cmdSetFlags       = 7
	cmdSubflowCreate  = 10
	cmdSubflowDestroy = 11
)

// Top-level attributes of commands (uapi MPTCP_PM_ATTR_*).
const (
	attrAddr        = 1 // nested address
	attrRcvAddAddrs = 2 // u32
	attrSubflows    = 3 // u32
	attrToken       = 4 // u32
	attrLocID       = 5 // u8
	attrAddrRemote  = 6 // nested address
)

// Attributes inside a nested address (uapi MPTCP_PM_ADDR_ATTR_*).
const (
	addrFamily = 1 // u16, host order
	addrID     = 2 // u8
	addrAddr4  = 3 // struct in_addr, network order
	addrAddr6  = 4 // struct in6_addr
	addrPort   = 5 // u16, host order
	addrFlags  = 6 // u32
	addrIfIdx  = 7 // s32
)

// Event attributes (uapi MPTCP_ATTR_*).
const (
	evToken       = 1  // u32
	evFamily      = 2  // u16
	evLocID       = 3  // u8
	evRemID       = 4  // u8
	evSaddr4      = 5  // be32
	evSaddr6      = 6  // in6_addr
	evDaddr4      = 7  // be32
	evDaddr6      = 8  // in6_addr
	evSport       = 9  // be16
	evDport       = 10 // be16
	evBackup      = 11 // u8
	evError       = 12 // u8
	evFlags       = 13 // u16
	evTimeout     = 14 // u32
	evIfIdx       = 15 // s32
	evResetReason = 16 // u32
	evResetFlags  = 17 // u32
	evServerSide  = 18 // u8
)

const (
	afInet  = 2
	afInet6 = 10
)

// Flags of an endpoint (uapi MPTCP_PM_ADDR_FLAG_*).
type Flags uint32

const (
	FlagSignal   Flags = 1 << 0 // announce the address to the peer (ADD_ADDR)
	FlagSubflow  Flags = 1 << 1 // open a subflow from this address
	FlagBackup   Flags = 1 << 2 // subflows from it are backup (MP_PRIO)
	FlagFullmesh Flags = 1 << 3
	FlagImplicit Flags = 1 << 4 // created by the kernel, not by a user
)

var flagNames = []struct {
	f    Flags
	name string
}{{FlagSignal, "signal"}, {FlagSubflow, "subflow"}, {FlagBackup, "backup"}, {FlagFullmesh, "fullmesh"}, {FlagImplicit, "implicit"}}

func (f Flags) String() string {
	var parts []string
	for _, n := range flagNames {
		if f&n.f != 0 {
			parts = append(parts, n.name)
			f &^= n.f
		}
	}
	if f != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", uint32(f)))
	}
	return strings.Join(parts, ",")
}

// Endpoint is one address known to the in-kernel path manager, or the local side given to SUBFLOW_CREATE.
type Endpoint struct {
	ID      uint8 // 0 means "let the kernel choose" when adding
	Addr    netip.Addr
	Port    uint16
	Flags   Flags
	IfIndex int32
}

// Limits are the in-kernel path manager's per-connection limits.
type Limits struct {
	AddAddrAccepted uint32 `json:"add_addr_accepted"`
	Subflows        uint32 `json:"subflows"`
}

// encodeAddr writes the attributes of a nested address. Zero fields are left out, as the kernel treats a
// missing attribute as "not given" (for example a missing ID means "by address").
func encodeAddr(ae *netlink.AttributeEncoder, e Endpoint) error {
	switch {
	case e.Addr.Is4():
		ae.Uint16(addrFamily, afInet)
		a := e.Addr.As4()
		ae.Bytes(addrAddr4, a[:])
	case e.Addr.Is6() && !e.Addr.Is4In6():
		ae.Uint16(addrFamily, afInet6)
		a := e.Addr.As16()
		ae.Bytes(addrAddr6, a[:])
	case e.Addr.IsValid():
		return fmt.Errorf("mptcp: address %s: use the plain IPv4 form", e.Addr)
	}
	if e.ID != 0 {
		ae.Uint8(addrID, e.ID)
	}
	if e.Port != 0 {
		ae.Uint16(addrPort, e.Port)
	}
	if e.Flags != 0 {
		ae.Uint32(addrFlags, uint32(e.Flags))
	}
	if e.IfIndex != 0 {
		ae.Int32(addrIfIdx, e.IfIndex)
	}
	return nil
}

// decodeAddr reads a nested address.
func decodeAddr(ad *netlink.AttributeDecoder) (Endpoint, error) {
	var e Endpoint
	var family uint16
	for ad.Next() {
		switch ad.Type() {
		case addrFamily:
			family = ad.Uint16()
		case addrID:
			e.ID = ad.Uint8()
		case addrAddr4:
			b := ad.Bytes()
			if len(b) != 4 {
				return e, fmt.Errorf("mptcp: IPv4 address attribute of %d bytes", len(b))
			}
			e.Addr = netip.AddrFrom4([4]byte(b))
		case addrAddr6:
			b := ad.Bytes()
			if len(b) != 16 {
				return e, fmt.Errorf("mptcp: IPv6 address attribute of %d bytes", len(b))
			}
			e.Addr = netip.AddrFrom16([16]byte(b))
		case addrPort:
			e.Port = ad.Uint16()
		case addrFlags:
			e.Flags = Flags(ad.Uint32())
		case addrIfIdx:
			e.IfIndex = ad.Int32()
		}
	}
	if err := ad.Err(); err != nil {
		return e, fmt.Errorf("mptcp: address: %w", err)
	}
	if err := checkFamily(family, e.Addr); err != nil {
		return e, err
	}
	return e, nil
}

func checkFamily(family uint16, a netip.Addr) error {
	switch {
	case family == afInet && a.IsValid() && !a.Is4():
		return errors.New("mptcp: family AF_INET with an IPv6 address")
	case family == afInet6 && a.IsValid() && !a.Is6():
		return errors.New("mptcp: family AF_INET6 with an IPv4 address")
	case family != 0 && family != afInet && family != afInet6:
		return fmt.Errorf("mptcp: unknown address family %d", family)
	}
	return nil
}

// decodeEndpointMsg reads a GET_ADDR reply: one nested MPTCP_PM_ATTR_ADDR.
func decodeEndpointMsg(data []byte) (Endpoint, error) {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return Endpoint{}, fmt.Errorf("mptcp: endpoint: %w", err)
	}
	var e Endpoint
	var derr error
	found := false
	for ad.Next() {
		if ad.Type() == attrAddr {
			found = true
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				e, derr = decodeAddr(nad)
				return derr
			})
		}
	}
	if err := ad.Err(); err != nil {
		return e, fmt.Errorf("mptcp: endpoint: %w", err)
	}
	if !found {
		return e, errors.New("mptcp: endpoint reply without an address")
	}
	return e, nil
}

// decodeLimitsMsg reads a GET_LIMITS reply.
func decodeLimitsMsg(data []byte) (Limits, error) {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return Limits{}, fmt.Errorf("mptcp: limits: %w", err)
	}
	var l Limits
	for ad.Next() {
		switch ad.Type() {
		case attrRcvAddAddrs:
			l.AddAddrAccepted = ad.Uint32()
		case attrSubflows:
			l.Subflows = ad.Uint32()
		}
	}
	if err := ad.Err(); err != nil {
		return l, fmt.Errorf("mptcp: limits: %w", err)
	}
	return l, nil
}

// EventType is the kind of an event (uapi enum mptcp_event_type); it travels as the genetlink command.
type EventType uint8

const (
	EventCreated         EventType = 1
	EventEstablished     EventType = 2
	EventClosed          EventType = 3
	EventAnnounced       EventType = 6
	EventRemoved         EventType = 7
	EventSubEstablished  EventType = 10
	EventSubClosed       EventType = 11
	EventSubPriority     EventType = 13
	EventListenerCreated EventType = 15
	EventListenerClosed  EventType = 16
)

var eventNames = map[EventType]string{
	EventCreated: "created", EventEstablished: "established", EventClosed: "closed",
	EventAnnounced: "announced", EventRemoved: "removed", EventSubEstablished: "sub_established",
	EventSubClosed: "sub_closed", EventSubPriority: "sub_priority",
	EventListenerCreated: "listener_created", EventListenerClosed: "listener_closed",
}

func (t EventType) String() string {
	if n, ok := eventNames[t]; ok {
		return n
	}
	return fmt.Sprintf("event(%d)", uint8(t))
}

// Event is one path manager event. Fields the event does not carry are zero.
type Event struct {
	Type        EventType
	Token       uint32
	LocID       uint8
	RemID       uint8
	Saddr       netip.Addr
	Daddr       netip.Addr
	Sport       uint16
	Dport       uint16
	Backup      bool
	Error       uint8
	Flags       uint16
	Timeout     uint32
	IfIndex     int32
	ResetReason uint32
	ResetFlags  uint32
	ServerSide  bool
}

// Src and Dst are the event's local and remote socket addresses.
func (e Event) Src() netip.AddrPort { return netip.AddrPortFrom(e.Saddr, e.Sport) }
func (e Event) Dst() netip.AddrPort { return netip.AddrPortFrom(e.Daddr, e.Dport) }

// DecodeEvent decodes the attributes of an event message whose genetlink command is cmd.
func DecodeEvent(cmd uint8, data []byte) (Event, error) {
	ev := Event{Type: EventType(cmd)}
	if cmd == 0 {
		return ev, errors.New("mptcp: event of type 0 (unspec)")
	}
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return ev, fmt.Errorf("mptcp: %s event: %w", ev.Type, err)
	}
	var family uint16
	addr := func(want int) netip.Addr {
		b := ad.Bytes()
		if len(b) != want {
			err = fmt.Errorf("mptcp: %s event: address attribute %d of %d bytes", ev.Type, ad.Type(), len(b))
			return netip.Addr{}
		}
		if want == 4 {
			return netip.AddrFrom4([4]byte(b))
		}
		return netip.AddrFrom16([16]byte(b))
	}
	be16 := func() uint16 {
		b := ad.Bytes()
		if len(b) != 2 {
			err = fmt.Errorf("mptcp: %s event: port attribute of %d bytes", ev.Type, len(b))
			return 0
		}
		return binary.BigEndian.Uint16(b)
	}
	for ad.Next() && err == nil {
		switch ad.Type() {
		case evToken:
			ev.Token = ad.Uint32()
		case evFamily:
			family = ad.Uint16()
		case evLocID:
			ev.LocID = ad.Uint8()
		case evRemID:
			ev.RemID = ad.Uint8()
		case evSaddr4:
			ev.Saddr = addr(4)
		case evSaddr6:
			ev.Saddr = addr(16)
		case evDaddr4:
			ev.Daddr = addr(4)
		case evDaddr6:
			ev.Daddr = addr(16)
		case evSport:
			ev.Sport = be16()
		case evDport:
			ev.Dport = be16()
		case evBackup:
			ev.Backup = ad.Uint8() != 0
		case evError:
			ev.Error = ad.Uint8()
		case evFlags:
			ev.Flags = ad.Uint16()
		case evTimeout:
			ev.Timeout = ad.Uint32()
		case evIfIdx:
			ev.IfIndex = ad.Int32()
		case evResetReason:
			ev.ResetReason = ad.Uint32()
		case evResetFlags:
			ev.ResetFlags = ad.Uint32()
		case evServerSide:
			ev.ServerSide = ad.Uint8() != 0
		}
	}
	if err != nil {
		return ev, err
	}
	if err := ad.Err(); err != nil {
		return ev, fmt.Errorf("mptcp: %s event: %w", ev.Type, err)
	}
	if err := checkFamily(family, ev.Saddr); err != nil {
		return ev, err
	}
	if err := checkFamily(family, ev.Daddr); err != nil {
		return ev, err
	}
	return ev, nil
}

// encodeEvent is DecodeEvent's inverse, for tests and fuzz seeds.
func encodeEvent(ev Event) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	if ev.Token != 0 {
		ae.Uint32(evToken, ev.Token)
	}
	put := func(t4, t6 uint16, a netip.Addr) {
		switch {
		case a.Is4():
			b := a.As4()
			ae.Bytes(t4, b[:])
		case a.Is6():
			b := a.As16()
			ae.Bytes(t6, b[:])
		}
	}
	if ev.Saddr.Is4() || ev.Daddr.Is4() {
		ae.Uint16(evFamily, afInet)
	} else if ev.Saddr.Is6() || ev.Daddr.Is6() {
		ae.Uint16(evFamily, afInet6)
	}
	put(evSaddr4, evSaddr6, ev.Saddr)
	put(evDaddr4, evDaddr6, ev.Daddr)
	port := func(t, p uint16) {
		if p != 0 {
			ae.Bytes(t, binary.BigEndian.AppendUint16(nil, p))
		}
	}
	port(evSport, ev.Sport)
	port(evDport, ev.Dport)
	if ev.LocID != 0 {
		ae.Uint8(evLocID, ev.LocID)
	}
	if ev.RemID != 0 {
		ae.Uint8(evRemID, ev.RemID)
	}
	if ev.Backup {
		ae.Uint8(evBackup, 1)
	}
	if ev.Error != 0 {
		ae.Uint8(evError, ev.Error)
	}
	if ev.Flags != 0 {
		ae.Uint16(evFlags, ev.Flags)
	}
	if ev.Timeout != 0 {
		ae.Uint32(evTimeout, ev.Timeout)
	}
	if ev.IfIndex != 0 {
		ae.Int32(evIfIdx, ev.IfIndex)
	}
	if ev.ResetReason != 0 {
		ae.Uint32(evResetReason, ev.ResetReason)
	}
	if ev.ResetFlags != 0 {
		ae.Uint32(evResetFlags, ev.ResetFlags)
	}
	if ev.ServerSide {
		ae.Uint8(evServerSide, 1)
	}
	return ae.Encode()
}

// Request bodies. Each returns the attribute bytes of one command.

func endpointBody(e Endpoint) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(attrAddr, func(nae *netlink.AttributeEncoder) error { return encodeAddr(nae, e) })
	return ae.Encode()
}

func limitsBody(l Limits) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrRcvAddAddrs, l.AddAddrAccepted)
	ae.Uint32(attrSubflows, l.Subflows)
	return ae.Encode()
}

// subflowBody encodes SUBFLOW_CREATE (remote port required, local port optional) and SUBFLOW_DESTROY
// (both ports required; the kernel finds the subflow by its four-tuple).
func subflowBody(token uint32, local Endpoint, remote netip.AddrPort, destroy bool) ([]byte, error) {
	if token == 0 {
		return nil, errors.New("mptcp: subflow: token 0")
	}
	if !local.Addr.IsValid() || !remote.Addr().IsValid() {
		return nil, errors.New("mptcp: subflow: local and remote addresses are required")
	}
	if local.Addr.Is4() != remote.Addr().Is4() {
		return nil, fmt.Errorf("mptcp: subflow: local %s and remote %s are of different families", local.Addr, remote.Addr())
	}
	if remote.Port() == 0 || (destroy && local.Port == 0) {
		return nil, errors.New("mptcp: subflow: missing port")
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrToken, token)
	ae.Nested(attrAddr, func(nae *netlink.AttributeEncoder) error { return encodeAddr(nae, local) })
	ae.Nested(attrAddrRemote, func(nae *netlink.AttributeEncoder) error {
		return encodeAddr(nae, Endpoint{Addr: remote.Addr(), Port: remote.Port()})
	})
	return ae.Encode()
}

// subflowBackupBody encodes the userspace path manager's SET_FLAGS for one subflow of connection token (the
// token is what routes the command to the userspace PM rather than to the in-kernel endpoints). The kernel
// finds the subflow by its local and remote addresses, and by their ports when given: both are required here,
// so that the command can only ever name one subflow. The flags are sent even when zero, so that "not backup"
// is said, not implied.
func subflowBackupBody(token uint32, local, remote netip.AddrPort, backup bool) ([]byte, error) {
	if token == 0 {
		return nil, errors.New("mptcp: subflow flags: token 0")
	}
	if !local.Addr().IsValid() || !remote.Addr().IsValid() {
		return nil, errors.New("mptcp: subflow flags: local and remote addresses are required")
	}
	if local.Addr().Is4() != remote.Addr().Is4() {
		return nil, fmt.Errorf("mptcp: subflow flags: local %s and remote %s are of different families", local.Addr(), remote.Addr())
	}
	if local.Port() == 0 || remote.Port() == 0 {
		return nil, errors.New("mptcp: subflow flags: missing port")
	}
	var flags Flags
	if backup {
		flags = FlagBackup
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrToken, token)
	ae.Nested(attrAddr, func(nae *netlink.AttributeEncoder) error {
		if err := encodeAddr(nae, Endpoint{Addr: local.Addr(), Port: local.Port()}); err != nil {
			return err
		}
		nae.Uint32(addrFlags, uint32(flags))
		return nil
	})
	ae.Nested(attrAddrRemote, func(nae *netlink.AttributeEncoder) error {
		return encodeAddr(nae, Endpoint{Addr: remote.Addr(), Port: remote.Port()})
	})
	return ae.Encode()
}
