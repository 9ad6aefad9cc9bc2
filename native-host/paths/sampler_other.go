//go:build !linux

package paths

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/mpsurf/mpsurf/native-host/rrc"
)

// Sampler is not available on this system.
type Sampler struct{}

// NewSampler says that path measurement needs Linux.
func NewSampler(Config) (*Sampler, error) {
	return nil, fmt.Errorf("paths: measuring paths is not supported on %s (Linux only)", runtime.GOOS)
}

// Run returns at once.
func (*Sampler) Run(context.Context) error {
	return fmt.Errorf("paths: not supported on %s", runtime.GOOS)
}

// Snapshot is empty.
func (*Sampler) Snapshot() Snapshot { return Snapshot{Paths: []Path{}} }

// Seed does nothing here.
func (*Sampler) Seed(string, Seed) {}

// Known does nothing here.
func (*Sampler) Known(string, time.Time) {}

// ResumeRadio does nothing here.
func (*Sampler) ResumeRadio(string, rrc.Mark) {}

// RadioMark has nothing here.
func (*Sampler) RadioMark() (string, rrc.Mark, bool) { return "", rrc.Mark{}, false }

// HoldCellular does nothing here: nothing is probed.
func (*Sampler) HoldCellular(bool) {}
