package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
)

type chartKind int

const (
	kindPoints chartKind = iota // mean with +-sd error bars
	kindBars                    // one bar per series and category
	kindBoxes                   // one box per category: min, q1, median, q3, max, and the mean as an open dot
)

// value is one series' number for one category.
type value struct {
	ok   bool
	y    float64
	err  float64 // +-, points only
	box  Stat    // boxes only
	note string  // tooltip
}

type series struct {
	name   string
	values []value // aligned with chart.categories
}

type chart struct {
	title, xLabel, yLabel string
	kind                  chartKind
	categories            []string
	series                []series
	refLines              []refLine // horizontal reference lines (e.g. a seed's range)
	yFmt                  func(float64) string
}

type refLine struct {
	y     float64
	label string
}

// Okabe-Ito colours: distinguishable for colour-blind readers and in greyscale print.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999"}

const (
	fontPx   = 12
	plotH    = 300.0
	marginL  = 78.0
	marginR  = 24.0
	charW    = 6.6 // average glyph width at fontPx in a sans-serif face
	legendRH = 18.0
)

func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// niceTicks returns round tick values covering [lo, hi].
func niceTicks(lo, hi float64, want int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(want)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Floor(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	if out[len(out)-1] < hi {
		out = append(out, out[len(out)-1]+step)
	}
	return out
}

func tickLabel(v, step float64) string {
	d := 0
	if step < 1 {
		d = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	if m := step / math.Pow(10, math.Floor(math.Log10(step))); math.Abs(m-2.5) < 1e-9 && step < 10 {
		d++
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

func (c *chart) extent() (lo, hi float64) {
	lo, hi = 0, 0 // every chart shows zero: bars start there and PLT/energy are non-negative
	for _, s := range c.series {
		for _, v := range s.values {
			if !v.ok {
				continue
			}
			a, b := v.y-v.err, v.y+v.err
			if c.kind == kindBoxes {
				a, b = v.box.Min, v.box.Max
			}
			lo, hi = math.Min(lo, a), math.Max(hi, b)
		}
	}
	for _, r := range c.refLines {
		lo, hi = math.Min(lo, r.y), math.Max(hi, r.y)
	}
	if hi == lo {
		hi = lo + 1
	}
	return lo, hi
}

// svg renders the chart. Each series is a <g class="series" data-series="name"> so that tests and other
// tools can find it.
func (c *chart) svg() []byte {
	nCat := len(c.categories)
	nSer := len(c.series)
	slots := nSer
	if c.kind == kindBoxes {
		slots = 1
	}
	slotW := 14.0
	if c.kind == kindBoxes {
		slotW = 40
	}
	groupW := math.Max(44, float64(slots)*slotW+18)
	plotW := math.Max(480, float64(nCat)*groupW)
	groupW = plotW / math.Max(1, float64(nCat))
	width := marginL + plotW + marginR

	// The title sets a minimum width.
	width = math.Max(width, marginL+float64(len([]rune(c.title)))*8.6+marginR)
	plotW = width - marginL - marginR
	groupW = plotW / math.Max(1, float64(nCat))

	// Legend rows above the plot, wrapped to the width: the series (boxes are labelled on the axis), then
	// the reference lines, drawn dashed.
	type item struct {
		name, color string
		dashed      bool
		x, y        float64
	}
	var legend []item
	lx, ly := marginL, 46.0
	place := func(name, color string, dashed bool) {
		w := 26 + float64(len([]rune(name)))*charW + 16
		if lx+w > width-marginR && lx > marginL {
			lx, ly = marginL, ly+legendRH
		}
		legend = append(legend, item{name, color, dashed, lx, ly})
		lx += w
	}
	if c.kind != kindBoxes {
		for i, s := range c.series {
			place(s.name, palette[i%len(palette)], false)
		}
	}
	for _, r := range c.refLines {
		place(r.label, "#555555", true)
	}
	top := ly + 22
	if len(legend) == 0 {
		top = 46
	}

	maxLab := 0
	for _, cat := range c.categories {
		maxLab = max(maxLab, len(cat))
	}
	rotate := float64(maxLab)*charW > groupW-4
	labelH := 20.0
	if rotate {
		labelH = math.Min(180, float64(maxLab)*charW*0.58+16) // 35 degrees: sin = 0.57
	}
	height := top + plotH + labelH + 40

	lo, hi := c.extent()
	ticks := niceTicks(lo, hi, 6)
	ymin, ymax := ticks[0], ticks[len(ticks)-1]
	step := ticks[1] - ticks[0]
	y := func(v float64) float64 { return top + plotH - (v-ymin)/(ymax-ymin)*plotH }
	yFmt := c.yFmt
	if yFmt == nil {
		yFmt = func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="%d">`+"\n",
		f1(width), f1(height), f1(width), f1(height), fontPx)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(c.title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", f1(width), f1(height))
	fmt.Fprintf(&b, `<text x="%s" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", f1(marginL), esc(c.title))

	// Axes and grid.
	b.WriteString(`<g class="axes" stroke="#000000" stroke-width="1">` + "\n")
	for _, t := range ticks {
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="#dddddd"/>`+"\n", f1(marginL), f1(marginL+plotW), f1(y(t)), f1(y(t)))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" stroke="none" dominant-baseline="middle">%s</text>`+"\n", f1(marginL-6), f1(y(t)), esc(tickLabel(t, step)))
	}
	if ymin < 0 {
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="#000000"/>`+"\n", f1(marginL), f1(marginL+plotW), f1(y(0)), f1(y(0)))
	}
	fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`+"\n", f1(marginL), f1(marginL), f1(top), f1(top+plotH))
	fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`+"\n", f1(marginL), f1(marginL+plotW), f1(top+plotH), f1(top+plotH))
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<text x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>`+"\n", f1(top+plotH/2), f1(top+plotH/2), esc(c.yLabel))
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", f1(marginL+plotW/2), f1(height-10), esc(c.xLabel))

	// Category labels.
	b.WriteString(`<g class="categories">` + "\n")
	for i, cat := range c.categories {
		cx := marginL + (float64(i)+0.5)*groupW
		ty := top + plotH + 14
		if rotate {
			fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" transform="rotate(-35 %s %s)">%s</text>`+"\n", f1(cx), f1(ty), f1(cx), f1(ty), esc(cat))
		} else {
			fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", f1(cx), f1(ty), esc(cat))
		}
	}
	b.WriteString("</g>\n")

	for _, r := range c.refLines {
		fmt.Fprintf(&b, `<g class="ref"><line x1="%s" x2="%s" y1="%s" y2="%s" stroke="#555555" stroke-dasharray="5 4"><title>%s</title></line></g>`+"\n",
			f1(marginL), f1(marginL+plotW), f1(y(r.y)), f1(y(r.y)), esc(r.label))
	}

	// Data.
	for si, s := range c.series {
		col := palette[si%len(palette)]
		fmt.Fprintf(&b, `<g class="series" data-series="%s" fill="%s" stroke="%s">`+"\n", esc(s.name), col, col)
		for ci, v := range s.values {
			if !v.ok {
				continue
			}
			gx := marginL + float64(ci)*groupW
			tip := v.note
			if tip == "" {
				tip = s.name + ": " + yFmt(v.y)
			}
			switch c.kind {
			case kindPoints:
				cx := gx + 9 + (float64(si)+0.5)*(groupW-18)/float64(nSer)
				if v.err > 0 {
					fmt.Fprintf(&b, `<path d="M%s %sV%sM%s %sH%sM%s %sH%s" fill="none"/>`+"\n",
						f1(cx), f1(y(v.y-v.err)), f1(y(v.y+v.err)),
						f1(cx-3), f1(y(v.y-v.err)), f1(cx+3), f1(cx-3), f1(y(v.y+v.err)), f1(cx+3))
				}
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5"><title>%s</title></circle>`+"\n", f1(cx), f1(y(v.y)), esc(tip))
			case kindBars:
				bw := (groupW - 18) / float64(nSer)
				x0 := gx + 9 + float64(si)*bw
				y0, y1 := y(math.Max(0, v.y)), y(math.Min(0, v.y))
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" stroke="none"><title>%s</title></rect>`+"\n",
					f1(x0+1), f1(y0), f1(math.Max(1, bw-2)), f1(math.Max(0.5, y1-y0)), esc(tip))
			case kindBoxes:
				cx := gx + groupW/2
				hw := math.Min(18, groupW/2-6)
				bx := v.box
				fmt.Fprintf(&b, `<path d="M%s %sV%sM%s %sV%sM%s %sH%sM%s %sH%s" fill="none"/>`+"\n",
					f1(cx), f1(y(bx.Min)), f1(y(bx.Q1)), f1(cx), f1(y(bx.Q3)), f1(y(bx.Max)),
					f1(cx-hw/2), f1(y(bx.Min)), f1(cx+hw/2), f1(cx-hw/2), f1(y(bx.Max)), f1(cx+hw/2))
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill-opacity="0.25"/>`+"\n",
					f1(cx-hw), f1(y(bx.Q3)), f1(2*hw), f1(math.Max(0.5, y(bx.Q1)-y(bx.Q3))))
				fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke-width="2"/>`+"\n", f1(cx-hw), f1(cx+hw), f1(y(bx.Median)), f1(y(bx.Median)))
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" fill="#ffffff"><title>%s</title></circle>`+"\n", f1(cx), f1(y(bx.Mean)), esc(tip))
			}
		}
		b.WriteString("</g>\n")
	}

	if len(legend) > 0 {
		b.WriteString(`<g class="legend">` + "\n")
		for _, it := range legend {
			if it.dashed {
				fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-dasharray="5 4"/>`, f1(it.x), f1(it.x+16), f1(it.y-4), f1(it.y-4), it.color)
			} else {
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="14" height="10" fill="%s"/>`, f1(it.x), f1(it.y-9), it.color)
			}
			fmt.Fprintf(&b, `<text x="%s" y="%s">%s</text>`+"\n", f1(it.x+20), f1(it.y), esc(it.name))
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
