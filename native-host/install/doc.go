// Package install writes and removes the native messaging host manifest that tells Chromium, Google Chrome or
// Firefox where mpsurf-host is and which extension (Chromium: by origin) or add-on (Firefox: by ID) may start it, per
// user, in a Chromium profile, or for every user of the machine (each browser's system-wide directory, which a
// system package installs into: SystemDir; a package build writes it into its staging tree, Options.Root, so the
// package's manifests are the ones this code writes). The manifest is written atomically (a temporary file renamed
// into place), so a browser starting at the same moment sees the old manifest or the new one, never half of one.
package install
