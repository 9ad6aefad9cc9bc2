// Package policy loads the policy model file, keeps the network-wide policy and its revision, and makes decisions.
//
// The file comes from a directory (MPSURF_MODELS, its baseline.json), a single file (MPSURF_POLICY), or else the copy
// of policy-models/ embedded at build time. A file is accepted only whole: every field in range and every model
// value backed by an entry in "sources"; otherwise the error names the file and the field.
//
// Decide is a pure function of its Input. Today it is the example policy of seed 001 §4.2 (use multipath only for
// transfers of at least θ1 bytes, which the server applies); a cost-benefit model replaces it by adding fields to
// Input, without changing the protocol. A Store is safe for concurrent use.
package policy
