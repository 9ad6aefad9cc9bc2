// Package ifaces lists the network interfaces sysfs shows and tells their kind (WiFi, cellular, Ethernet,
// other) from what the kernel marks them with: wireless or phy80211 for WiFi, DEVTYPE=wwan or a WWAN driver for
// cellular, a physical device for Ethernet. It reads files only, so both the host's path measurement and the
// privileged helper (which looks up the cellular interface) use it.
package ifaces
