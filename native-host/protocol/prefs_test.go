package protocol

import (
	"encoding/json"
	"fmt"
	"testing"
)

const goodPrefs = `{"mode":"balanced","deadline_ms":3000,"battery_floor_percent":20,"charging_unlimited":true,
	"quota_bytes":null,"billing_day":1,"header_scope":"opt_in","overrides":%s}`

func FuzzParsePrefs(f *testing.F) {
	f.Add(fmt.Sprintf(goodPrefs, `[{"host":"Bücher.Example","rule":"always"}]`))
	f.Add(fmt.Sprintf(goodPrefs, `[{"host":"[::1]","rule":"never"}]`))
	f.Add(`{"mode":1}`)
	f.Fuzz(func(t *testing.T, body string) {
		p, perr := ParsePrefs(json.RawMessage(body))
		if perr != nil {
			return
		}
		// Normalised prefs are a fixed point: parsing them again changes nothing.
		data, _ := json.Marshal(p)
		again, perr := ParsePrefs(data)
		if perr != nil {
			t.Fatalf("normalised prefs %s refused: %v", data, perr)
		}
		if d2, _ := json.Marshal(again); string(d2) != string(data) {
			t.Fatalf("not a fixed point: %s then %s", data, d2)
		}
	})
}

func TestRuleFor(t *testing.T) {
	var p Prefs
	if err := json.Unmarshal([]byte(`{"mode":"balanced","overrides":[
		{"host":"xn--bcher-kva.example","rule":"never"},{"host":"video.example","rule":"always"},{"host":"a.example","rule":"auto"},{"host":"live.video.example","rule":"never"}]}`), &p); err != nil {
		t.Fatal(err)
	}
	for origin, want := range map[string]string{
		"https://xn--bcher-kva.example": RuleNever,
		"https://video.example:8443":    RuleAlways,
		"https://a.example":             "",
		"https://sub.video.example":     RuleAlways, // subdomains follow the site
		"https://x.live.video.example":  RuleNever,  // the most specific rule wins
		"https://notvideo.example":      "",
		"http://[::1]:8080":             "",
		"https://unrelated.example":     "",
	} {
		if got := p.RuleFor(origin); got != want {
			t.Errorf("%s: %q, want %q", origin, got, want)
		}
	}
	if (*Prefs)(nil).RuleFor("https://a.example") != "" {
		t.Error("no prefs, a rule")
	}
}
