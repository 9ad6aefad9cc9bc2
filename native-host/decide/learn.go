package decide

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// joinBytes is what a cellular subflow receives without carrying the page: the MP_JOIN handshake and a few ACKs
// (measured here, e2e/RESULTS.md's grid: mp-always loads of 2-50 kB pages received 387-410 bytes on wwan0). A load
// counts as multipath once its cellular path received more than one initial window (IW10 at 1448 bytes) beyond it.
const joinBytes = 410 + 10*1448

// Learn compares a reported load with what its decision predicted and writes the outcome beside the decision:
// the model's page-load times for the size actually transferred (single path, and with the decision carried
// out), the cellular bytes received since the decision, and whether the cellular path carried the load. Later
// decisions for the origin learn from these (Input: Learned). A load without a logged decision or model input
// teaches nothing.
func (d *Decider) Learn(ctx context.Context, o store.Observation) error {
	m, ok := d.cfg.Memory.(outcomes)
	if !ok || d.cfg.Params == nil {
		return nil
	}
	dec, err := m.Decided(ctx, o.Origin, o.Tab, o.Nav)
	if err != nil {
		return err
	}
	if len(dec.ModelInput) == 0 || string(dec.ModelInput) == "null" {
		return nil
	}
	var in model.Input
	if err := json.Unmarshal(dec.ModelInput, &in); err != nil {
		return fmt.Errorf("decide: logged model input: %w", err)
	}
	in.Params = d.cfg.Params
	in.Learned = nil // the prediction the correction is measured against is the uncorrected one
	if o.Objects > 0 {
		in.Size.Objects = o.Objects
	}
	sp, mp, used, err := model.PredictLoad(in, dec.Theta1, dec.PreferCellular, o.TransferBytes)
	if err != nil {
		return err
	}
	out := store.Outcome{PredictedSPMS: sp, PredictedMPMS: mp, MPUsed: used}
	if dec.CellRxStart != nil && d.cfg.Links != nil {
		if now, ok := d.cfg.Links.CellRx(); ok && now >= *dec.CellRxStart {
			n := now - *dec.CellRxStart
			out.CellBytes, out.MPUsed = &n, n > joinBytes
		}
	}
	return m.SetOutcome(ctx, o.Origin, o.Tab, o.Nav, out)
}

// outcomes is the store's side of learning.
type outcomes interface {
	Decided(ctx context.Context, origin string, tab int64, nav string) (store.Decided, error)
	SetOutcome(ctx context.Context, origin string, tab int64, nav string, o store.Outcome) error
}
