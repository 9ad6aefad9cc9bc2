package protocol

// ExtensionID is the MPSurf extension's ID. The manifest's "key" (extension/key.txt) fixes it; a test recomputes it
// from that key. This is the only place Go code spells it.
const ExtensionID = "ajmpgeaaaphkhppijbmcemhafkpapbmh"

// ExtensionOrigin is the caller origin Chrome passes as argv[1], and the only one the host accepts.
const ExtensionOrigin = "chrome-extension://" + ExtensionID + "/"
