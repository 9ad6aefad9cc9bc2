// Package policy loads the network-wide policy file, keeps the network-wide policy the host pushes and its revision,
// and watches the file for changes.
//
// The file comes from a directory (MPSURF_MODELS, its baseline.json), a single file (MPSURF_POLICY), or else the copy
// of policy-models/ embedded at build time. A file is accepted only whole: every field in range and every model
// value backed by an entry in "sources"; otherwise the error names the file and the field
// (policy-models/baseline.schema.json says the same for editors and for the schema test).
//
// Decide is a pure function of its Input: the example policy of seed 001 §4.2 (use multipath only for transfers of
// at least θ1 bytes, which the server applies). It gives the network-wide policy, and every decision when a fixed
// policy file is asked for (--policy FILE, decide.Config.Fixed); per-origin decisions otherwise come from the
// cost-benefit model (native-host/model, through native-host/decide). A Store is safe for concurrent use.
package policy
