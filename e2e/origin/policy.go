package origin

import (
	"fmt"
	"net/http"
	"strings"
)

// PolicyHeaderName is the request header the extension sets (PROTOCOL.md §7).
const PolicyHeaderName = "Multipath-Policy"

// PolicyLog is what the log records about a request's Multipath-Policy header.
type PolicyLog struct {
	Present bool   `json:"present"`
	Raw     string `json:"raw,omitempty"`   // field lines joined with ", " (RFC 9110 §5.3)
	Dict    bool   `json:"dict"`            // parsed as an RFC 9651 Dictionary
	OK      bool   `json:"ok"`              // and its known keys have PROTOCOL.md §7 types
	Error   string `json:"error,omitempty"` // why not
	V       *int64 `json:"v,omitempty"`
	MP      *bool  `json:"mp,omitempty"`
	T1      *int64 `json:"t1,omitempty"` // KiB
	T2      *int64 `json:"t2,omitempty"` // KiB; absent means no cap
	DL      *int64 `json:"dl,omitempty"` // seconds
}

// ReadPolicy reads the Multipath-Policy header of h.
func ReadPolicy(h http.Header) PolicyLog {
	lines := h.Values(PolicyHeaderName)
	if len(lines) == 0 {
		return PolicyLog{}
	}
	return ParsePolicy(strings.Join(lines, ", "))
}

// ParsePolicy checks raw against PROTOCOL.md §7: a Dictionary whose keys v, t1, t2, dl,
// when present, are Integers and mp a Boolean. Unknown keys are ignored, as receivers must.
func ParsePolicy(raw string) PolicyLog {
	l := PolicyLog{Present: true, Raw: raw}
	d, err := ParseDictionary(raw)
	if err != nil {
		l.Error = err.Error()
		return l
	}
	l.Dict = true
	var problems []string
	integer := func(key string) *int64 {
		m, ok := d.Get(key)
		if !ok {
			return nil
		}
		if m.Inner || m.Item.Value.Kind != KindInteger {
			problems = append(problems, fmt.Sprintf("%s is not an Integer", key))
			return nil
		}
		v := m.Item.Value.Int
		return &v
	}
	l.V, l.T1, l.T2, l.DL = integer("v"), integer("t1"), integer("t2"), integer("dl")
	if m, ok := d.Get("mp"); ok {
		if m.Inner || m.Item.Value.Kind != KindBoolean {
			problems = append(problems, "mp is not a Boolean")
		} else {
			b := m.Item.Value.Int == 1
			l.MP = &b
		}
	}
	switch {
	case l.V == nil && len(problems) == 0:
		problems = append(problems, "no version key v")
	case l.V != nil && *l.V != 1:
		problems = append(problems, fmt.Sprintf("unknown version %d", *l.V))
	}
	l.OK = len(problems) == 0
	l.Error = strings.Join(problems, "; ")
	return l
}
