// Command testbed runs the emulated two-path network: a client namespace
// with a WiFi (wlan0) and a cellular (wwan0) interface, a router namespace
// whose two links are emulated in this process, and a server namespace for
// the origin server. It must run as root.
//
//	testbed up --profile NAME|FILE [--timeline DIR] [--mode MODE] [--seed N] [--cc ALG] [--exit-with-parent]
//	testbed run --profile NAME|FILE [--timeline DIR] [--mode MODE] -- CMD ARGS...
//	testbed down
//	testbed mode sp-wifi|sp-cell|mp
//	testbed info [--json]
//	testbed counters [--json]
//	testbed stats | flush | set-profile NAME|FILE   (talk to a running `up`)
//	testbed profiles
//	testbed accuracy [--json] [--quick]
//
// `up` prints "ready" on stdout once everything works and keeps running the
// link emulators until SIGINT or SIGTERM, then removes everything. `run`
// does the same around one command run in the root namespace with MPS_*
// variables describing the testbed, and exits with its status.
//
// Every command takes --prefix (default $MPS_PREFIX, else "mps"), the start
// of the namespace names, so tests can run beside a live testbed.
package main
