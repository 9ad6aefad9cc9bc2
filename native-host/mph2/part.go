package mph2

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PartSuffix names the file a download writes into until it is complete and checked; SidecarSuffix the small
// JSON file beside it that says which bytes of it are on disk and against which validators.
const (
	PartSuffix    = ".mpsurf-part"
	SidecarSuffix = ".mpsurf-part.json"
	sidecarFormat = 1
	maxSidecar    = 1 << 20
)

// Sidecar is the state of a partial download on disk.
type Sidecar struct {
	Version      int    `json:"version"`
	URL          string `json:"url"`
	Size         int64  `json:"size"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	Done         Spans  `json:"done"`
}

// PartPaths are the partial file and its sidecar for the final file out.
func PartPaths(out string) (part, sidecar string) { return out + PartSuffix, out + SidecarSuffix }

// The partial file and its sidecar may sit in a folder others can write to (a shared download folder, /tmp):
// neither is ever opened through a symlink, a new one is created exclusively, and one already there is taken up
// again only when it is the user's own regular file with no other name (ownFile). Otherwise someone who planted
// NAME.mpsurf-part as a symlink to the user's ~/.bashrc would have the download truncate and overwrite it.

// openPart opens out's partial file: with resume, the one on disk if it is the user's own (resumed true); else a
// new, empty one in its place.
func openPart(part string, resume bool) (f *os.File, resumed bool, err error) {
	if resume {
		if f, err := os.OpenFile(part, os.O_RDWR|noFollow, 0); err == nil {
			if fi, err := f.Stat(); err == nil && ownFile(fi) {
				return f, true, nil
			}
			f.Close()
		}
	}
	// Whatever has the name (a stale partial file, a planted symlink: removing a symlink leaves its target alone)
	// goes; the new file is created exclusively, so one planted again meanwhile fails the download instead.
	if err := os.Remove(part); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("cannot replace %s: %w", part, err)
	}
	f, err = os.OpenFile(part, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o644)
	return f, false, err
}

// ReadSidecar reads and checks the sidecar of out's partial download: the user's own file, not a symlink.
func ReadSidecar(out string) (*Sidecar, error) {
	_, path := PartPaths(out)
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !ownFile(fi) {
		return nil, fmt.Errorf("%s: not a file of this user's own", path)
	}
	var sc Sidecar
	dec := json.NewDecoder(&limited{f, maxSidecar})
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if sc.Version != sidecarFormat || sc.Size <= 0 || sc.Size >= maxObject || !sc.Done.Valid(sc.Size) {
		return nil, fmt.Errorf("%s: not a valid sidecar", path)
	}
	return &sc, nil
}

// writeSidecar makes the partial file's bytes durable, then replaces the sidecar atomically: a sidecar never
// claims bytes the disk does not hold.
func writeSidecar(f *os.File, out string, sc *Sidecar) error {
	if err := f.Sync(); err != nil {
		return err
	}
	_, path := PartPaths(out)
	data, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	// The temporary file is made anew and exclusively, never through a symlink; rename replaces whatever has the
	// sidecar's name (a symlink there included) without following it.
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	t, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return err
	}
	_, err = t.Write(data)
	if err == nil {
		err = t.Sync()
	}
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// RemovePart deletes out's partial file and sidecar; missing files are not an error.
func RemovePart(out string) error {
	part, sc := PartPaths(out)
	var errs []error
	for _, p := range []string{part, sc, sc + ".tmp"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// publish moves the finished partial file to out, or to "NAME (2).EXT" and so on when out exists: a finished
// download never overwrites a file. It returns the name used.
func publish(part, out string) (string, error) {
	ext := filepath.Ext(out)
	base := strings.TrimSuffix(out, ext)
	for i := 1; i <= 100; i++ {
		name := out
		if i > 1 {
			name = base + " (" + strconv.Itoa(i) + ")" + ext
		}
		err := os.Link(part, name)
		if err == nil {
			return name, os.Remove(part)
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s and 99 numbered variants exist", out)
}

type limited struct {
	f *os.File
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("sidecar larger than 1 MiB")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}
