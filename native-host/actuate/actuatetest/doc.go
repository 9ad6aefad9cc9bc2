// Package actuatetest runs the real privileged helper in a test's own process with its dry-run backend: the
// helper's protocol, checks and limits, nothing of the kernel changed. It is for tests only.
package actuatetest
