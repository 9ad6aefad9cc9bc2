package decide

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/store"
)

// Request is one navigation to decide for.
type Request struct {
	Origin string // normalised (protocol.NormalizeOrigin)
	Path   string // the navigation's URL path, without query or fragment; "" when the extension did not say
	Tab    int64
	Nav    string
	// Paused says why all multipath is off now ("" when it is not): the user's pause, a cap reached, roaming, no
	// consent yet (PROTOCOL.md §4 Pause). The decision is then single path, saying why.
	Paused string
}

// Basis says what a decision's numbers came from (PROTOCOL.md Decision.basis).
type Basis string

const (
	// BasisMeasured: the model on measured links.
	BasisMeasured Basis = "measured"
	// BasisPrior: the model with at least one link taken from priors (not measured yet, or too uncertain).
	BasisPrior Basis = "prior"
	// BasisRule: a rule decided, not the model's weighing: the user's site rule, the battery floor, an exhausted
	// cellular quota, or a protocol multipath cannot apply to (h3).
	BasisRule Basis = "rule"
)

// Decision is what the Decider decided for one navigation, typed; Body is its wire form.
type Decision struct {
	Origin    string
	Tab       int64
	Nav       string
	PathClass string // store.PathClass of the request's path; "" when it had none

	Multipath bool
	// Theta1 is the bytes a connection must have received before its cellular subflow opens, enforced at run time
	// by the helper for single-path and multipath decisions alike; nil: never.
	Theta1 *int64
	Theta2 *int64 // cap on a connection's cellular bytes; nil: none
	// PreferCellular: the helper makes a connection's WiFi subflow a backup once its cellular subflow is up.
	PreferCellular bool
	DeadlineMS     int64
	Reason         string
	Basis          Basis
	Model          protocol.Model

	Mode     string // the preference mode whose weights applied
	Protocol string // what the model assumed of the origin
	Size     model.Size
	Terms    []model.Term
	// Input is the model's whole input, kept in the decision log so that replay can evaluate it again.
	Input model.Input

	// Paused is Request.Paused when it turned the decision to single path.
	Paused string
	// Fixed: a fixed policy file decided, not the model (Config.Fixed); Input is then empty.
	Fixed bool
	// PredictedSPMS and PredictedMPMS are the page-load times the model expects of this page's typical size.
	PredictedSPMS, PredictedMPMS float64
	// CellRxStart is the cellular interface's received-bytes counter at the decision (nil: not measured), from
	// which the load's cellular bytes are counted when it is reported.
	CellRxStart *int64
	// Refused says why the measured paths were set aside for priors (the model refused them), "" normally.
	Refused string
	// Actuation is what the privileged helper said when the decision was carried out (native-host/carry; ""
	// when it was not); ActuationAddrs the addresses it was given, comma-separated.
	Actuation      string
	ActuationAddrs string
}

// Config is what a Decider is assembled from. Only Params is required; a missing input source leaves its part of
// the model's input empty, and the model says what it assumed instead.
type Config struct {
	Params       *model.Params
	ParamsSource string // where Params came from, for the log
	ParamsErr    error  // why Params is nil, replied as policy_unavailable
	// Fixed, when set, replaces the model: every decision is this policy file's (a research and test knob:
	// mpsurf-host --policy FILE or MPSURF_POLICY).
	Fixed  *policy.Store
	Links  Links
	Memory Memory
	// Battery reads the device's battery; nil means none is read.
	Battery func() *model.Battery
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Decider decides. It is safe for concurrent use.
type Decider struct {
	cfg Config
}

// New assembles a Decider.
func New(cfg Config) *Decider {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Params == nil && cfg.ParamsErr == nil {
		cfg.ParamsErr = errors.New("no model parameters")
	}
	return &Decider{cfg: cfg}
}

// Params are the model's numbers, nil when they could not be loaded.
func (d *Decider) Params() *model.Params { return d.cfg.Params }

// memoryTimeout bounds the store reads of one decision, so that a locked database never holds up a navigation.
const memoryTimeout = 200 * time.Millisecond

// Decide decides for one navigation; carrying the decision out is the caller's (native-host/carry). The only
// error is a model that could not be loaded (PROTOCOL.md policy_unavailable); everything else that is missing is
// an input the model goes without. The decision notes the cellular interface's received-bytes counter, from which
// the load's cellular bytes are counted when it is reported.
func (d *Decider) Decide(ctx context.Context, r Request) (Decision, error) {
	if d.cfg.Fixed != nil {
		return d.fixed(r)
	}
	var rx *int64
	if d.cfg.Links != nil {
		if n, ok := d.cfg.Links.CellRx(); ok {
			rx = &n
		}
	}
	dec, err := d.model(ctx, r)
	if err != nil {
		return Decision{}, err
	}
	dec.CellRxStart = rx
	return dec, nil
}

// Tunnel decides for a connection to origin that no navigation was decided for: a proxy tunnel the relay opens for
// a host the browser reached before (or without) a decide, such as a site's first request or a page's third party.
// It is the same computation as Decide with no path (the origin's loads, else the user's loads elsewhere, else the
// prior), under the pause, but it does not read the cellular counter (no load is reported against it); the relay
// hands the helper the tunnel's own connection.
func (d *Decider) Tunnel(ctx context.Context, origin, paused string) (Decision, error) {
	r := Request{Origin: origin, Tab: -1, Nav: "tunnel", Paused: paused}
	if d.cfg.Fixed != nil {
		return d.fixed(r)
	}
	return d.model(ctx, r)
}

// model decides for r by the cost-benefit model.
func (d *Decider) model(ctx context.Context, r Request) (Decision, error) {
	if d.cfg.Params == nil {
		return Decision{}, d.cfg.ParamsErr
	}
	class := ""
	if r.Path != "" {
		class = store.PathClass(r.Path)
	}
	mctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	in := d.Input(mctx, r.Origin, class)
	cancel()
	dec, err := d.Evaluate(r, in)
	var ie *model.InputError
	if errors.As(err, &ie) && (in.Primary != nil || in.Secondary != nil) {
		// A measurement the model refuses (a broken counter, an absurd rate) is not decided from: the paths go back
		// to their priors, and the decision says so.
		d.cfg.Log.Warn("measured paths refused; deciding from priors", "origin", r.Origin, "err", err)
		in.Primary, in.Secondary = unmeasured(in.Primary), unmeasured(in.Secondary)
		dec, err = d.Evaluate(r, in)
		dec.Refused = ie.Error()
	}
	if err != nil {
		return Decision{}, err
	}
	dec.PathClass = class
	dec.pause(r.Paused)
	return dec, nil
}

// Evaluate decides for r from a model input assembled elsewhere (a logged one, for replay), under the Decider's
// parameters.
func (d *Decider) Evaluate(r Request, in model.Input) (Decision, error) {
	if d.cfg.Params == nil {
		return Decision{}, d.cfg.ParamsErr
	}
	in.Params = d.cfg.Params
	out, err := model.Evaluate(in)
	if err != nil {
		return Decision{}, err
	}
	return FromModel(r, in, out), nil
}

// unmeasured is p without its measured numbers: the model takes them from the priors of p's kind.
func unmeasured(p *model.Path) *model.Path {
	if p == nil {
		return nil
	}
	return &model.Path{Name: p.Name, Kind: p.Kind, Up: p.Up, Addrs: p.Addrs}
}

// FromModel makes the decision for r from the model's input and output.
func FromModel(r Request, in model.Input, out model.Output) Decision {
	p := in.Params
	dec := Decision{
		Origin: r.Origin, Tab: r.Tab, Nav: r.Nav,
		Multipath: out.Multipath, Theta1: out.Theta1, Theta2: out.Theta2, DeadlineMS: out.DeadlineMS,
		Reason: out.Reason, Model: protocol.Model{ID: p.ID, Version: p.Version},
		Mode: out.Mode, Protocol: out.Protocol, Size: out.Size, Terms: out.Terms, Input: in,
		Basis: BasisMeasured, PredictedSPMS: out.PredictedSPMS, PredictedMPMS: out.PredictedMPMS,
		PreferCellular: out.PreferCellular,
	}
	dec.Input.Params = nil
	switch {
	case out.Rule:
		dec.Basis = BasisRule
	case out.Prior:
		dec.Basis = BasisPrior
	}
	return dec
}

// fixed decides by the fixed policy file.
func (d *Decider) fixed(r Request) (Decision, error) {
	snap, err := d.cfg.Fixed.Snapshot()
	if err != nil {
		return Decision{}, err
	}
	f := snap.File
	dec := Decision{
		Origin: r.Origin, Tab: r.Tab, Nav: r.Nav,
		Multipath: f.Multipath, Theta1: snap.Policy.Theta1, Theta2: f.Theta2Bytes, DeadlineMS: f.DeadlineMS,
		Reason: snap.Policy.Reason, Basis: BasisRule, Model: snap.Policy.Model, Fixed: true,
		Input: model.Input{Origin: r.Origin},
	}
	dec.pause(r.Paused)
	return dec, nil
}

// pause turns the decision into single path while multipath is paused, saying why; the model's terms stay.
func (dec *Decision) pause(why string) {
	if why == "" {
		return
	}
	dec.Paused = why
	if dec.Theta1 != nil {
		dec.Multipath, dec.Theta1, dec.Basis = false, nil, BasisRule
		dec.Reason = clipReason("single path: " + protocol.PauseWords(why))
	}
}

func clipReason(s string) string {
	if len(s) <= protocol.MaxReasonLen {
		return s
	}
	return strings.ToValidUTF8(s[:protocol.MaxReasonLen], "")
}
