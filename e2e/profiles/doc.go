// Package profiles holds the testbed's path profiles: the rate, one-way
// delay, loss and queue size of the WiFi (wlan0) and cellular (wwan0) links,
// one JSON file per profile, each number with its source.
//
// The files in this directory are built into the binary, so a profile can be
// named by its id ("baseline"); a path to another JSON file works as well.
// A link direction may follow a Mahimahi trace instead of a fixed rate: a
// profile file names it relative to itself, a built-in profile from traces/
// here (att-lte-driving uses the AT&T LTE driving trace shipped with Mahimahi).
// Load validates a profile fully and names the offending field on error.
package profiles
