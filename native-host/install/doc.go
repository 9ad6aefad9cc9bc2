// Package install writes and removes the native messaging host manifest that tells Chrome or Chromium where
// mpsurf-host is and which extension may start it. The manifest is written atomically (a temporary file renamed
// into place), so a browser starting at the same moment sees the old manifest or the new one, never half of one.
package install
