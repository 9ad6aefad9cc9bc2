// Package models embeds the policy model files so that mpsurf-host works without a copy of this directory on disk.
// The files stay plain JSON data that people and the tools read too, each checked against its JSON schema
// (schema_test.go). Go code loads them through native-host/policy (baseline.json) and native-host/model
// (model.json and the power files it names), which take FS and Dir; `mpsurf-host status` reads a power file from
// FS by name for its RRC timers.
package models

import "embed"

// FS holds every *.json file of policy-models/ as it was when the binary was built.
//
//go:embed *.json
var FS embed.FS

// Dir is how log lines and replies name the embedded copy of this directory.
const Dir = "policy-models"
