// Package battery reads the device's battery level and charging state from /sys/class/power_supply, the
// kernel's power-supply class (Documentation/ABI/testing/sysfs-class-power). Reads go through Root so tests
// point them at fixture trees. A machine without a battery (a desktop, a server, a VM) reports Present false,
// and the model then counts no battery constraint.
package battery
