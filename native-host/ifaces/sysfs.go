package ifaces

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Interface flags (linux/if.h) and the loopback hardware type (linux/if_arp.h).
const (
	iffUp          = 0x1
	iffLoopback    = 0x8
	arphrdEther    = 1
	arphrdLoopback = 772
)

// wwanDrivers are kernel drivers that only ever drive cellular modems' network functions.
var wwanDrivers = map[string]bool{
	"qmi_wwan": true, "cdc_mbim": true, "sierra_net": true, "huawei_cdc_ncm": true, "mhi_net": true,
	"ipa": true, "rmnet": true, "t7xx": true, "iosm": true,
}

// Iface is one interface as sysfs describes it.
type Iface struct {
	Name string
	Kind string
	Up   bool // operationally up; TUN devices report "unknown", which counts as up
}

// Discover lists root/sys/class/net and classifies each interface; names overrides the kind by name.
// Loopback and administratively down interfaces are left out. Sorted by name.
func Discover(root string, names map[string]string) ([]Iface, error) {
	dir := filepath.Join(root, "sys/class/net")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("paths: %w", err)
	}
	var out []Iface
	for _, e := range ents {
		name := e.Name()
		base := filepath.Join(dir, name)
		flags, err := readUint(filepath.Join(base, "flags"))
		if err != nil {
			continue // vanished, or not an interface directory (bonding_masters)
		}
		typ, _ := readUint(filepath.Join(base, "type"))
		if flags&iffLoopback != 0 || typ == arphrdLoopback || flags&iffUp == 0 {
			continue
		}
		oper, _ := os.ReadFile(filepath.Join(base, "operstate"))
		st := strings.TrimSpace(string(oper))
		ifc := Iface{Name: name, Up: st == "up" || st == "unknown" || st == ""}
		if k, ok := names[name]; ok {
			ifc.Kind = k
		} else {
			ifc.Kind = classify(base, typ)
		}
		out = append(out, ifc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func classify(base string, typ uint64) string {
	if exists(filepath.Join(base, "wireless")) || exists(filepath.Join(base, "phy80211")) {
		return WiFi
	}
	uevent, _ := os.ReadFile(filepath.Join(base, "uevent"))
	switch ParseUevent(uevent)["DEVTYPE"] {
	case "wlan":
		return WiFi
	case "wwan":
		return Cellular
	}
	if drv, err := os.Readlink(filepath.Join(base, "device/driver")); err == nil && wwanDrivers[filepath.Base(drv)] {
		return Cellular
	}
	if typ == arphrdEther && exists(filepath.Join(base, "device")) {
		return Ethernet // a physical device; veth, bridges and TUN have none
	}
	return Other
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readUint(p string) (uint64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return ParseUint(string(b))
}

// ParseUint reads a sysfs number: decimal, or hex with 0x (flags).
func ParseUint(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

// ParseUevent reads KEY=VALUE lines.
func ParseUevent(b []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// Kinds of interface.
const (
	WiFi     = "wifi"
	Cellular = "cellular"
	Ethernet = "ethernet"
	Other    = "other"
)
