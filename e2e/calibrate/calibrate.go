package calibrate

import (
	"fmt"
	"math"
	"slices"

	"github.com/mpsurf/mpsurf/e2e/corpus"
	"github.com/mpsurf/mpsurf/e2e/profiles"
	"github.com/mpsurf/mpsurf/e2e/report"
	"github.com/mpsurf/mpsurf/native-host/model"
)

// Modes compared with the model: the adaptive mode's path use depends on the host's decision, not on a curve.
var Modes = []string{report.ModeSPWiFi, report.ModeSPCell, report.ModeMPAlways}

// Chromium's limit of HTTP/1.1 connections per origin (net/socket/client_socket_pool_manager.cc,
// max_sockets_per_group = 6 for normal sockets).
const http1ConnsPerOrigin = 6

// SmallPageBytes separates small from large pages in the tables, as in e2e/report.
const SmallPageBytes = 100_000

// Page is what the page model needs of a corpus page.
type Page struct {
	Name            string
	Bytes           float64 // all objects
	Objects         int
	MainBytes       float64 // the landing document
	FirstParty      int     // sub-resources on the landing page's origin
	FirstPartyBytes float64
	ThirdParty      int // sub-resources on the second origin
	ThirdPartyBytes float64
}

// PageOf reads a corpus page.
func PageOf(p *corpus.Page) Page {
	pg := Page{Name: p.Name, Objects: len(p.Objects), MainBytes: float64(p.Objects[0].Size)}
	for _, o := range p.Objects[1:] {
		if o.ThirdParty {
			pg.ThirdParty++
			pg.ThirdPartyBytes += float64(o.Size)
		} else {
			pg.FirstParty++
			pg.FirstPartyBytes += float64(o.Size)
		}
	}
	pg.Bytes = pg.MainBytes + pg.FirstPartyBytes + pg.ThirdPartyBytes
	return pg
}

// Processing is the browser's time outside the network, in milliseconds.
type Processing struct {
	PerPageMS, PerObjectMS float64
}

// ms is the processing time of a page with n objects.
func (p Processing) ms(n int) float64 { return p.PerPageMS + p.PerObjectMS*float64(n-1) }

// NetworkMS predicts the network part of a page load in milliseconds (see the package documentation).
func NetworkMS(c *model.Curves, hol float64, mode, proto string, pg Page) (float64, error) {
	wRTT, cRTT := c.RTTs()
	wRate, cRate := c.Rates()
	var T func(float64) float64
	var rtt, rate float64
	switch mode {
	case report.ModeSPWiFi:
		T, rtt, rate = c.Primary, wRTT, wRate
	case report.ModeSPCell:
		T, rtt, rate = c.Secondary, cRTT, cRate
	case report.ModeMPAlways:
		T, rtt, rate = c.Multipath, wRTT, wRate+hol*cRate
	default:
		return 0, fmt.Errorf("mode %q is not modelled", mode)
	}
	tMain := T(pg.MainBytes)
	t := tMain
	if pg.Objects > 1 {
		rest := pg.FirstPartyBytes + pg.ThirdPartyBytes
		t = max(t, tMain+rtt+rest/rate)
		switch proto {
		case report.ProtoH2:
			if pg.FirstParty > 0 {
				t = max(t, T(pg.MainBytes+pg.FirstPartyBytes)+rtt)
			}
			if pg.ThirdParty > 0 {
				t = max(t, tMain+T(pg.ThirdPartyBytes))
			}
		case report.ProtoHTTP1:
			for _, o := range [][2]float64{{float64(pg.FirstParty), pg.FirstPartyBytes}, {float64(pg.ThirdParty), pg.ThirdPartyBytes}} {
				n, b := o[0], o[1]
				if n == 0 {
					continue
				}
				k := math.Min(http1ConnsPerOrigin, n)
				t = max(t, tMain+T(b/k)+(math.Ceil(n/k)-1)*rtt)
			}
		default:
			return 0, fmt.Errorf("protocol %q is not modelled", proto)
		}
	}
	if math.IsInf(t, 0) || math.IsNaN(t) || t <= 0 {
		return 0, fmt.Errorf("no finite prediction (%v s)", t)
	}
	return t * 1000, nil
}

// Load is one measured load with its prediction.
type Load struct {
	Rec       report.Record
	Page      Page
	curves    *model.Curves
	NetworkMS float64 // at the hol the prediction was last made with
	Predicted float64 // network + processing, ms
}

// APE is the absolute percentage error of the prediction, in percent.
func (l *Load) APE() float64 { return 100 * math.Abs(l.Predicted-l.Rec.PLTms) / l.Rec.PLTms }

// Skipped is a record left out of the comparison, and why.
type Skipped struct {
	RunID, Why string
}

// Prepare pairs every ok load of a modelled mode with its corpus page and its profile's paths. Records of
// other modes and failed loads are skipped with a reason; a page the corpus does not have, or whose size differs
// from the record's, is an error (the grid was run on another corpus).
func Prepare(recs []report.Record, c *corpus.Corpus, p *model.Params) ([]*Load, []Skipped, error) {
	var loads []*Load
	var skipped []Skipped
	curves := map[string]*model.Curves{}
	for _, r := range recs {
		switch {
		case !r.OK:
			skipped = append(skipped, Skipped{r.RunID, "load failed"})
			continue
		case !slices.Contains(Modes, r.Mode):
			skipped = append(skipped, Skipped{r.RunID, "mode " + r.Mode + " is not modelled"})
			continue
		}
		cp, ok := c.Page(r.Page)
		if !ok {
			return nil, nil, fmt.Errorf("run %s: page %q is not in corpus seed %d", r.RunID, r.Page, c.Seed)
		}
		pg := PageOf(cp)
		if int64(pg.Bytes) != r.PageBytes || pg.Objects != r.Objects {
			return nil, nil, fmt.Errorf("run %s: page %s has %d bytes in %d objects, corpus seed %d has %d in %d",
				r.RunID, r.Page, r.PageBytes, r.Objects, c.Seed, int64(pg.Bytes), pg.Objects)
		}
		cv, ok := curves[r.Profile]
		if !ok {
			w, cell, err := profilePaths(r.Profile)
			if err != nil {
				return nil, nil, fmt.Errorf("run %s: %w", r.RunID, err)
			}
			if cv, err = model.NewCurves(p, w, cell); err != nil {
				return nil, nil, fmt.Errorf("run %s: profile %s: %w", r.RunID, r.Profile, err)
			}
			curves[r.Profile] = cv
		}
		loads = append(loads, &Load{Rec: r, Page: pg, curves: cv})
	}
	if len(loads) == 0 {
		return nil, skipped, fmt.Errorf("no ok load of modes %v", Modes)
	}
	return loads, skipped, nil
}

// profilePaths turns a testbed profile into the two measured paths the model takes: the RTT is the two one-way
// delays, the rate the downlink's, the loss the downlink's (the uplink carries only requests and ACKs).
func profilePaths(id string) (wifi, cell *model.Path, err error) {
	prof, err := profiles.Load(id)
	if err != nil {
		return nil, nil, err
	}
	path := func(name, kind string) (*model.Path, error) {
		l := prof.Links[name]
		if l == nil || l.Down == nil || l.Up == nil {
			return nil, fmt.Errorf("profile %s has no link %s", id, name)
		}
		if l.Down.RateMbit == nil {
			return nil, fmt.Errorf("profile %s: %s downlink follows a trace; the model needs a fixed rate", id, name)
		}
		rtt, rate, loss := l.RTTMs(), *l.Down.RateMbit*1e6, 0.0
		if l.Down.Loss != nil {
			loss = *l.Down.Loss
		}
		return &model.Path{Name: name, Kind: kind, Up: true, RTTMS: &rtt, DownBps: &rate, Loss: &loss}, nil
	}
	if wifi, err = path(report.IfWiFi, "wifi"); err != nil {
		return nil, nil, err
	}
	if cell, err = path(report.IfCell, "cellular"); err != nil {
		return nil, nil, err
	}
	return wifi, cell, nil
}

// Predict sets every load's prediction for hol and the processing constants.
func Predict(loads []*Load, hol float64, proc Processing) error {
	for _, l := range loads {
		n, err := NetworkMS(l.curves, hol, l.Rec.Mode, l.Rec.Proto, l.Page)
		if err != nil {
			return fmt.Errorf("run %s: %w", l.Rec.RunID, err)
		}
		l.NetworkMS = n
		l.Predicted = n + proc.ms(l.Page.Objects)
	}
	return nil
}

// FitProcessing fits the processing constants on the single-path loads (see the package documentation); the
// network predictions must be set. It also returns how many loads each constant was fitted on; a constant with
// none is 0.
func FitProcessing(loads []*Load) (p Processing, onePage, multi int) {
	var single, per []float64
	for _, l := range loads {
		if l.Rec.Mode == report.ModeMPAlways || l.Page.Objects != 1 {
			continue
		}
		single = append(single, l.Rec.PLTms-l.NetworkMS)
	}
	if p.PerPageMS = median(single); math.IsNaN(p.PerPageMS) {
		p.PerPageMS = 0
	}
	for _, l := range loads {
		if l.Rec.Mode == report.ModeMPAlways || l.Page.Objects == 1 {
			continue
		}
		per = append(per, (l.Rec.PLTms-l.NetworkMS-p.PerPageMS)/float64(l.Page.Objects-1))
	}
	p.PerObjectMS = max(0, median(per))
	return p, len(single), len(per)
}

// HOLGrid is the grid hol is fitted on.
func HOLGrid() []float64 {
	g := make([]float64, 0, 101)
	for i := 0; i <= 100; i++ {
		g = append(g, float64(i)/100)
	}
	return g
}

// FitHOL returns the grid value of hol that minimises the MdAPE of the multipath loads, and that MdAPE; ties go
// to the value nearest from. The loads' predictions are left at the fitted value.
func FitHOL(loads []*Load, proc Processing, from float64) (hol, mdape float64, err error) {
	best, bestErr := math.NaN(), math.Inf(1)
	for _, h := range HOLGrid() {
		if err := Predict(loads, h, proc); err != nil {
			return 0, 0, err
		}
		e := MdAPE(Filter(loads, func(l *Load) bool { return l.Rec.Mode == report.ModeMPAlways }))
		if e < bestErr-1e-9 || (math.Abs(e-bestErr) <= 1e-9 && math.Abs(h-from) < math.Abs(best-from)) {
			best, bestErr = h, e
		}
	}
	if math.IsNaN(best) {
		return 0, 0, fmt.Errorf("no multipath load to fit hol on")
	}
	return best, bestErr, Predict(loads, best, proc)
}

// Filter returns the loads keep accepts.
func Filter(loads []*Load, keep func(*Load) bool) []*Load {
	var out []*Load
	for _, l := range loads {
		if keep(l) {
			out = append(out, l)
		}
	}
	return out
}

// MdAPE is the median absolute percentage error of the loads' predictions; NaN for none.
func MdAPE(loads []*Load) float64 {
	e := make([]float64, len(loads))
	for i, l := range loads {
		e[i] = l.APE()
	}
	return median(e)
}

// median of xs; NaN for none. xs is reordered.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
