package main

import (
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/host"
)

// A machine as the package finds it: each odd system says what works and what does not, a browser that is not
// installed is skipped with a line, and nothing is left unsaid.
func TestDoctor(t *testing.T) {
	full := func() doctorInput {
		return doctorInput{
			MPTCPEnabled: "1", Systemd: true, HelperSocket: true, Root: true, GroupExists: true,
			Endpoints:  host.EndpointsHealth{State: "ok", Detail: "no in-kernel subflow endpoints"},
			Browsers:   map[string]string{"chromium": "/usr/bin/chromium", "chrome": "/usr/bin/google-chrome", "firefox": "/usr/bin/firefox-esr"},
			Manifests:  map[string]bool{"chromium": true, "chrome": true, "firefox": true},
			Extensions: map[string]bool{"chromium": true, "firefox": true},
			Mptcpize:   "/usr/bin/mptcpize",
		}
	}
	fix := "nmcli ..."
	for _, tc := range []struct {
		name string
		edit func(*doctorInput)
		want map[string]string // what → level, and a word its line must hold
	}{
		{"everything", func(*doctorInput) {}, map[string]string{"kernel": "ok", "helper": "ok", "group": "ok", "chromium": "ok", "firefox": "ok", "chrome": "ok", "sockets": "ok"}},
		{"no MPTCP", func(in *doctorInput) { in.MPTCPEnabled = "" }, map[string]string{"kernel": "no header", "sockets": "skip", "endpoints": ""}},
		{"MPTCP off", func(in *doctorInput) { in.MPTCPEnabled = "0" }, map[string]string{"kernel": "warn sysctl"}},
		{"no systemd", func(in *doctorInput) { in.Systemd, in.HelperSocket = false, false }, map[string]string{"helper": "no --allow-group"}},
		{"helper down", func(in *doctorInput) { in.HelperSocket = false }, map[string]string{"helper": "warn systemctl"}},
		{"NetworkManager endpoints", func(in *doctorInput) {
			in.Endpoints = host.EndpointsHealth{State: "warn", Detail: "NetworkManager added subflow endpoints", Fix: &fix}
		}, map[string]string{"endpoints": "warn nmcli"}},
		{"no Chrome, no Firefox", func(in *doctorInput) { in.Browsers = map[string]string{"chromium": "/usr/bin/chromium"} },
			map[string]string{"chrome": "skip not installed", "firefox": "skip not installed", "chromium": "ok"}},
		{"no extension package", func(in *doctorInput) { in.Extensions = map[string]bool{} },
			map[string]string{"chromium": "warn webext-mpsurf", "firefox": "warn webext-mpsurf", "chrome": "ok"}},
		{"no mptcpize", func(in *doctorInput) { in.Mptcpize = "" }, map[string]string{"sockets": "warn apt install mptcpize"}},
		{"a user outside the group", func(in *doctorInput) { in.Root = false }, map[string]string{"group": "warn adduser"}},
		{"a member", func(in *doctorInput) { in.Root, in.InGroup = false, true }, map[string]string{"group": "ok serves you"}},
	} {
		in := full()
		tc.edit(&in)
		got := map[string]finding{}
		for _, f := range doctor(in) {
			if _, dup := got[f.What]; dup {
				t.Errorf("%s: two lines on %s", tc.name, f.What)
			}
			if f.Text == "" {
				t.Errorf("%s: %s says nothing", tc.name, f.What)
			}
			got[f.What] = f
		}
		for what, want := range tc.want {
			f, ok := got[what]
			if want == "" {
				if ok {
					t.Errorf("%s: a line on %s: %+v", tc.name, what, f)
				}
				continue
			}
			level, word, _ := strings.Cut(want, " ")
			if !ok || f.Level != level || !strings.Contains(f.Text, word) {
				t.Errorf("%s: %s = %+v, want level %s and %q", tc.name, what, f, level, word)
			}
		}
	}
}
