package policy

import (
	"math"
	"strconv"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// Input is everything the seed policy's decision depends on. The cost-benefit model has an input of its own
// (model.Input: paths, RRC state, battery, preferences, sizes).
type Input struct {
	// Origin is the normalised origin decided for, or "" for the network-wide policy. The seed policy does not
	// depend on it.
	Origin string
	// Model is the loaded policy file, Source where it came from, Revision the network-wide policy's revision.
	Model    File
	Source   Source
	Revision int64
	// PredictedSizeBytes is the predicted transfer size of the page, nil while the host has no size prediction.
	// The seed policy does not need it: it hands θ1 to the server, which knows the size.
	PredictedSizeBytes *int64
}

// Outcome is what Decide returns: the policy terms with their explanation and every input used.
type Outcome struct {
	Multipath  bool
	Theta1     *int64 // nil: never (the file says no multipath)
	Theta2     *int64
	DeadlineMS int64
	Reason     string
	Model      protocol.Model
	Inputs     map[string]any
}

// Decide applies the example policy of seed 001 §4.2: multipath is allowed, and the server uses it only for
// transfers of at least θ1 bytes and keeps cellular bytes under θ2 when one is set. The numbers are the model
// file's, each with its source there.
func Decide(in Input) Outcome {
	m := in.Model
	var predicted any // an untyped nil so that the input marshals as null
	if in.PredictedSizeBytes != nil {
		predicted = *in.PredictedSizeBytes
	}
	var theta2 any
	if m.Theta2Bytes != nil {
		theta2 = *m.Theta2Bytes
	}
	return Outcome{
		Multipath:  m.Multipath,
		Theta1:     theta1(m),
		Theta2:     m.Theta2Bytes,
		DeadlineMS: m.DeadlineMS,
		Reason:     reason(m),
		Model:      protocol.Model{ID: m.ID, Version: m.Version},
		Inputs: map[string]any{
			"model_id":             m.ID,
			"model_version":        m.Version,
			"policy_file":          in.Source.String(),
			"policy_revision":      in.Revision,
			"multipath_allowed":    m.Multipath,
			"theta1_bytes":         m.Theta1Bytes,
			"theta2_bytes":         theta2,
			"deadline_ms":          m.DeadlineMS,
			"predicted_size_bytes": predicted,
		},
	}
}

// theta1 is the file's θ1 as the protocol carries it: never when the file allows no multipath.
func theta1(m File) *int64 {
	if !m.Multipath {
		return nil
	}
	return protocol.Bytes(m.Theta1Bytes)
}

// Policy is the outcome as the network-wide policy of the given revision.
func (o Outcome) Policy(revision int64) protocol.Policy {
	return protocol.Policy{
		Revision: revision, Multipath: o.Multipath, Theta1: o.Theta1, Theta2: o.Theta2,
		DeadlineMS: o.DeadlineMS, Reason: o.Reason, Model: o.Model,
	}
}

// Decision is the outcome as the reply to one decide request.
func (o Outcome) Decision(origin string, tab int64, nav string) protocol.Decision {
	return protocol.Decision{
		Multipath: o.Multipath, Theta1: o.Theta1, Theta2: o.Theta2, DeadlineMS: o.DeadlineMS,
		Reason: o.Reason, Model: o.Model, Origin: origin, Tab: tab, Nav: nav, Inputs: o.Inputs,
	}
}

// reason is one line a user can read. The longest possible one (64-byte id, 16-digit numbers) stays well under
// protocol.MaxReasonLen; a test checks it.
func reason(m File) string {
	if !m.Multipath {
		return "multipath off in " + m.ID + " v" + strconv.FormatInt(m.Version, 10) + " (seed 001 §4.2 policy)"
	}
	var b strings.Builder
	b.WriteString("seed 001 §4.2: multipath only for transfers of at least ")
	b.WriteString(humanBytes(m.Theta1Bytes))
	if m.Theta2Bytes == nil {
		b.WriteString(", no cellular cap")
	} else {
		b.WriteString(", cellular capped at ")
		b.WriteString(humanBytes(*m.Theta2Bytes))
	}
	b.WriteString(", page-load tolerance ")
	b.WriteString(strconv.FormatFloat(float64(m.DeadlineMS)/1000, 'f', -1, 64))
	b.WriteString(" s")
	return b.String()
}

// humanBytes writes n in SI units with at most one decimal: 200000 -> "200 kB", 1500000 -> "1.5 MB".
func humanBytes(n int64) string {
	if n < 1000 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"kB", "MB", "GB", "TB", "PB"}
	v := float64(n)
	u := -1
	for v >= 1000 && u < len(units)-1 {
		v /= 1000
		u++
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + " " + units[u]
}
