package protocol

import "encoding/json"

// Why multipath is paused (PROTOCOL.md §4 Pause): the user's one-click pause, a cellular cap reached, roaming, or
// no consent yet; PauseNone when it is not paused.
const (
	PauseUser       = "user"
	PauseConsent    = "consent"
	PauseCapDaily   = "cap_daily"
	PauseCapMonthly = "cap_monthly"
	PauseRoaming    = "roaming"
	PauseNone       = "none"
)

// PauseReason is one reason a pause may give and what a decision's reason says of it.
type PauseReason struct {
	Why   string
	Words string // "" for PauseNone
}

// PauseReasons are the reasons a pause may give. The extension's list mirrors this one through
// native-host/vectors/names.json.
var PauseReasons = []PauseReason{
	{PauseUser, "you paused multipath"},
	{PauseConsent, "multipath waits for your consent (MPSurf's first-run page)"},
	{PauseCapDaily, "today's cellular cap is reached"},
	{PauseCapMonthly, "this month's cellular cap is reached"},
	{PauseRoaming, "the cellular link is roaming"},
	{PauseNone, ""},
}

// PauseWords is what a decision's reason says of why multipath is paused.
func PauseWords(why string) string {
	for _, r := range PauseReasons {
		if r.Why == why && r.Words != "" {
			return r.Words
		}
	}
	return "multipath is paused (" + why + ")"
}

// Pause is a parsed pause body. Why is "" when Paused is false.
type Pause struct {
	Paused bool
	Why    string
}

// PauseReply is the body of a successful pause reply.
type PauseReply struct {
	Paused bool   `json:"paused"`
	Why    string `json:"why"`
}

// ParsePause checks a pause body: paused, and a why that goes with it ("none" exactly when not paused).
func ParsePause(body json.RawMessage) (Pause, *Error) {
	obj, perr := AsObject(body, "body")
	if perr != nil {
		return Pause{}, perr
	}
	paused, perr := obj.Bool("paused")
	if perr != nil {
		return Pause{}, perr
	}
	whys := make([]string, len(PauseReasons))
	for i, r := range PauseReasons {
		whys[i] = r.Why
	}
	why, perr := obj.OneOf("why", whys...)
	if perr != nil {
		return Pause{}, perr
	}
	if paused == (why == PauseNone) {
		return Pause{}, Errorf(CodeBadRequest, "why: %q does not go with paused %v", why, paused)
	}
	if !paused {
		why = ""
	}
	return Pause{Paused: paused, Why: why}, nil
}
