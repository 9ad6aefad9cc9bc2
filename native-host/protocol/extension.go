package protocol

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ExtensionID is the MPSurf extension's ID in Chromium-family browsers. The manifest's "key" (extension/key.txt)
// fixes it; a test recomputes it from that key. This is the only place Go code spells it.
const ExtensionID = "ajmpgeaaaphkhppijbmcemhafkpapbmh"

// ExtensionOrigin is the caller origin Chrome passes as argv[1], and the only one the host accepts from Chromium.
const ExtensionOrigin = "chrome-extension://" + ExtensionID + "/"

// FirefoxAddonID is the MPSurf add-on's ID in Firefox, fixed by the Firefox manifest's
// browser_specific_settings.gecko.id (extension/webpack.config.cjs); Firefox passes it as argv[2].
const FirefoxAddonID = "extension@mpsurf"

// ManifestName is the native messaging host's name: the extension connects to it and each browser's host manifest
// is named after it.
const ManifestName = "org.mpsurf.host"

// Caller says which browser started the host, from the arguments it was started with (PROTOCOL.md §1).
type Caller struct {
	Browser string // "chromium" (any Chromium-family browser) or "firefox"
	ID      string // the extension's ID or the add-on's ID
}

// ErrNotCaller means the arguments are not a browser starting a native host at all: the caller then treats them
// as a command line for people.
var ErrNotCaller = errors.New("not a browser's native messaging start")

// maxCallerArg bounds what a refusal quotes of a hostile argument.
const maxCallerArg = 200

// CheckCaller reads how a browser started the host and admits only MPSurf's own extension:
//   - Chromium: argv[1] is the caller's origin, chrome-extension://ID/, and must be ExtensionOrigin;
//   - Firefox: argv[1] is the absolute path of the host manifest Firefox read (named ManifestName + ".json") and
//     argv[2] the add-on's ID, which must be FirefoxAddonID.
//
// It returns the caller and the arguments after the caller's own (flags for the serving host). Arguments that are
// neither form give ErrNotCaller; either form naming another extension, or a Firefox start with a manifest path
// that is not the host's, gives an error that says why.
func CheckCaller(args []string) (Caller, []string, error) {
	if len(args) == 0 {
		return Caller{}, nil, ErrNotCaller
	}
	first := args[0]
	switch {
	case strings.HasPrefix(first, "chrome-extension://"):
		if first != ExtensionOrigin {
			return Caller{}, nil, fmt.Errorf("refusing caller %.*q: only %s may start this host", maxCallerArg, first, ExtensionOrigin)
		}
		return Caller{Browser: "chromium", ID: ExtensionID}, args[1:], nil
	case strings.HasSuffix(first, ".json") && len(args) >= 2 && !strings.HasPrefix(args[1], "-"):
		if !filepath.IsAbs(first) || filepath.Base(first) != ManifestName+".json" {
			return Caller{}, nil, fmt.Errorf("refusing a start with manifest %.*q: Firefox names the host manifest it read, an absolute path ending in /%s.json", maxCallerArg, first, ManifestName)
		}
		if args[1] != FirefoxAddonID {
			return Caller{}, nil, fmt.Errorf("refusing caller %.*q: only the add-on %s may start this host", maxCallerArg, args[1], FirefoxAddonID)
		}
		return Caller{Browser: "firefox", ID: FirefoxAddonID}, args[2:], nil
	}
	return Caller{}, nil, ErrNotCaller
}
