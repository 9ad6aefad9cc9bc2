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
const HostName = "org.mpsurf.host"

// Browsers and where each keeps per-user host manifests on Linux, relative to the home directory.
var browserDirs = map[string]string{
	"chromium": ".config/chromium",
	"chrome":   ".config/google-chrome",
}

// Options says where the manifest goes and what it points to.
type Options struct {
	Browser     string // "chromium" (default) or "chrome"; ignored when UserDataDir is set
	UserDataDir string // a browser profile directory (--user-data-dir); wins over Browser
	Path        string // the host binary; empty means the running executable
	Home        string // the home directory; empty means $HOME
}

// Manifest is the native messaging host manifest Chrome reads.
type Manifest struct {
	Name           string   `json:"name"`
	Description    string   `json:"description"`
	Path           string   `json:"path"`
	Type           string   `json:"type"`
	AllowedOrigins []string `json:"allowed_origins"`
}

// ManifestPath returns the manifest file the options select.
func ManifestPath(o Options) (string, error) {
	if o.UserDataDir != "" {
		dir, err := filepath.Abs(o.UserDataDir)
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "NativeMessagingHosts", HostName+".json"), nil
	}
	browser := o.Browser
	if browser == "" {
		browser = "chromium"
	}
	rel, ok := browserDirs[browser]
	if !ok {
		return "", fmt.Errorf("unknown browser %q: use chromium or chrome", browser)
	}
	home := o.Home
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(home, rel, "NativeMessagingHosts", HostName+".json"), nil
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
	exe, err := hostPath(o.Path)
	if err != nil {
		return "", Manifest{}, err
	}
	m := Manifest{
		Name:           HostName,
		Description:    "MPSurf: decides per web origin whether to browse over WiFi and cellular at once",
		Path:           exe,
		Type:           "stdio",
		AllowedOrigins: []string{protocol.ExtensionOrigin},
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
