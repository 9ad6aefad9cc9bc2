package decide

import (
	"context"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/paths"
)

// Transfer decides for one transfer of known size from an origin (a download handed over by the browser): the
// same model, inputs, preferences, site rules, quota and pause as a navigation, with the size known instead of
// predicted. proto is what the browser used ("h2", "http/1.1" or "" when unknown). The decision is not carried
// to the kernel: the transfer's own scheduler (native-host/mph2) applies it, with θ2 as its cellular cap.
func (d *Decider) Transfer(ctx context.Context, r Request, size int64, proto string) (Decision, error) {
	if d.cfg.Params == nil {
		return Decision{}, d.cfg.ParamsErr
	}
	mctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	in := d.Input(mctx, r.Origin, "")
	cancel()
	in.Size = model.Size{Known: true, Exact: true, Median: &size, P90: &size, Samples: 1, Source: "transfer"}
	if proto != "" {
		in.Protocol = proto
	}
	dec, err := d.Evaluate(r, in)
	if err != nil {
		return dec, err
	}
	dec.pause(r.Paused)
	// The model speaks of pages; this is one file.
	dec.Reason = strings.Replace(dec.Reason, " page ", " file ", 1)
	if dec.Multipath && dec.Basis == BasisPrior {
		// Without measured links the model weighs priors; a transfer that is large by the model's own measure is
		// still worth both links, but say so.
		dec.Reason = clipReason(strings.TrimSpace(dec.Reason + " (links not measured yet)"))
	}
	return dec, nil
}

// Interfaces are the paths a transfer may use now: the primary (WiFi, else wired) and the cellular one, nil when
// not measured or down.
func (d *Decider) Interfaces() (primary, secondary *paths.Path) {
	if d.cfg.Links == nil {
		return nil, nil
	}
	ps := d.cfg.Links.Status().Paths
	for _, kind := range []string{paths.WiFi, paths.Ethernet} {
		for i := range ps {
			if primary == nil && ps[i].Up && ps[i].Kind == kind {
				primary = &ps[i]
			}
		}
	}
	for i := range ps {
		if secondary == nil && ps[i].Up && ps[i].Kind == paths.Cellular {
			secondary = &ps[i]
		}
	}
	return primary, secondary
}
