package host

import (
	"sync"
	"sync/atomic"

	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	models "github.com/mpsurf/mpsurf/policy-models"
)

// Inputs supplies, for one origin, what the host measures and remembers: protocol, size prediction, paths, RRC
// state, preferences, battery and cellular usage. The measurement and store packages install one with SetInputs;
// until then every decision sees no paths, so the model falls back to the baseline policy.
type Inputs func(origin string) model.Input

var inputs atomic.Pointer[Inputs]

// SetInputs installs f as the source of decision inputs for every Server; nil removes it.
func SetInputs(f Inputs) {
	if f == nil {
		inputs.Store(nil)
		return
	}
	inputs.Store(&f)
}

// modelParams is policy-models/model.json with the radio and baseline files it names, from the embedded copy.
var modelParams = sync.OnceValues(func() (*model.Params, error) { return model.Load(models.FS, models.Dir) })

// DecisionBody is a Decision with the model's explanation (PROTOCOL.md §3, the optional fields).
type DecisionBody struct {
	protocol.Decision
	Terms    []model.Term `json:"terms,omitempty"`
	Size     *model.Size  `json:"size,omitempty"`
	Protocol string       `json:"protocol,omitempty"`
	// ModelInput is the model's whole input, kept in the decision log so that mpsurf-host replay can evaluate
	// the same decision under other parameters.
	ModelInput *model.Input `json:"model_input,omitempty"`
}

func (s *Server) decide(req protocol.Request) protocol.Reply {
	d, perr := protocol.ParseDecide(req.Body)
	if perr != nil {
		s.log.Warn("decide refused", "id", req.ID, "err", perr)
		return protocol.Fail(req, perr)
	}
	snap, perr := s.snapshot()
	if perr != nil {
		return protocol.Fail(req, perr)
	}
	out := policy.Decide(policy.Input{
		Origin: d.Origin, Model: snap.File, Source: snap.Source, Revision: snap.Policy.Revision,
	})
	body := DecisionBody{Decision: out.Decision(d.Origin, d.Tab, d.Nav)}
	if params, err := modelParams(); err != nil {
		s.log.Warn("cost-benefit model not loaded; baseline policy only", "err", err)
	} else {
		var in model.Input
		if f := inputs.Load(); f != nil {
			in = (*f)(d.Origin)
		}
		in.Origin, in.Params = d.Origin, params
		body = Apply(body, model.Evaluate(in), params)
		body.ModelInput = &in
	}
	body.Decision = s.gate(body.Decision)               // pause.go: single path while the user (or a cap) paused multipath
	body.Decision = s.actuate(body.Decision)            // actuate.go: carried to the kernel, outcome in inputs
	s.proxy.route(d.Origin, relayPolicy(body.Decision)) // proxy.go: the relay applies it to the origin's tunnels
	s.decisions.Add(1)
	return s.logged(req, body.Decision, body) // the reply goes out once the decision is committed
}

// Apply puts a model output on a baseline decision. A fallback output (no paths measured) keeps the baseline's
// terms and adds only the explanation.
func Apply(body DecisionBody, m model.Output, params *model.Params) DecisionBody {
	body.Terms, body.Protocol = m.Terms, m.Protocol
	size := m.Size
	body.Size = &size
	if m.Fallback {
		// The baseline decides, but a size the store predicted is still an input: actuation compares it with θ1.
		if m.Size.Known && m.Size.Median != nil {
			inputs := make(map[string]any, len(body.Decision.Inputs)+1)
			for k, v := range body.Decision.Inputs {
				inputs[k] = v
			}
			inputs["predicted_size_bytes"] = *m.Size.Median
			body.Decision.Inputs = inputs
		}
		return body
	}
	dec := &body.Decision
	dec.Multipath, dec.Theta1, dec.Theta2, dec.DeadlineMS, dec.Reason = m.Multipath, m.Theta1, m.Theta2, m.DeadlineMS, m.Reason
	dec.Model = protocol.Model{ID: params.ID, Version: params.Version}
	inputs := make(map[string]any, len(dec.Inputs)+4)
	for k, v := range dec.Inputs {
		inputs[k] = v
	}
	inputs["model_id"], inputs["model_version"] = params.ID, params.Version
	inputs["mode"], inputs["protocol"] = m.Mode, m.Protocol
	inputs["theta1_bytes"], inputs["deadline_ms"], inputs["multipath_allowed"] = m.Theta1, m.DeadlineMS, m.Multipath
	if m.Theta2 != nil {
		inputs["theta2_bytes"] = *m.Theta2
	} else {
		inputs["theta2_bytes"] = nil
	}
	if m.Size.Known && m.Size.Median != nil {
		inputs["predicted_size_bytes"] = *m.Size.Median
	}
	dec.Inputs = inputs
	return body
}
