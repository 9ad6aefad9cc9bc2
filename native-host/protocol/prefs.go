package protocol

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// Prefs limits of PROTOCOL.md §4.
const (
	MinPrefsDeadlineMS = 1000
	MaxOverrides       = 1000
)

// Modes of Prefs.mode.
const (
	ModePerformance  = "performance"
	ModeBalanced     = "balanced"
	ModeBatterySaver = "battery_saver"
)

// Rules of a per-site override; "auto" leaves the site to the model.
const (
	RuleAlways = "always"
	RuleNever  = "never"
	RuleAuto   = "auto"
)

// Override is one per-site rule.
type Override struct {
	Host string `json:"host"`
	Rule string `json:"rule"`
}

// Prefs are the user's preferences (PROTOCOL.md §4 Prefs), the one shape the extension sends, the store keeps and
// the model reads. ParsePrefs checks and normalises them; a Prefs read back from the store was checked on the way in.
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

// ParsePrefs checks every field of a prefs body and normalises the override hosts (IDN to punycode, lower case).
// Two overrides for one host, once normalised, are refused: which rule wins would be a guess.
func ParsePrefs(body json.RawMessage) (Prefs, *Error) {
	obj, err := AsObject(body, "body")
	if err != nil {
		return Prefs{}, err
	}
	var p Prefs
	if p.Mode, err = obj.OneOf("mode", ModePerformance, ModeBalanced, ModeBatterySaver); err != nil {
		return Prefs{}, err
	}
	if p.DeadlineMS, err = obj.Int("deadline_ms", MinPrefsDeadlineMS, MaxDeadlineMS); err != nil {
		return Prefs{}, err
	}
	if p.BatteryFloorPercent, err = obj.Int("battery_floor_percent", 0, 100); err != nil {
		return Prefs{}, err
	}
	if p.ChargingUnlimited, err = obj.Bool("charging_unlimited"); err != nil {
		return Prefs{}, err
	}
	if p.QuotaBytes, err = obj.IntOrNull("quota_bytes", 0, MaxSafeInt); err != nil {
		return Prefs{}, err
	}
	if p.BillingDay, err = obj.Int("billing_day", 1, 31); err != nil {
		return Prefs{}, err
	}
	if p.HeaderScope, err = obj.OneOf("header_scope", "all", "opt_in", "never"); err != nil {
		return Prefs{}, err
	}
	items, err := obj.Array("overrides", MaxOverrides)
	if err != nil {
		return Prefs{}, err
	}
	p.Overrides = make([]Override, 0, len(items))
	seen := make(map[string]int, len(items))
	for i, it := range items {
		name := "overrides[" + strconv.Itoa(i) + "]"
		o, err := AsObject(it, name)
		if err != nil {
			return Prefs{}, err
		}
		h, err := o.String("host", -1)
		if err != nil {
			return Prefs{}, Errorf(CodeBadRequest, "%s.%s", name, err.Message)
		}
		rule, err := o.OneOf("rule", RuleAlways, RuleNever, RuleAuto)
		if err != nil {
			return Prefs{}, Errorf(CodeBadRequest, "%s.%s", name, err.Message)
		}
		norm, msg := NormalizeHost(h)
		if msg != "" {
			return Prefs{}, Errorf(CodeBadRequest, "%s.host: %s", name, msg)
		}
		if j, dup := seen[norm]; dup {
			return Prefs{}, Errorf(CodeBadRequest, "%s.host: %s is also overrides[%d]", name, norm, j)
		}
		seen[norm] = i
		p.Overrides = append(p.Overrides, Override{Host: norm, Rule: rule})
	}
	return p, nil
}

// RuleFor returns the user's rule for origin's host or a parent domain of it: RuleAlways, RuleNever, or "" for
// auto or none. A rule covers the site and its subdomains, as the options page says; the most specific one wins.
func (p *Prefs) RuleFor(origin string) string {
	if p == nil {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	host, best, rule := u.Hostname(), -1, ""
	for _, o := range p.Overrides {
		if host != o.Host && !strings.HasSuffix(host, "."+o.Host) {
			continue
		}
		if len(o.Host) > best {
			best, rule = len(o.Host), o.Rule
		}
	}
	if rule == RuleAlways || rule == RuleNever {
		return rule
	}
	return ""
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
	norm, err := NormalizeOrigin("https://" + h)
	if err != nil {
		return "", err.Error()
	}
	return strings.TrimPrefix(norm, "https://"), ""
}
