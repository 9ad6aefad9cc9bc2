package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// HostName is the native messaging host's name: the extension connects to it and the manifest file is named after it.
const HostName = protocol.ManifestName

// browserDir is where one browser reads host manifests on Linux.
type browserDir struct {
	user   string // per user, relative to the home directory
	system string // for every user of the machine
}

// The browsers and their manifest directories, as each documents them: Chromium's and Google Chrome's
// (chromium.org/developers/design-documents/native-messaging, developer.chrome.com/docs/extensions/develop/concepts/native-messaging)
// and Firefox's (MDN, "Native manifests", Linux). Firefox also reads /usr/lib64/mozilla/native-messaging-hosts/;
// /usr/lib/mozilla/ is the one it reads on every distribution.
var browserDirs = map[string]browserDir{
	"chromium": {user: ".config/chromium/NativeMessagingHosts", system: "/etc/chromium/native-messaging-hosts"},
	"chrome":   {user: ".config/google-chrome/NativeMessagingHosts", system: "/etc/opt/chrome/native-messaging-hosts"},
	"firefox":  {user: ".mozilla/native-messaging-hosts", system: "/usr/lib/mozilla/native-messaging-hosts"},
}

// Browsers lists the browsers Install knows, in a fixed order.
var Browsers = []string{"chromium", "chrome", "firefox"}

// Options says where the manifest goes and what it points to.
type Options struct {
	Browser     string // "chromium" (default), "chrome" or "firefox"
	UserDataDir string // a Chromium profile directory (--user-data-dir); wins over Browser's per-user directory
	System      bool   // the browser's system-wide directory, for every user of the machine
	Root        string // with System: write under this directory, as a package build stages its tree
	Path        string // the host binary; empty means the running executable (with Root: its path on the target)
	Home        string // the home directory (the command reads $HOME); needed for a per-user manifest
}

// Manifest is the native messaging host manifest a browser reads. Chromium admits callers by origin, Firefox by
// add-on ID; each manifest has the one list its browser reads.
type Manifest struct {
	Name              string   `json:"name"`
	Description       string   `json:"description"`
	Path              string   `json:"path"`
	Type              string   `json:"type"`
	AllowedOrigins    []string `json:"allowed_origins,omitempty"`
	AllowedExtensions []string `json:"allowed_extensions,omitempty"`
}

// SystemDir is the directory where browser reads host manifests for every user of the machine: the one a system
// package installs into.
func SystemDir(browser string) (string, error) {
	d, ok := browserDirs[browser]
	if !ok {
		return "", unknownBrowser(browser)
	}
	return d.system, nil
}

func unknownBrowser(b string) error {
	return fmt.Errorf("unknown browser %q: use chromium, chrome or firefox", b)
}

// ManifestFor is the manifest that lets browser's MPSurf extension start the host binary at path (absolute).
func ManifestFor(browser, path string) (Manifest, error) {
	m := Manifest{
		Name:        HostName,
		Description: "MPSurf: decides per web origin whether to browse over WiFi and cellular at once",
		Path:        path,
		Type:        "stdio",
	}
	switch browser {
	case "chromium", "chrome":
		m.AllowedOrigins = []string{protocol.ExtensionOrigin}
	case "firefox":
		m.AllowedExtensions = []string{protocol.FirefoxAddonID}
	default:
		return Manifest{}, unknownBrowser(browser)
	}
	return m, nil
}

func (o Options) browser() string {
	if o.Browser == "" {
		return "chromium"
	}
	return o.Browser
}

// ManifestPath returns the manifest file the options select.
func ManifestPath(o Options) (string, error) {
	browser := o.browser()
	d, ok := browserDirs[browser]
	if !ok {
		return "", unknownBrowser(browser)
	}
	switch {
	case o.UserDataDir != "" && o.System:
		return "", errors.New("--user-data-dir and --system: give one")
	case o.UserDataDir != "" && browser == "firefox":
		return "", errors.New("Firefox reads host manifests per user (~/.mozilla/native-messaging-hosts) or for the machine (--system), not per profile")
	case o.UserDataDir != "":
		dir, err := filepath.Abs(o.UserDataDir)
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "NativeMessagingHosts", HostName+".json"), nil
	case o.Root != "" && !o.System:
		return "", errors.New("a root directory is for the system-wide manifest only")
	case o.System && o.Root != "":
		root, err := filepath.Abs(o.Root)
		if err != nil {
			return "", err
		}
		return filepath.Join(root, d.system, HostName+".json"), nil
	case o.System:
		return filepath.Join(d.system, HostName+".json"), nil
	}
	home := o.Home
	if home == "" {
		return "", errors.New("no home directory: $HOME is not set")
	}
	return filepath.Join(home, d.user, HostName+".json"), nil
}

// hostPath returns the absolute path the manifest should name, checking that it is an executable file: Chrome
// requires an absolute path and fails only when the extension connects, far from the cause.
func hostPath(p string) (string, error) {
	if p == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("cannot find the running binary: %w", err)
		}
		p = exe
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("host binary: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("host binary %s is not an executable file", abs)
	}
	return abs, nil
}

// Install writes the manifest and returns its path and content.
func Install(o Options) (string, Manifest, error) {
	file, err := ManifestPath(o)
	if err != nil {
		return "", Manifest{}, err
	}
	var exe string
	if o.Root != "" {
		exe, err = stagedPath(o.Root, o.Path)
	} else {
		exe, err = hostPath(o.Path)
	}
	if err != nil {
		return "", Manifest{}, err
	}
	m, err := ManifestFor(o.browser(), exe)
	if err != nil {
		return "", Manifest{}, err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", Manifest{}, err
	}
	if err := writeAtomic(file, append(data, '\n')); err != nil {
		return "", Manifest{}, err
	}
	return file, m, nil
}

// stagedPath checks the host binary of a staged tree: p is where it will be on the target, so it must be
// absolute as given, and root/p must be an executable file now.
func stagedPath(root, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("with a root directory the host binary must be given as its absolute path on the target, not %q", p)
	}
	fi, err := os.Stat(filepath.Join(root, p))
	if err != nil {
		return "", fmt.Errorf("host binary in the staged tree: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("host binary %s is not an executable file", filepath.Join(root, p))
	}
	return filepath.Clean(p), nil
}

// Uninstall removes the manifest. Removing one that is not there is not an error: removed is then false.
func Uninstall(o Options) (file string, removed bool, err error) {
	if file, err = ManifestPath(o); err != nil {
		return "", false, err
	}
	if err := os.Remove(file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return file, false, nil
		}
		return file, false, err
	}
	return file, true, nil
}

func writeAtomic(file string, data []byte) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
