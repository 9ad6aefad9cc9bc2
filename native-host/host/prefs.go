package host

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// Prefs limits of PROTOCOL.md §4.
const (
	minPrefsDeadlineMS = 1000
	maxOverrides       = 1000
)

// Override is one per-site rule.
type Override struct {
	Host string `json:"host"`
	Rule string `json:"rule"`
}

// Prefs are the user's preferences (PROTOCOL.md §4 Prefs), as the host normalised them.
type Prefs struct {
	Mode                string     `json:"mode"`
	DeadlineMS          int64      `json:"deadline_ms"`
	BatteryFloorPercent int64      `json:"battery_floor_percent"`
	ChargingUnlimited   bool       `json:"charging_unlimited"`
	QuotaBytes          *int64     `json:"quota_bytes"`
	BillingDay          int64      `json:"billing_day"`
	HeaderScope         string     `json:"header_scope"`
	Overrides           []Override `json:"overrides"`
}

// PrefsReply is the body of a successful prefs reply.
type PrefsReply struct {
	Applied bool  `json:"applied"`
	Prefs   Prefs `json:"prefs"`
}

func (s *Server) prefs(req protocol.Request) protocol.Reply {
	p, perr := ParsePrefs(req.Body)
	if perr != nil {
		s.log.Warn("prefs refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	db, perr := s.storeDB()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := db.SavePrefs(ctx, p); err != nil {
		return protocol.Fail(req, protocol.Errorf(protocol.CodeStoreUnavailable, "%v", err))
	}
	return protocol.OK(req, PrefsReply{Applied: true, Prefs: p})
}

func oneOf(obj map[string]json.RawMessage, name string, allowed ...string) (string, *protocol.Error) {
	v, perr := getString(obj, name)
	if perr != nil {
		return "", perr
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", protocol.Errorf(protocol.CodeBadRequest, "%s: must be one of %s", name, strings.Join(allowed, ", "))
}

// ParsePrefs checks every field of a prefs body and normalises the override hosts (IDN to punycode, lower case).
// Two overrides for one host, once normalised, are refused: which rule wins would be a guess.
func ParsePrefs(body json.RawMessage) (Prefs, *protocol.Error) {
	obj, perr := fields(body)
	if perr != nil {
		return Prefs{}, perr
	}
	var p Prefs
	if p.Mode, perr = oneOf(obj, "mode", "performance", "balanced", "battery_saver"); perr != nil {
		return Prefs{}, perr
	}
	if p.DeadlineMS, perr = getInt(obj, "deadline_ms", minPrefsDeadlineMS, protocol.MaxDeadlineMS); perr != nil {
		return Prefs{}, perr
	}
	if p.BatteryFloorPercent, perr = getInt(obj, "battery_floor_percent", 0, 100); perr != nil {
		return Prefs{}, perr
	}
	if p.ChargingUnlimited, perr = getBool(obj, "charging_unlimited"); perr != nil {
		return Prefs{}, perr
	}
	raw, ok := obj["quota_bytes"]
	if !ok {
		return Prefs{}, protocol.Errorf(protocol.CodeBadRequest, "quota_bytes: missing")
	}
	if !isNull(raw) {
		q, perr := intValue(raw, "quota_bytes", 0, protocol.MaxSafeInt)
		if perr != nil {
			return Prefs{}, protocol.Errorf(protocol.CodeBadRequest, "quota_bytes: must be null or an integer 0 to %d",
				int64(protocol.MaxSafeInt))
		}
		p.QuotaBytes = &q
	}
	if p.BillingDay, perr = getInt(obj, "billing_day", 1, 31); perr != nil {
		return Prefs{}, perr
	}
	if p.HeaderScope, perr = oneOf(obj, "header_scope", "all", "opt_in", "never"); perr != nil {
		return Prefs{}, perr
	}
	raw, ok = obj["overrides"]
	if !ok {
		return Prefs{}, protocol.Errorf(protocol.CodeBadRequest, "overrides: missing")
	}
	var items []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return Prefs{}, protocol.Errorf(protocol.CodeBadRequest, "overrides: must be an array")
	}
	if len(items) > maxOverrides {
		return Prefs{}, protocol.Errorf(protocol.CodeBadRequest, "overrides: more than %d", maxOverrides)
	}
	p.Overrides = make([]Override, 0, len(items))
	seen := make(map[string]int, len(items))
	for i, it := range items {
		name := "overrides[" + itoa(i) + "]"
		o, perr := fields(it)
		if perr != nil {
			return Prefs{}, protocol.Errorf(protocol.CodeBadRequest, "%s: must be an object", name)
		}
		h, perr := getString(o, "host")
		if perr != nil {
			return Prefs{}, protocol.Errorf(protocol.CodeBadRequest, "%s.%s", name, perr.Message)
		}
		rule, perr := oneOf(o, "rule", "always", "never", "auto")
		if perr != nil {
			return Prefs{}, protocol.Errorf(protocol.CodeBadRequest, "%s.%s", name, perr.Message)
		}
		norm, msg := NormalizeHost(h)
		if msg != "" {
			return Prefs{}, protocol.Errorf(protocol.CodeBadRequest, "%s.host: %s", name, msg)
		}
		if j, dup := seen[norm]; dup {
			return Prefs{}, protocol.Errorf(protocol.CodeBadRequest, "%s.host: %s is also overrides[%d]", name, norm, j)
		}
		seen[norm] = i
		p.Overrides = append(p.Overrides, Override{Host: norm, Rule: rule})
	}
	return p, nil
}

// NormalizeHost returns h as browsers serialise hosts (punycode, lower case), through the same normalisation as
// origins; a port, path or anything else that is not a bare host is refused with a message.
func NormalizeHost(h string) (string, string) {
	if h == "" {
		return "", "empty"
	}
	if strings.ContainsAny(h, "/?#@\\") || (!strings.HasPrefix(h, "[") && strings.Contains(h, ":")) ||
		(strings.HasPrefix(h, "[") && !strings.HasSuffix(h, "]")) {
		return "", "must be a host name, without scheme, port or path"
	}
	norm, err := protocol.NormalizeOrigin("https://" + h)
	if err != nil {
		return "", err.Error()
	}
	return strings.TrimPrefix(norm, "https://"), ""
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
