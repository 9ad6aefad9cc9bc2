package protocol

import (
	"errors"
	"fmt"
)

// Limits of PROTOCOL.md §3 and §4.
const (
	MinDeadlineMS = 100
	MaxDeadlineMS = 60000
	MaxReasonLen  = 256
	MaxID         = 1<<31 - 1
	// MaxSafeInt is the largest integer a JavaScript number holds exactly; the extension reads every number as one.
	MaxSafeInt = 1<<53 - 1
)

// Model names the policy-models file that produced a policy.
type Model struct {
	ID      string `json:"id"`
	Version int64  `json:"version"`
}

// Policy is the network-wide policy (PROTOCOL.md §3).
type Policy struct {
	Revision   int64  `json:"revision"`
	Multipath  bool   `json:"multipath"`
	Theta1     *int64 `json:"theta1"` // nil: never (no cellular subflow); 0: from the first byte
	Theta2     *int64 `json:"theta2"` // nil: no cap on cellular bytes
	DeadlineMS int64  `json:"deadline_ms"`
	Reason     string `json:"reason"`
	Model      Model  `json:"model"`
}

// Validate reports the first field out of the ranges of PROTOCOL.md §3.
func (p Policy) Validate() error {
	if p.Revision < 1 {
		return errors.New("revision: must be >= 1")
	}
	return checkTerms(p.Theta1, p.Theta2, p.DeadlineMS, p.Reason, p.Model)
}

// SameAs reports whether p and q say the same thing, ignoring their revisions.
func (p Policy) SameAs(q Policy) bool {
	if !SameBytes(p.Theta1, q.Theta1) || !SameBytes(p.Theta2, q.Theta2) {
		return false
	}
	p.Revision, q.Revision, p.Theta1, q.Theta1, p.Theta2, q.Theta2 = 0, 0, nil, nil, nil, nil
	return p == q
}

// SameBytes compares two optional byte counts (θ1 or θ2), nil meaning never or no cap.
func SameBytes(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// Bytes is an optional byte count, for θ1 and θ2 literals.
func Bytes(n int64) *int64 { return &n }

func checkTerms(theta1 *int64, theta2 *int64, deadline int64, reason string, m Model) error {
	switch {
	case theta1 != nil && (*theta1 < 0 || *theta1 > MaxSafeInt):
		return fmt.Errorf("theta1: must be null or 0 to %d", int64(MaxSafeInt))
	case theta2 != nil && (*theta2 < 0 || *theta2 > MaxSafeInt):
		return fmt.Errorf("theta2: must be null or 0 to %d", int64(MaxSafeInt))
	case deadline < MinDeadlineMS || deadline > MaxDeadlineMS:
		return fmt.Errorf("deadline_ms: must be %d to %d", MinDeadlineMS, MaxDeadlineMS)
	case len(reason) > MaxReasonLen:
		return fmt.Errorf("reason: longer than %d bytes", MaxReasonLen)
	case m.ID == "":
		return errors.New("model.id: empty")
	}
	return nil
}

// Decision is the answer to decide for one origin (PROTOCOL.md §3).
type Decision struct {
	Multipath  bool   `json:"multipath"`
	Theta1     *int64 `json:"theta1"` // nil: never
	Theta2     *int64 `json:"theta2"`
	DeadlineMS int64  `json:"deadline_ms"`
	Reason     string `json:"reason"`
	Model      Model  `json:"model"`
	Origin     string `json:"origin"`
	Tab        int64  `json:"tab"`
	Nav        string `json:"nav"`
	// Inputs holds every input the decision used. Values are numbers, strings, booleans or nil.
	Inputs map[string]any `json:"inputs"`
}

// Validate reports the first field out of range, including an input of a type the protocol does not allow.
func (d Decision) Validate() error {
	if err := checkTerms(d.Theta1, d.Theta2, d.DeadlineMS, d.Reason, d.Model); err != nil {
		return err
	}
	if d.Inputs == nil {
		return errors.New("inputs: missing")
	}
	for k, v := range d.Inputs {
		switch v.(type) {
		case nil, bool, string, int, int64, float64:
		default:
			return fmt.Errorf("inputs.%s: %T is not a number, string, boolean or null", k, v)
		}
	}
	return nil
}

// HelloReply is the body of a successful hello reply.
type HelloReply struct {
	Host     string `json:"host"`
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	Policy   Policy `json:"policy"`
}

// StatusReply is the body of a successful status reply.
type StatusReply struct {
	Host      string `json:"host"`
	Version   string `json:"version"`
	Protocol  int    `json:"protocol"`
	PID       int    `json:"pid"`
	UptimeMS  int64  `json:"uptime_ms"`
	Decisions int64  `json:"decisions"`
	Policy    Policy `json:"policy"`
}
