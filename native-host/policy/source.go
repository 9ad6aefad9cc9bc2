package policy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	models "github.com/mpsurf/mpsurf/policy-models"
)

// DefaultFile is the policy file inside a models directory.
const DefaultFile = "baseline.json"

// Kind says where a policy file lives.
type Kind int

const (
	Embedded Kind = iota // policy-models/ as built into the binary
	Dir                  // a models directory on disk
	OneFile              // a single file on disk
)

func (k Kind) String() string {
	return [...]string{"embedded", "dir", "file"}[k]
}

// Source is where the policy file comes from.
type Source struct {
	Kind Kind
	// Path is the file: absolute on disk, "policy-models/baseline.json" when embedded.
	Path string
}

// EmbeddedSource is the copy of policy-models/baseline.json inside the binary.
func EmbeddedSource() Source {
	return Source{Kind: Embedded, Path: path.Join(models.Dir, DefaultFile)}
}

// Resolve picks the source: a models directory holding baseline.json, or a policy file, else the embedded copy.
// Giving both is an error rather than a silent preference. (cmd/mpsurf-host takes them from its flags, else from
// MPSURF_MODELS and MPSURF_POLICY.)
func Resolve(modelsDir, policyFile string) (Source, error) {
	switch {
	case modelsDir != "" && policyFile != "":
		return Source{}, errors.New("both a models directory and a policy file given; give one")
	case modelsDir != "":
		abs, err := filepath.Abs(filepath.Join(modelsDir, DefaultFile))
		return Source{Kind: Dir, Path: abs}, err
	case policyFile != "":
		abs, err := filepath.Abs(policyFile)
		return Source{Kind: OneFile, Path: abs}, err
	}
	return EmbeddedSource(), nil
}

// OnDisk reports whether the file can change while the host runs.
func (s Source) OnDisk() bool { return s.Kind != Embedded }

// String names the source the way status and decision inputs report it.
func (s Source) String() string {
	if s.Kind == Embedded {
		return "embedded:" + s.Path
	}
	return s.Path
}

// stamp identifies one version of a file on disk cheaply, so that polling does not re-read an unchanged file.
type stamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func (s Source) stat() (stamp, error) {
	if !s.OnDisk() {
		return stamp{}, nil
	}
	fi, err := os.Stat(s.Path)
	if err != nil {
		return stamp{}, err
	}
	st := stamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino // a rename over the file changes the inode even when size and mtime match
	}
	return st, nil
}

// Load reads and parses the file.
func (s Source) Load() (File, error) {
	data, err := s.read()
	if err != nil {
		return File{}, err
	}
	return Parse(s.Path, data)
}

func (s Source) read() ([]byte, error) {
	var r io.ReadCloser
	var err error
	if s.Kind == Embedded {
		r, err = models.FS.Open(path.Base(s.Path))
	} else {
		r, err = os.Open(s.Path)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &FieldError{File: s.Path, Problem: "no such file"}
		}
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path, err)
	}
	return data, nil
}
