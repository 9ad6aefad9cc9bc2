package corpus

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
)

//go:embed sites.json
var sitesJSON []byte

// Site is one row of seed 000 Table 1, as recorded in sites.json.
type Site struct {
	Row      int     `json:"row"`
	Name     string  `json:"name"`
	Website  string  `json:"website"`
	Objects  float64 `json:"objects"`
	SizeKB   float64 `json:"size_kb"`
	Text     float64 `json:"txt_objects"`
	JSCSS    float64 `json:"js_css_objects"`
	ImgOther float64 `json:"img_other_objects"`
	RTTms    float64 `json:"rtt_ms"`
}

type sitesFile struct {
	KilobyteBytes int `json:"kilobyte_bytes"`
	Derivation    struct {
		JSCSSSplit struct {
			JS  float64 `json:"js_requests"`
			CSS float64 `json:"css_requests"`
		} `json:"js_css_split"`
		BytesByType struct {
			Requests float64 `json:"requests"`
			HTML     float64 `json:"html_kb"`
			CSS      float64 `json:"css_kb"`
			JS       float64 `json:"js_kb"`
			Images   float64 `json:"images_kb"`
			Flash    float64 `json:"flash_kb"`
			Other    float64 `json:"other_kb"`
		} `json:"bytes_by_type"`
		ThirdParty struct {
			First float64 `json:"first_party_requests"`
			Third float64 `json:"third_party_requests"`
		} `json:"third_party_share"`
	} `json:"derivation"`
	Synthetic struct {
		SizesKB []int `json:"sizes_kb"`
	} `json:"synthetic"`
	Sites []Site `json:"sites"`
}

// params are the numbers the generator uses, all derived from sites.json.
type params struct {
	kb         int
	sites      []Site
	e3KB       []int
	cssShare   float64           // of the JS/CSS count
	perObject  [numKinds]float64 // mean bytes per object
	thirdParty float64           // probability that a script, stylesheet or image is third-party
}

func loadParams(data []byte) (*params, error) {
	var f sitesFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("sites.json: %w", err)
	}
	d := f.Derivation
	if f.KilobyteBytes <= 0 || len(f.Sites) == 0 || len(f.Synthetic.SizesKB) == 0 ||
		d.JSCSSSplit.JS <= 0 || d.JSCSSSplit.CSS <= 0 || d.BytesByType.Requests <= d.JSCSSSplit.JS+d.JSCSSSplit.CSS ||
		d.ThirdParty.First <= 0 || d.ThirdParty.Third < 0 {
		return nil, fmt.Errorf("sites.json: missing or inconsistent numbers")
	}
	p := &params{kb: f.KilobyteBytes, sites: f.Sites, e3KB: f.Synthetic.SizesKB}
	p.cssShare = d.JSCSSSplit.CSS / (d.JSCSSSplit.JS + d.JSCSSSplit.CSS)
	p.thirdParty = d.ThirdParty.Third / (d.ThirdParty.First + d.ThirdParty.Third)

	// HTTP Archive gives JS and CSS request counts but not HTML vs image/other; split the
	// rest in the ratio of Table 1's own column sums.
	var sumText, sumImg float64
	seen := map[string]bool{}
	for _, s := range f.Sites {
		if s.Name == "" || seen[s.Name] || s.SizeKB <= 0 || s.Text < 0 || s.JSCSS < 0 || s.ImgOther < 0 {
			return nil, fmt.Errorf("sites.json: bad site row %d %q", s.Row, s.Name)
		}
		seen[s.Name] = true
		sumText += s.Text
		sumImg += s.ImgOther
	}
	rest := d.BytesByType.Requests - d.JSCSSSplit.JS - d.JSCSSSplit.CSS
	htmlReq := rest * sumText / (sumText + sumImg)
	imgReq := rest - htmlReq
	kb := float64(p.kb)
	p.perObject[KindHTML] = kb * d.BytesByType.HTML / htmlReq
	p.perObject[KindJS] = kb * d.BytesByType.JS / d.JSCSSSplit.JS
	p.perObject[KindCSS] = kb * d.BytesByType.CSS / d.JSCSSSplit.CSS
	p.perObject[KindImage] = kb * (d.BytesByType.Images + d.BytesByType.Flash + d.BytesByType.Other) / imgReq
	return p, nil
}

// counts turns a Table 1 row into whole object counts per kind.
func (p *params) counts(s Site) [numKinds]int {
	var n [numKinds]int
	n[KindHTML] = max(1, int(math.Round(s.Text)))
	jscss := int(math.Round(s.JSCSS))
	n[KindCSS] = int(math.Round(float64(jscss) * p.cssShare))
	n[KindJS] = jscss - n[KindCSS]
	n[KindImage] = int(math.Round(s.ImgOther))
	return n
}

// Sites returns seed 000 Table 1 as recorded in sites.json.
func Sites() []Site {
	p, err := loadParams(sitesJSON)
	if err != nil {
		panic(err) // the embedded file is checked by the tests
	}
	return append([]Site(nil), p.sites...)
}
