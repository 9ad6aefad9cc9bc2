// Package mpsurf holds what the whole project shares from its root: the release version, which package.json
// states once for the host, the helper, the Debian packages and the extension.
package mpsurf

import (
	_ "embed"
	"encoding/json"
)

//go:embed package.json
var packageJSON []byte

// Version is package.json's "version". A package.json without one is a broken build, caught by the tests.
func Version() string {
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(packageJSON, &p); err != nil || p.Version == "" {
		return "unknown"
	}
	return p.Version
}
