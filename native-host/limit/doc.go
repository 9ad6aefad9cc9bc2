// Package limit is token buckets: one (Bucket), or one per key in a map of bounded size (Keyed). The privileged
// helper limits each uid and each session with them, the host each page origin's peer reports.
package limit
