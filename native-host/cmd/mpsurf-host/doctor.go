package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/carry"
	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/install"
)

const doctorUsage = `mpsurf-host doctor
        say what works on this machine and what does not: the kernel's MPTCP, systemd and the helper, the
        group that may use it, NetworkManager's MPTCP endpoints, each browser (skipped when not installed)
        with its manifest and extension, and mptcpize for the browser's sockets; always exits 0 (the
        mpsurf package runs it after installing)
`

// The group whose members the packaged helper serves (packaging/systemd/mpsurf-actuator.service).
const helperGroup = "mpsurf"

// Where the webext-mpsurf package puts the extension, as Debian's webext-* packages do: Debian's chromium loads
// every directory under /usr/share/chromium/extensions (/etc/chromium.d/extensions), and Firefox on Linux every
// add-on under /usr/share/mozilla/extensions/{its application id}/, unsigned ones included. Each is there when
// the file named here is.
var extensionFiles = map[string]string{
	"chromium": "/usr/share/chromium/extensions/mpsurf/manifest.json",
	"firefox":  "/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/extension@mpsurf.xpi",
}

// doctorInput is what doctor judges; readDoctorInput reads it from this machine, tests write it.
type doctorInput struct {
	MPTCPEnabled string // /proc/sys/net/mptcp/enabled, "" without MPTCP in the kernel
	Systemd      bool   // systemd is the running init (/run/systemd/system)
	HelperSocket bool   // the helper's socket exists
	Root         bool   // doctor runs as root (as the package runs it)
	InGroup      bool   // the user running doctor is a member of helperGroup
	GroupExists  bool
	Endpoints    host.EndpointsHealth
	Browsers     map[string]string // browser (install.Browsers) → its binary, "" when not installed
	Manifests    map[string]bool   // browser → its system-wide manifest is installed
	Extensions   map[string]bool   // "chromium", "firefox" → the packaged extension is installed
	Mptcpize     string            // mptcpize's path, "" when not installed
}

// finding is one line of the report.
type finding struct {
	Level string // "ok", "warn" (works partly: says what does not), "no" (does not work here), "skip"
	What  string
	Text  string
}

// browserBinaries are the commands each browser is started by on Debian and in the vendors' packages.
var browserBinaries = map[string][]string{
	"chromium": {"chromium", "chromium-browser"},
	"chrome":   {"google-chrome", "google-chrome-stable"},
	"firefox":  {"firefox-esr", "firefox"},
}

var browserTitles = map[string]string{"chromium": "Chromium", "chrome": "Google Chrome", "firefox": "Firefox"}

func readDoctorInput() doctorInput {
	in := doctorInput{Browsers: map[string]string{}, Manifests: map[string]bool{}, Extensions: map[string]bool{}}
	if b, err := os.ReadFile("/proc/sys/net/mptcp/enabled"); err == nil {
		in.MPTCPEnabled = strings.TrimSpace(string(b))
	}
	in.Systemd = exists("/run/systemd/system")
	in.HelperSocket = exists(carry.DefaultHelper)
	in.Root = os.Geteuid() == 0
	if g, err := user.LookupGroup(helperGroup); err == nil {
		in.GroupExists = true
		if u, err := user.Current(); err == nil {
			ids, _ := u.GroupIds()
			in.InGroup = slices.Contains(ids, g.Gid)
		}
	}
	if in.MPTCPEnabled != "" {
		in.Endpoints = host.MPTCPEndpoints("/proc/sys/net/mptcp")
	}
	for _, b := range install.Browsers {
		for _, name := range browserBinaries[b] {
			if p, err := exec.LookPath(name); err == nil {
				in.Browsers[b] = p
				break
			}
		}
		if f, err := install.ManifestPath(install.Options{Browser: b, System: true}); err == nil {
			in.Manifests[b] = exists(f)
		}
	}
	for b, f := range extensionFiles {
		in.Extensions[b] = exists(f)
	}
	in.Mptcpize, _ = exec.LookPath("mptcpize")
	return in
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// doctor judges what works. Every line says what follows for the user; nothing here fails.
func doctor(in doctorInput) []finding {
	var out []finding
	add := func(level, what, format string, a ...any) {
		out = append(out, finding{level, what, fmt.Sprintf(format, a...)})
	}
	mptcp := in.MPTCPEnabled == "1"
	switch in.MPTCPEnabled {
	case "1":
		add("ok", "kernel", "MPTCP is on (net.mptcp.enabled = 1)")
	case "":
		add("no", "kernel", "this kernel has no MPTCP (no /proc/sys/net/mptcp): MPSurf still decides and sends its header, "+
			"and the proxy route works over plain TCP, but nothing goes over two paths")
	default:
		add("warn", "kernel", "MPTCP is off (net.mptcp.enabled = %s): new MPTCP sockets fall back to TCP; "+
			"sudo sysctl net.mptcp.enabled=1 turns it on", in.MPTCPEnabled)
	}
	switch {
	case !in.Systemd:
		add("no", "helper", "systemd is not running here, so mpsurf-actuator was not started: decisions go into the header "+
			"but the kernel is not changed; as root, run: mpsurf-actuator --allow-group %s --cell-if auto", helperGroup)
	case in.HelperSocket:
		add("ok", "helper", "mpsurf-actuator is running (%s)", carry.DefaultHelper)
	default:
		add("warn", "helper", "mpsurf-actuator is not running: systemctl status mpsurf-actuator says why")
	}
	switch {
	case !in.GroupExists:
		add("no", "group", "the group %s does not exist: reinstall the mpsurf package", helperGroup)
	case in.Root:
		add("ok", "group", "the helper serves the members of the group %s: sudo adduser USER %s", helperGroup, helperGroup)
	case in.InGroup:
		add("ok", "group", "you are in the group %s: the helper serves you", helperGroup)
	default:
		add("warn", "group", "you are not in the group %s, so the helper refuses your host: sudo adduser $USER %s", helperGroup, helperGroup)
	}
	if mptcp {
		switch in.Endpoints.State {
		case "ok":
			add("ok", "endpoints", "%s", in.Endpoints.Detail)
		case "warn":
			add("warn", "endpoints", "%s; fix: %s", in.Endpoints.Detail, deref(in.Endpoints.Fix))
		default:
			add("warn", "endpoints", "%s", in.Endpoints.Detail)
		}
	}
	for _, b := range install.Browsers {
		title := browserTitles[b]
		bin := in.Browsers[b]
		if bin == "" {
			add("skip", b, "%s is not installed; skipped (its manifest waits for it)", title)
			continue
		}
		var missing []string
		if !in.Manifests[b] {
			missing = append(missing, "the host manifest (reinstall mpsurf)")
		}
		ext, packaged := extensionFiles[b]
		ext = strings.TrimSuffix(ext, "/manifest.json")
		if packaged && !in.Extensions[b] {
			missing = append(missing, "the extension ("+ext+": install webext-mpsurf)")
		}
		if len(missing) > 0 {
			add("warn", b, "%s (%s) lacks %s", title, bin, strings.Join(missing, " and "))
			continue
		}
		if packaged {
			add("ok", b, "%s (%s) has the host manifest and loads the extension from %s", title, bin, ext)
		} else {
			add("ok", b, "%s (%s) has the host manifest; add the extension from the MPSurf zip (chrome://extensions)", title, bin)
		}
	}
	switch {
	case !mptcp:
		add("skip", "sockets", "browser sockets: no MPTCP in the kernel, nothing to turn on")
	case in.Mptcpize == "":
		add("warn", "sockets", "mptcpize is not installed: browsers' own connections stay plain TCP; direct multipath needs "+
			"sudo apt install mptcpize (then start the browser with mpsurf-browser), the proxy route does not")
	default:
		add("ok", "sockets", "mpsurf-browser BROWSER starts a browser under mptcpize so that its connections are MPTCP "+
			"(the launchers \"… (multipath)\" do it); a browser started otherwise reaches multipath through the proxy route only")
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func doctorCmd(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if err := cli.ParseNone(newFlags("doctor"), args); err != nil {
		return badUsage(stderr, "doctor: %v", err)
	}
	for _, f := range doctor(readDoctorInput()) {
		fmt.Fprintf(stdout, "%-4s %-9s %s\n", f.Level, f.What, f.Text)
	}
	return exitOK
}
