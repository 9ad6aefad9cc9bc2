package host

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInstallKind(t *testing.T) {
	dir := t.TempDir()
	// The list the mpsurf package ships (packaging/deb/mpsurf.yaml installs it as /usr/share/mpsurf/package-files).
	list := filepath.Join("..", "..", "packaging", "deb", "mpsurf.package-files")
	if _, err := os.Stat(list); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, exe, list string
		want            InstallKind
	}{
		{"the packaged host", "/usr/bin/mpsurf-host", list, InstallPackage},
		{"a source build", "/home/u/mpsurf/dist/mpsurf-host", list, InstallSource},
		{"a source build copied beside the package's", "/usr/local/bin/mpsurf-host", list, InstallSource},
		{"a prefix of a listed path is not it", "/usr/bin/mpsurf", list, InstallSource},
		{"no package installed", "/usr/bin/mpsurf-host", filepath.Join(dir, "absent.list"), InstallSource},
		{"no executable path", "", list, InstallSource},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := installKind(c.exe, c.list); got != c.want {
				t.Errorf("installKind(%q) = %q, want %q", c.exe, got, c.want)
			}
		})
	}
}

// The test binary is no file of the package: its status says source, as the shared vectors expect.
func TestStatusInstallSource(t *testing.T) {
	if got := embeddedServer(t).install; got != InstallSource {
		t.Errorf("install = %q, want source", got)
	}
}
