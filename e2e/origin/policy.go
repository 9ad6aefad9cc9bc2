package origin

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/dunglas/httpsfv"
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

// ParsePolicy checks raw against PROTOCOL.md §7: an RFC 9651 Dictionary (parsed by httpsfv, which passes the whole
// structured-field test suite: sfsuite_test.go) whose keys v, t1, t2, dl, when present, are Integers and mp a
// Boolean. Unknown keys are ignored, as receivers must.
func ParsePolicy(raw string) PolicyLog {
	l := PolicyLog{Present: true, Raw: raw}
	d, err := httpsfv.UnmarshalDictionary([]string{raw})
	if err != nil {
		l.Error = "structured field: " + err.Error()
		return l
	}
	l.Dict = true
	var problems []string
	// value is the bare value of the member key when it is an Item (not an Inner List).
	value := func(key string) (any, bool) {
		m, ok := d.Get(key)
		if !ok {
			return nil, false
		}
		if it, ok := m.(httpsfv.Item); ok {
			return it.Value, true
		}
		return nil, true
	}
	integer := func(key string) *int64 {
		v, ok := value(key)
		if !ok {
			return nil
		}
		n, isInt := v.(int64)
		if !isInt {
			problems = append(problems, fmt.Sprintf("%s is not an Integer", key))
			return nil
		}
		return &n
	}
	l.V, l.T1, l.T2, l.DL = integer("v"), integer("t1"), integer("t2"), integer("dl")
	if v, ok := value("mp"); ok {
		if b, isBool := v.(bool); isBool {
			l.MP = &b
		} else {
			problems = append(problems, "mp is not a Boolean")
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
