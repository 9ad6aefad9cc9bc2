package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// fakeBinary is an executable file standing in for the host binary.
func fakeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mpsurf-host")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestManifestPath(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		o    Options
		want string
	}{
		{Options{Home: home}, filepath.Join(home, ".config/chromium/NativeMessagingHosts/org.mpsurf.host.json")},
		{Options{Home: home, Browser: "chromium"}, filepath.Join(home, ".config/chromium/NativeMessagingHosts/org.mpsurf.host.json")},
		{Options{Home: home, Browser: "chrome"}, filepath.Join(home, ".config/google-chrome/NativeMessagingHosts/org.mpsurf.host.json")},
		{Options{Home: home, Browser: "chrome", UserDataDir: "/tmp/prof"}, "/tmp/prof/NativeMessagingHosts/org.mpsurf.host.json"},
		{Options{Home: home, Browser: "firefox"}, filepath.Join(home, ".mozilla/native-messaging-hosts/org.mpsurf.host.json")},
		{Options{Home: home, Browser: "firefox", System: true}, "/usr/lib/mozilla/native-messaging-hosts/org.mpsurf.host.json"},
		{Options{Home: home, Browser: "chromium", System: true}, "/etc/chromium/native-messaging-hosts/org.mpsurf.host.json"},
		{Options{Home: home, Browser: "chrome", System: true}, "/etc/opt/chrome/native-messaging-hosts/org.mpsurf.host.json"},
	}
	for _, tc := range tests {
		got, err := ManifestPath(tc.o)
		if err != nil || got != tc.want {
			t.Errorf("%+v: %q, %v; want %q", tc.o, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Home: home, Browser: "safari"}, "chromium, chrome or firefox"},
		{Options{Home: home, Browser: "firefox", UserDataDir: "/tmp/prof"}, "not per profile"},
		{Options{Home: home, UserDataDir: "/tmp/prof", System: true}, "give one"},
	} {
		if _, err := ManifestPath(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	for _, b := range Browsers {
		dir, err := SystemDir(b)
		if err != nil || !filepath.IsAbs(dir) {
			t.Errorf("SystemDir(%s): %q, %v", b, dir, err)
		}
	}
	// $HOME is the command's to read (cmd/mpsurf-host TestInstallCommand): without a home there is no per-user place.
	if _, err := ManifestPath(Options{}); err == nil {
		t.Error("a per-user manifest path without a home directory")
	}
}

func TestInstallUninstall(t *testing.T) {
	for _, o := range []Options{
		{UserDataDir: t.TempDir()},
		{Home: t.TempDir(), Browser: "chrome"},
		{Home: t.TempDir()},
		{Home: t.TempDir(), Browser: "firefox"},
	} {
		o.Path = fakeBinary(t)
		file, m, err := Install(o)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"name": "org.mpsurf.host", "description": m.Description, "path": o.Path, "type": "stdio",
			"allowed_origins": []any{"chrome-extension://" + protocol.ExtensionID + "/"},
		}
		if o.Browser == "firefox" {
			// Firefox admits add-ons by ID, and reads allowed_extensions only.
			delete(want, "allowed_origins")
			want["allowed_extensions"] = []any{"extension@mpsurf"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("manifest\n got %v\nwant %v", got, want)
		}
		if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o644 {
			t.Errorf("mode %v", fi.Mode())
		}
		// Installing again replaces the manifest and leaves no temporary files.
		if _, _, err := Install(o); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(filepath.Dir(file))
		if len(entries) != 1 {
			t.Errorf("directory holds %d entries after two installs", len(entries))
		}

		gotFile, removed, err := Uninstall(o)
		if err != nil || !removed || gotFile != file {
			t.Fatalf("uninstall: %s %v %v", gotFile, removed, err)
		}
		if _, err := os.Stat(file); !os.IsNotExist(err) {
			t.Fatalf("manifest still there: %v", err)
		}
		if _, removed, err := Uninstall(o); err != nil || removed {
			t.Fatalf("second uninstall: removed=%v err=%v", removed, err)
		}
	}
}

func TestInstallChecksThePath(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	for _, p := range []string{filepath.Join(dir, "missing"), plain, dir} {
		if _, _, err := Install(Options{UserDataDir: t.TempDir(), Path: p}); err == nil {
			t.Errorf("%s accepted", p)
		}
	}
	// A relative path and a symlink both end up as the absolute path of the real file.
	bin := fakeBinary(t)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	_, m, err := Install(Options{UserDataDir: t.TempDir(), Path: "link"})
	if err != nil || m.Path != bin {
		t.Errorf("relative symlink: %q, %v; want %q", m.Path, err, bin)
	}
	// Without --path the manifest names the running binary (here the test binary).
	_, m, err = Install(Options{UserDataDir: t.TempDir()})
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if err != nil || m.Path != exe {
		t.Errorf("default path %q, %v; want %q", m.Path, err, exe)
	}
}

func TestUserDataDir(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"/usr/lib/chromium/chromium", "--user-data-dir=/tmp/p", "--no-first-run"}, "/tmp/p"},
		{[]string{"/usr/lib/chromium/chromium", "--user-data-dir", "/tmp/q"}, "/tmp/q"},
		{[]string{"/usr/lib/chromium/chromium", "--no-first-run"}, ""},
		{[]string{"chromium", "--user-data-dir"}, ""},
		{nil, ""},
	} {
		if got := UserDataDir(tc.argv); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// A fake /proc: the browser's main process with --user-data-dir is found once, its child processes and other
// programs are not.
func TestRunningProfiles(t *testing.T) {
	proc := t.TempDir()
	write := func(pid string, argv ...string) {
		dir := filepath.Join(proc, pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(argv, "\x00")+"\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("10", "/usr/lib/chromium/chromium", "--user-data-dir=/home/u/work-profile", "--load-extension=/x")
	write("11", "/usr/lib/chromium/chromium", "--type=renderer", "--user-data-dir=/home/u/work-profile")
	write("12", "/usr/lib/chromium/chromium", "--user-data-dir=/home/u/work-profile")
	write("13", "/usr/bin/vim", "--user-data-dir=/nope")
	write("14", "/opt/google/chrome/chrome")
	write("15", "/opt/google/chrome/chrome", "--user-data-dir", "/home/u/chrome-b")
	os.MkdirAll(filepath.Join(proc, "self"), 0o755)
	got := RunningProfiles(proc)
	if want := []string{"/home/u/work-profile", "/home/u/chrome-b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
	if d := ProcessUserDataDir(proc, 15); d != "/home/u/chrome-b" {
		t.Errorf("ProcessUserDataDir: %q", d)
	}
	if d := ProcessUserDataDir(proc, 99); d != "" {
		t.Errorf("a process that is gone: %q", d)
	}
}

// Any command line: UserDataDir never panics, and what it returns is "" or taken from the line itself.
func FuzzUserDataDir(f *testing.F) {
	f.Add("/usr/lib/chromium/chromium\x00--user-data-dir=/tmp/p")
	f.Add("chrome\x00--user-data-dir\x00/tmp/q\x00--type=renderer")
	f.Add("--user-data-dir")
	f.Fuzz(func(t *testing.T, line string) {
		argv := strings.Split(line, "\x00")
		got := UserDataDir(argv)
		if got != "" && !strings.Contains(line, got) {
			t.Errorf("%q from %q", got, argv)
		}
	})
}

// The system-wide manifests, staged as the package build stages them (--system --root), are the shared
// expectations in testdata/system/ byte for byte (packaging/test-packages checks the built package against the
// same files).
func TestSystemManifests(t *testing.T) {
	stage := t.TempDir()
	if err := os.MkdirAll(filepath.Join(stage, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stage, "usr/bin/mpsurf-host"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range Browsers {
		file, m, err := Install(Options{Browser: b, System: true, Root: stage, Path: "/usr/bin/mpsurf-host"})
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		dir, _ := SystemDir(b)
		if file != filepath.Join(stage, dir, HostName+".json") {
			t.Errorf("%s: staged at %s, not under %s", b, file, dir)
		}
		if m.Path != "/usr/bin/mpsurf-host" {
			t.Errorf("%s: the manifest names %s, not the path on the target", b, m.Path)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata/system", b+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: %s\n%s\nwant testdata/system/%s.json:\n%s", b, file, got, b, want)
		}
	}
	// A staged binary is named by its path on the target: relative, missing or not executable is refused, and a
	// root is for the system-wide manifest only.
	for _, o := range []Options{
		{System: true, Root: stage, Path: "usr/bin/mpsurf-host"},
		{System: true, Root: stage, Path: "/usr/bin/missing"},
		{System: true, Root: stage, Path: "/usr/bin"},
		{Root: stage, Path: "/usr/bin/mpsurf-host"},
	} {
		if _, _, err := Install(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
