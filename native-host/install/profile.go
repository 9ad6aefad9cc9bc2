package install

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// browserBinaries are the names a Chromium-family browser's main process runs as (Debian's chromium wrapper
// execs /usr/lib/chromium/chromium; Google's packages run chrome).
var browserBinaries = []string{"chromium", "chromium-browser", "chrome", "google-chrome", "google-chrome-stable"}

// UserDataDir returns the profile directory a browser's command line names with --user-data-dir (either
// "--user-data-dir=DIR" or "--user-data-dir DIR"), or "" when it names none and the browser uses its default. A
// browser that uses one reads native messaging manifests from DIR/NativeMessagingHosts, not from the default.
func UserDataDir(argv []string) string {
	dir := ""
	for i, a := range argv {
		switch {
		case strings.HasPrefix(a, "--user-data-dir="):
			dir = strings.TrimPrefix(a, "--user-data-dir=")
		case a == "--user-data-dir" && i+1 < len(argv):
			dir = argv[i+1]
		}
	}
	return dir
}

// ProcessUserDataDir is UserDataDir of the process pid's command line, read from procDir ("/proc"); "" when it
// names none or cannot be read. The serving host asks it of its parent, the browser that started it.
func ProcessUserDataDir(procDir string, pid int) string {
	argv, err := cmdline(procDir, pid)
	if err != nil {
		return ""
	}
	return UserDataDir(argv)
}

// RunningProfiles lists the --user-data-dir of this user's running Chromium-family browsers (main processes only),
// each once, in pid order: a manifest installed for the browser's default directory does not reach them. It only
// reads /proc; it writes nothing.
func RunningProfiles(procDir string) []string {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return nil
	}
	uid := os.Getuid()
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	var out []string
	for _, pid := range pids {
		fi, err := os.Stat(filepath.Join(procDir, strconv.Itoa(pid)))
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		argv, err := cmdline(procDir, pid)
		if err != nil || len(argv) == 0 || !slices.Contains(browserBinaries, filepath.Base(argv[0])) {
			continue
		}
		if slices.ContainsFunc(argv, func(a string) bool { return strings.HasPrefix(a, "--type=") }) {
			continue // a renderer, GPU or utility process: its main process is listed
		}
		if dir := UserDataDir(argv); dir != "" && !slices.Contains(out, dir) {
			out = append(out, dir)
		}
	}
	return out
}

func cmdline(procDir string, pid int) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil, nil
	}
	return strings.Split(string(b), "\x00"), nil
}
