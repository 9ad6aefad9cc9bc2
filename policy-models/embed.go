// Package models embeds the policy model files so that mpsurf-host works without a copy of this directory on disk.
// The files stay plain JSON data that the extension build and people read too; Go code loads them through
// native-host/policy, never from here directly.
package models

import "embed"

// FS holds every *.json file of policy-models/ as it was when the binary was built.
//
//go:embed *.json
var FS embed.FS

// Dir is how log lines and replies name the embedded copy of this directory.
const Dir = "policy-models"
