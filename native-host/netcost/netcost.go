package netcost

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

// Info is what was read, in the host's status words (host.NetworkInfo).
type Info struct {
	Metered uint32 // NMMetered: 0 unknown, 1 yes, 2 no, 3 guess-yes, 4 guess-no
	Roaming *bool
	Source  string
	Detail  string
}

// Names and numbers of the services' D-Bus APIs (NetworkManager's and ModemManager's reference manuals).
const (
	nmName         = "org.freedesktop.NetworkManager"
	nmPath         = "/org/freedesktop/NetworkManager"
	nmDeviceIface  = "org.freedesktop.NetworkManager.Device"
	mmName         = "org.freedesktop.ModemManager1"
	mmPath         = "/org/freedesktop/ModemManager1"
	mm3gppIface    = "org.freedesktop.ModemManager1.Modem.Modem3gpp"
	mmRegRoaming   = 5 // MM_MODEM_3GPP_REGISTRATION_STATE_ROAMING
	mmRegRoamingSM = 7 // ..._ROAMING_SMS_ONLY
	mmRegRoamingCS = 10
)

// Reader caches what it read for a while: status is asked for every two seconds while the popup is open.
type Reader struct {
	Every time.Duration

	mu   sync.Mutex
	at   time.Time
	last Info
	conn *dbus.Conn
}

// Read returns the cellular interface's cost facts.
func (r *Reader) Read(cellIf string) Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	every := r.Every
	if every == 0 {
		every = 10 * time.Second
	}
	if !r.at.IsZero() && time.Since(r.at) < every {
		return r.last
	}
	r.at = time.Now()
	r.last = r.read(cellIf)
	return r.last
}

func (r *Reader) read(cellIf string) Info {
	if r.conn == nil {
		c, err := dbus.ConnectSystemBus()
		if err != nil {
			return Info{Source: "none", Detail: "no system D-Bus (" + err.Error() + "): metered and roaming unknown"}
		}
		r.conn = c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out Info
	var srcs, notes []string
	if cellIf == "" {
		notes = append(notes, "no cellular interface seen")
	} else {
		var dev dbus.ObjectPath
		if err := r.conn.Object(nmName, nmPath).CallWithContext(ctx, nmName+".GetDeviceByIpIface", 0, cellIf).Store(&dev); err != nil {
			notes = append(notes, "NetworkManager: "+shortErr(err))
		} else if v, err := r.conn.Object(nmName, dev).GetProperty(nmDeviceIface + ".Metered"); err != nil {
			notes = append(notes, "NetworkManager Metered: "+shortErr(err))
		} else if m, ok := v.Value().(uint32); ok {
			out.Metered = m
			srcs = append(srcs, fmt.Sprintf("NetworkManager Device.Metered of %s", cellIf))
		}
	}
	var objs map[dbus.ObjectPath]map[string]map[string]dbus.Variant
	if err := r.conn.Object(mmName, mmPath).CallWithContext(ctx, "org.freedesktop.DBus.ObjectManager.GetManagedObjects", 0).Store(&objs); err != nil {
		notes = append(notes, "ModemManager: "+shortErr(err))
	} else {
		for _, ifaces := range objs {
			p, ok := ifaces[mm3gppIface]["RegistrationState"]
			if !ok {
				continue
			}
			if st, ok := p.Value().(uint32); ok {
				roam := st == mmRegRoaming || st == mmRegRoamingSM || st == mmRegRoamingCS
				out.Roaming = &roam
				srcs = append(srcs, "ModemManager Modem3gpp.RegistrationState")
				break
			}
		}
	}
	out.Source = "none"
	if len(srcs) > 0 {
		out.Source = join(srcs)
	}
	out.Detail = join(notes)
	return out
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

func join(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}
