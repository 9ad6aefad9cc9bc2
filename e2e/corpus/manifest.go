package corpus

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Mix counts objects and bytes.
type Mix struct {
	Count int `json:"count"`
	Bytes int `json:"bytes"`
}

// KindMix is a page's objects and bytes per kind.
type KindMix struct {
	HTML  Mix `json:"html"`
	JS    Mix `json:"js"`
	CSS   Mix `json:"css"`
	Image Mix `json:"image"`
}

func (m *KindMix) of(k Kind) *Mix {
	return [numKinds]*Mix{&m.HTML, &m.JS, &m.CSS, &m.Image}[k]
}

// PageInfo is one page of the manifest.
type PageInfo struct {
	Name       string   `json:"name"`
	Set        string   `json:"set"`
	Host       string   `json:"host"`  // the page's site: served at https://Host + Path
	Proto      string   `json:"proto"` // "h2" or "http/1.1": how its site serves it
	Path       string   `json:"path"`
	Bytes      int      `json:"bytes"`
	Objects    int      `json:"objects"`
	Mix        KindMix  `json:"mix"`
	ThirdParty Mix      `json:"third_party"`
	Source     string   `json:"source"`
	Table1     *Site    `json:"table1,omitempty"`
	ObjectList []Object `json:"object_list,omitempty"`
}

// Manifest lists the corpus.
type Manifest struct {
	Seed  uint64     `json:"seed"`
	Pages []PageInfo `json:"pages"`
}

// Manifest describes every page; withObjects adds each page's object list.
func (c *Corpus) Manifest(withObjects bool) Manifest {
	m := Manifest{Seed: c.Seed}
	for _, p := range c.Pages {
		pi := PageInfo{Name: p.Name, Set: p.Set, Host: p.Host, Proto: p.Proto, Path: p.Path(), Bytes: p.Bytes(), Objects: len(p.Objects), Source: p.Source, Table1: p.Site}
		for _, o := range p.Objects {
			mx := pi.Mix.of(o.Kind)
			mx.Count++
			mx.Bytes += o.Size
			if o.ThirdParty {
				pi.ThirdParty.Count++
				pi.ThirdParty.Bytes += o.Size
			}
		}
		if withObjects {
			pi.ObjectList = append([]Object(nil), p.Objects...)
		}
		m.Pages = append(m.Pages, pi)
	}
	return m
}

// WriteTable prints the manifest as an aligned text table.
func (m Manifest) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "page\tset\turl\tproto\tbytes\tobjects\thtml\tjs\tcss\timage\tthird-party\tsource\t\n")
	for _, p := range m.Pages {
		fmt.Fprintf(tw, "%s\t%s\thttps://%s%s\t%s\t%d\t%d\t%d/%d\t%d/%d\t%d/%d\t%d/%d\t%d/%d\t%s\t\n", p.Name, p.Set, p.Host, p.Path, p.Proto, p.Bytes, p.Objects,
			p.Mix.HTML.Count, p.Mix.HTML.Bytes, p.Mix.JS.Count, p.Mix.JS.Bytes, p.Mix.CSS.Count, p.Mix.CSS.Bytes,
			p.Mix.Image.Count, p.Mix.Image.Bytes, p.ThirdParty.Count, p.ThirdParty.Bytes, p.Source)
	}
	return tw.Flush()
}
