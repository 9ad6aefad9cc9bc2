package carry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mpsurf/mpsurf/native-host/relay"
)

// ReadProxyConfig reads the MPTCP proxy's settings file (with the password): it must be readable by its user only.
func ReadProxyConfig(file string) (relay.Upstream, error) {
	var up relay.Upstream
	b, err := os.ReadFile(file)
	if err != nil {
		return up, err
	}
	if fi, err := os.Stat(file); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return up, fmt.Errorf("%s is readable by others (mode %o): chmod 600 it", file, fi.Mode().Perm())
	}
	if err := json.Unmarshal(b, &up); err != nil {
		return up, fmt.Errorf("%s: %w", file, err)
	}
	return up, up.Check()
}

// WriteProxyConfig replaces the settings file atomically, readable by the user only.
func WriteProxyConfig(file string, up relay.Upstream) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(up, "", "  ")
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // WriteFile keeps an existing file's mode
		return err
	}
	return os.Rename(tmp, file)
}
