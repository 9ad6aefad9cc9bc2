package mptcp

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
)

func TestEventRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
	}{
		{"created v4", Event{Type: EventCreated, Token: 0xdeadbeef, Saddr: netip.MustParseAddr("10.0.0.1"),
			Daddr: netip.MustParseAddr("10.0.0.2"), Sport: 40000, Dport: 443, ServerSide: false}},
		{"sub established v6", Event{Type: EventSubEstablished, Token: 7, LocID: 2, RemID: 1,
			Saddr: netip.MustParseAddr("2001:db8::1"), Daddr: netip.MustParseAddr("2001:db8::2"),
			Sport: 1, Dport: 65535, Backup: true, IfIndex: 3}},
		{"sub closed with error", Event{Type: EventSubClosed, Token: 1, Error: 104, ResetReason: 2, ResetFlags: 1,
			Saddr: netip.MustParseAddr("192.0.2.1"), Daddr: netip.MustParseAddr("192.0.2.2"), Sport: 5, Dport: 6}},
		{"closed token only", Event{Type: EventClosed, Token: 42}},
		{"listener", Event{Type: EventListenerCreated, Saddr: netip.MustParseAddr("0.0.0.0"), Sport: 8443, Flags: 3, Timeout: 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := encodeEvent(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeEvent(uint8(tt.ev.Type), b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.ev) {
				t.Fatalf("got %+v, want %+v", got, tt.ev)
			}
		})
	}
}

// TestEventWireLayout pins the byte layout the kernel sends: ports big-endian, token in host order.
func TestEventWireLayout(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(evToken, 0x01020304)
	ae.Uint16(evFamily, afInet)
	ae.Bytes(evSaddr4, []byte{10, 1, 2, 3})
	ae.Bytes(evDport, []byte{0x01, 0xbb})
	ae.Uint8(evServerSide, 1)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	ev, err := DecodeEvent(uint8(EventEstablished), b)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Token != 0x01020304 || ev.Saddr != netip.MustParseAddr("10.1.2.3") || ev.Dport != 443 || !ev.ServerSide {
		t.Fatalf("decoded %+v", ev)
	}
}

func TestDecodeEventErrors(t *testing.T) {
	enc := func(f func(ae *netlink.AttributeEncoder)) []byte {
		ae := netlink.NewAttributeEncoder()
		f(ae)
		b, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		cmd  uint8
		data []byte
		want string
	}{
		{"type 0", 0, nil, "type 0"},
		{"short v4", 1, enc(func(ae *netlink.AttributeEncoder) { ae.Bytes(evSaddr4, []byte{1, 2, 3}) }), "of 3 bytes"},
		{"short port", 1, enc(func(ae *netlink.AttributeEncoder) { ae.Bytes(evSport, []byte{1}) }), "port attribute"},
		{"short token", 1, enc(func(ae *netlink.AttributeEncoder) { ae.Bytes(evToken, []byte{1}) }), "created event"},
		{"family mismatch", 1, enc(func(ae *netlink.AttributeEncoder) {
			ae.Uint16(evFamily, afInet6)
			ae.Bytes(evSaddr4, []byte{1, 2, 3, 4})
		}), "AF_INET6 with an IPv4"},
		{"truncated", 2, []byte{8, 0, 1}, "established event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeEvent(tt.cmd, tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestEndpointRoundTrip(t *testing.T) {
	tests := []Endpoint{
		{ID: 3, Addr: netip.MustParseAddr("10.9.0.1"), Flags: FlagSubflow | FlagBackup, IfIndex: 4},
		{ID: 200, Addr: netip.MustParseAddr("fd00::5"), Port: 1234, Flags: FlagSignal},
		{ID: 1},
	}
	for _, e := range tests {
		b, err := endpointBody(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeEndpointMsg(b)
		if err != nil {
			t.Fatal(err)
		}
		if got != e {
			t.Fatalf("got %+v, want %+v", got, e)
		}
	}
	if _, err := endpointBody(Endpoint{Addr: netip.MustParseAddr("::ffff:10.0.0.1")}); err == nil {
		t.Fatal("IPv4-mapped address accepted")
	}
	if _, err := decodeEndpointMsg(nil); err == nil {
		t.Fatal("reply without address accepted")
	}
}

func TestLimitsRoundTrip(t *testing.T) {
	l := Limits{AddAddrAccepted: 4, Subflows: 8}
	b, err := limitsBody(l)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeLimitsMsg(b)
	if err != nil || got != l {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestSubflowBody(t *testing.T) {
	l := Endpoint{Addr: netip.MustParseAddr("10.0.2.1")}
	r := netip.MustParseAddrPort("10.0.2.2:443")
	tests := []struct {
		name    string
		token   uint32
		local   Endpoint
		remote  netip.AddrPort
		destroy bool
		want    string
	}{
		{"create ok", 9, l, r, false, ""},
		{"token 0", 0, l, r, false, "token 0"},
		{"no local", 9, Endpoint{}, r, false, "required"},
		{"no remote port", 9, l, netip.MustParseAddrPort("10.0.2.2:0"), false, "missing port"},
		{"destroy without local port", 9, l, r, true, "missing port"},
		{"mixed families", 9, l, netip.MustParseAddrPort("[fd00::1]:443"), false, "different families"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := subflowBody(tt.token, tt.local, tt.remote, tt.destroy)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Read it back the way the kernel would: token, local, remote.
			ad, _ := netlink.NewAttributeDecoder(b)
			var token uint32
			var loc, rem Endpoint
			for ad.Next() {
				switch ad.Type() {
				case attrToken:
					token = ad.Uint32()
				case attrAddr:
					ad.Nested(func(n *netlink.AttributeDecoder) (err error) { loc, err = decodeAddr(n); return })
				case attrAddrRemote:
					ad.Nested(func(n *netlink.AttributeDecoder) (err error) { rem, err = decodeAddr(n); return })
				}
			}
			if ad.Err() != nil || token != tt.token || loc.Addr != tt.local.Addr ||
				netip.AddrPortFrom(rem.Addr, rem.Port) != tt.remote {
				t.Fatalf("read back token %d local %+v remote %+v err %v", token, loc, rem, ad.Err())
			}
		})
	}
}

func TestSubflowBackupBody(t *testing.T) {
	l, r := netip.MustParseAddrPort("10.0.1.1:40000"), netip.MustParseAddrPort("10.0.1.2:443")
	tests := []struct {
		name          string
		token         uint32
		local, remote netip.AddrPort
		backup        bool
		want          string // error substring; "" = valid
	}{
		{"set", 9, l, r, true, ""},
		{"clear", 9, l, r, false, ""},
		{"v6", 9, netip.MustParseAddrPort("[fd00::1]:40000"), netip.MustParseAddrPort("[fd00::2]:443"), true, ""},
		{"token 0", 0, l, r, true, "token 0"},
		{"no local", 9, netip.AddrPort{}, r, true, "required"},
		{"no remote", 9, l, netip.AddrPort{}, true, "required"},
		{"no local port", 9, netip.MustParseAddrPort("10.0.1.1:0"), r, true, "missing port"},
		{"no remote port", 9, l, netip.MustParseAddrPort("10.0.1.2:0"), true, "missing port"},
		{"mixed families", 9, l, netip.MustParseAddrPort("[fd00::2]:443"), true, "different families"},
		{"mapped local", 9, netip.MustParseAddrPort("[::ffff:10.0.1.1]:40000"), netip.MustParseAddrPort("[fd00::2]:443"), true, "plain IPv4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := subflowBackupBody(tt.token, tt.local, tt.remote, tt.backup)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Read it back the way the kernel does: token, local with its flags, remote; flags present even
			// when clear.
			ad, _ := netlink.NewAttributeDecoder(b)
			var token uint32
			var loc, rem Endpoint
			flagsSent := false
			for ad.Next() {
				switch ad.Type() {
				case attrToken:
					token = ad.Uint32()
				case attrAddr:
					raw := ad.Bytes()
					nad, _ := netlink.NewAttributeDecoder(raw)
					for nad.Next() {
						flagsSent = flagsSent || nad.Type() == addrFlags
					}
					nad, _ = netlink.NewAttributeDecoder(raw)
					loc, err = decodeAddr(nad)
				case attrAddrRemote:
					ad.Nested(func(n *netlink.AttributeDecoder) (err error) { rem, err = decodeAddr(n); return })
				}
			}
			wantFlags := Flags(0)
			if tt.backup {
				wantFlags = FlagBackup
			}
			if ad.Err() != nil || err != nil || token != tt.token || !flagsSent || loc.Flags != wantFlags ||
				netip.AddrPortFrom(loc.Addr, loc.Port) != tt.local || netip.AddrPortFrom(rem.Addr, rem.Port) != tt.remote ||
				rem.Flags != 0 {
				t.Fatalf("read back token %d local %+v (flags sent %v) remote %+v, errs %v %v", token, loc, flagsSent, rem, ad.Err(), err)
			}
		})
	}
}

func TestFlagsString(t *testing.T) {
	for f, want := range map[Flags]string{0: "", FlagSubflow: "subflow", FlagSignal | FlagBackup: "signal,backup", 1 << 9: "0x200"} {
		if got := f.String(); got != want {
			t.Errorf("%d: %q, want %q", f, got, want)
		}
	}
}

func FuzzDecodeEvent(f *testing.F) {
	seed, _ := encodeEvent(Event{Type: EventSubEstablished, Token: 5, Saddr: netip.MustParseAddr("10.0.0.1"),
		Daddr: netip.MustParseAddr("10.0.0.2"), Sport: 1, Dport: 2, LocID: 1, RemID: 2, Backup: true})
	f.Add(uint8(10), seed)
	f.Add(uint8(1), []byte{})
	f.Add(uint8(3), []byte{4, 0, 1, 0})
	f.Fuzz(func(t *testing.T, cmd uint8, data []byte) {
		ev, err := DecodeEvent(cmd, data)
		if err != nil {
			return
		}
		// Whatever decodes must survive a round trip unchanged.
		b, err := encodeEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeEvent(cmd, b)
		if err != nil || !reflect.DeepEqual(again, ev) {
			t.Fatalf("round trip: %+v -> %+v (%v)", ev, again, err)
		}
	})
}

func FuzzDecodeEndpoint(f *testing.F) {
	seed, _ := endpointBody(Endpoint{ID: 3, Addr: netip.MustParseAddr("10.0.0.1"), Flags: FlagSubflow})
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := decodeEndpointMsg(data)
		if err != nil {
			return
		}
		b, err := endpointBody(e)
		if err != nil {
			if e.Addr.Is4In6() {
				return // the kernel never sends one; the encoder refuses it on purpose
			}
			t.Fatal(err)
		}
		again, err := decodeEndpointMsg(b)
		if err != nil || again != e {
			t.Fatalf("round trip: %+v -> %+v (%v)", e, again, err)
		}
	})
}
