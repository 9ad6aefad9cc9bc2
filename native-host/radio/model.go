package radio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Technologies a model file may describe.
const (
	LTE    = "lte"
	ThreeG = "3g"
	WiFi   = "wifi"
)

// Model is one radio technology's RRC state machine and power draw (policy-models/power.schema.json).
type Model struct {
	Schema      string            `json:"$schema,omitempty"`
	ID          string            `json:"id"`
	Version     int               `json:"version"`
	Technology  string            `json:"technology"`
	Description string            `json:"description"`
	Promotion   PromotionSpec     `json:"promotion"`
	Connected   ConnectedSpec     `json:"connected"`
	Tail        []Phase           `json:"tail"`
	IdlePowerMW float64           `json:"idle_power_mw"`
	Sources     map[string]string `json:"sources"`
}

// PromotionSpec is the IDLE -> connected promotion.
type PromotionSpec struct {
	Name       string  `json:"name"`
	DurationMS float64 `json:"duration_ms"`
	PowerMW    float64 `json:"power_mw"`
}

// ConnectedSpec is the data-carrying state: P = beta + alpha_up*t_u + alpha_down*t_d (t in Mbit/s).
type ConnectedSpec struct {
	Name               string  `json:"name"`
	BetaMW             float64 `json:"beta_mw"`
	AlphaUpMWPerMbps   float64 `json:"alpha_up_mw_per_mbps"`
	AlphaDownMWPerMbps float64 `json:"alpha_down_mw_per_mbps"`
}

// Phase is one step of the tail after the last packet.
type Phase struct {
	Name       string   `json:"name"`
	DurationMS float64  `json:"duration_ms"`
	PowerMW    *float64 `json:"power_mw,omitempty"`
	DRX        *DRX     `json:"drx,omitempty"`
	Wake       *Wake    `json:"wake,omitempty"`
}

// DRX is discontinuous reception: OnMS at OnPowerMW every CycleMS, SleepPowerMW in between.
type DRX struct {
	CycleMS      float64 `json:"cycle_ms"`
	OnMS         float64 `json:"on_ms"`
	OnPowerMW    float64 `json:"on_power_mw"`
	SleepPowerMW float64 `json:"sleep_power_mw"`
}

// Wake says how a packet leaves a phase when it does not go straight back to connected (3G FACH).
type Wake struct {
	Name           string  `json:"name"`
	PromotionMS    float64 `json:"promotion_ms"`
	PowerMW        float64 `json:"power_mw"`
	SmallUpBytes   int     `json:"small_up_bytes"`
	SmallDownBytes int     `json:"small_down_bytes"`
}

// AvgPowerMW is the phase's mean power draw.
func (p Phase) AvgPowerMW() float64 {
	if p.PowerMW != nil {
		return *p.PowerMW
	}
	d := p.DRX
	return (d.OnMS*d.OnPowerMW + (d.CycleMS-d.OnMS)*d.SleepPowerMW) / d.CycleMS
}

// Duration is the phase's length.
func (p Phase) Duration() time.Duration { return msDur(p.DurationMS) }

func msDur(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// Load reads and validates a model file.
func Load(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Parse decodes and validates a model. Unknown fields, missing fields, bad values and numbers without a
// source are errors.
func Parse(b []byte) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Model
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("power model: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("power model: trailing data after the JSON object")
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("power model: %w", err)
	}
	if err := checkRequired(raw); err != nil {
		return nil, err
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("power model %q: %w", m.ID, err)
	}
	if err := checkSources(raw, m.Sources); err != nil {
		return nil, fmt.Errorf("power model %q: %w", m.ID, err)
	}
	return &m, nil
}

// checkRequired catches fields left out, which decoding alone would read as zero.
func checkRequired(raw map[string]any) error {
	need := func(obj map[string]any, where string, keys ...string) error {
		for _, k := range keys {
			if _, ok := obj[k]; !ok {
				return fmt.Errorf("power model: %s%s is missing", where, k)
			}
		}
		return nil
	}
	if err := need(raw, "", "id", "version", "technology", "description", "promotion", "connected", "tail", "idle_power_mw", "sources"); err != nil {
		return err
	}
	if p, ok := raw["promotion"].(map[string]any); ok {
		if err := need(p, "promotion.", "name", "duration_ms", "power_mw"); err != nil {
			return err
		}
	}
	if c, ok := raw["connected"].(map[string]any); ok {
		if err := need(c, "connected.", "name", "beta_mw", "alpha_up_mw_per_mbps", "alpha_down_mw_per_mbps"); err != nil {
			return err
		}
	}
	tail, _ := raw["tail"].([]any)
	for i, t := range tail {
		ph, ok := t.(map[string]any)
		if !ok {
			return fmt.Errorf("power model: tail[%d] is not an object", i)
		}
		w := fmt.Sprintf("tail[%d].", i)
		if err := need(ph, w, "name", "duration_ms"); err != nil {
			return err
		}
		if d, ok := ph["drx"].(map[string]any); ok {
			if err := need(d, w+"drx.", "cycle_ms", "on_ms", "on_power_mw", "sleep_power_mw"); err != nil {
				return err
			}
		}
		if k, ok := ph["wake"].(map[string]any); ok {
			if err := need(k, w+"wake.", "name", "promotion_ms", "power_mw", "small_up_bytes", "small_down_bytes"); err != nil {
				return err
			}
		}
	}
	return nil
}

var stateName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func (m *Model) validate() error {
	if m.ID == "" {
		return fmt.Errorf("id is empty")
	}
	if m.Version < 1 {
		return fmt.Errorf("version %d: want >= 1", m.Version)
	}
	switch m.Technology {
	case LTE, ThreeG, WiFi:
	default:
		return fmt.Errorf("technology %q: want %q, %q or %q", m.Technology, LTE, ThreeG, WiFi)
	}
	if len(m.Tail) == 0 {
		return fmt.Errorf("tail has no phase")
	}
	names := map[string]string{}
	addName := func(where, n string) error {
		if !stateName.MatchString(n) || n == "idle" {
			return fmt.Errorf("%s.name %q: want lower-case [a-z0-9_], not \"idle\"", where, n)
		}
		if prev, dup := names[n]; dup {
			return fmt.Errorf("%s.name %q is also %s.name", where, n, prev)
		}
		names[n] = where
		return nil
	}
	nums := []struct {
		where string
		v     float64
	}{
		{"promotion.duration_ms", m.Promotion.DurationMS},
		{"promotion.power_mw", m.Promotion.PowerMW},
		{"connected.beta_mw", m.Connected.BetaMW},
		{"connected.alpha_up_mw_per_mbps", m.Connected.AlphaUpMWPerMbps},
		{"connected.alpha_down_mw_per_mbps", m.Connected.AlphaDownMWPerMbps},
		{"idle_power_mw", m.IdlePowerMW},
	}
	if err := addName("promotion", m.Promotion.Name); err != nil {
		return err
	}
	if err := addName("connected", m.Connected.Name); err != nil {
		return err
	}
	for i, p := range m.Tail {
		w := fmt.Sprintf("tail[%d]", i)
		if err := addName(w, p.Name); err != nil {
			return err
		}
		if !(p.DurationMS > 0) || p.Duration() <= 0 {
			return fmt.Errorf("%s.duration_ms %v: want > 0", w, p.DurationMS)
		}
		nums = append(nums, struct {
			where string
			v     float64
		}{w + ".duration_ms", p.DurationMS})
		switch {
		case p.PowerMW != nil && p.DRX != nil:
			return fmt.Errorf("%s: has both power_mw and drx; give one", w)
		case p.PowerMW == nil && p.DRX == nil:
			return fmt.Errorf("%s: has neither power_mw nor drx", w)
		case p.PowerMW != nil:
			nums = append(nums, struct {
				where string
				v     float64
			}{w + ".power_mw", *p.PowerMW})
		default:
			d := p.DRX
			if !(d.CycleMS > 0) {
				return fmt.Errorf("%s.drx.cycle_ms %v: want > 0", w, d.CycleMS)
			}
			if d.OnMS > d.CycleMS {
				return fmt.Errorf("%s.drx.on_ms %v exceeds cycle_ms %v", w, d.OnMS, d.CycleMS)
			}
			nums = append(nums, []struct {
				where string
				v     float64
			}{{w + ".drx.on_ms", d.OnMS}, {w + ".drx.on_power_mw", d.OnPowerMW}, {w + ".drx.sleep_power_mw", d.SleepPowerMW}}...)
		}
		if k := p.Wake; k != nil {
			if i == 0 {
				// A gap shorter than the first phase is connected time by definition (see doc.go), which
				// only holds if a packet in that phase goes straight back to connected.
				return fmt.Errorf("%s.wake: the first tail phase must wake straight to connected", w)
			}
			if err := addName(w+".wake", k.Name); err != nil {
				return err
			}
			if k.SmallUpBytes < 0 || k.SmallDownBytes < 0 {
				return fmt.Errorf("%s.wake: small_*_bytes must be >= 0", w)
			}
			nums = append(nums, []struct {
				where string
				v     float64
			}{{w + ".wake.promotion_ms", k.PromotionMS}, {w + ".wake.power_mw", k.PowerMW}}...)
		}
	}
	for _, n := range nums {
		if math.IsNaN(n.v) || math.IsInf(n.v, 0) || n.v < 0 {
			return fmt.Errorf("%s = %v: want a finite number >= 0", n.where, n.v)
		}
	}
	return nil
}

// checkSources requires a source for every number (by its path or a prefix of it) and no source for a path
// that does not exist, so that a renamed field cannot leave a stale citation behind.
func checkSources(raw map[string]any, sources map[string]string) error {
	if len(sources) == 0 {
		return fmt.Errorf("sources is empty")
	}
	var numeric, all []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if path != "" {
			all = append(all, path)
		}
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if path == "" && (k == "sources" || k == "version" || k == "$schema") {
					continue
				}
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, c)
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		case float64:
			numeric = append(numeric, path)
		}
	}
	walk("", raw)
	covered := func(path string) bool {
		for k := range sources {
			if path == k || strings.HasPrefix(path, k+".") || strings.HasPrefix(path, k+"[") {
				return true
			}
		}
		return false
	}
	sort.Strings(numeric)
	for _, p := range numeric {
		if !covered(p) {
			return fmt.Errorf("%s has no entry in sources (key it by its path or a prefix of it)", p)
		}
	}
	for k, v := range sources {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("sources[%q] is empty", k)
		}
		if !slices.Contains(all, k) {
			return fmt.Errorf("sources[%q] names no field of the model", k)
		}
	}
	return nil
}

// Drain is how long after its last packet a radio can still draw power above idle: the longest promotion
// plus the whole tail. Energy windows end this long after a load's end.
func (m *Model) Drain() time.Duration {
	longest := msDur(m.Promotion.DurationMS)
	var tail time.Duration
	for _, p := range m.Tail {
		tail += p.Duration()
		if p.Wake != nil && msDur(p.Wake.PromotionMS) > longest {
			longest = msDur(p.Wake.PromotionMS)
		}
	}
	return longest + tail
}
