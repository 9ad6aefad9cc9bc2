package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mpsurf/mpsurf/native-host/cli"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/paths"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/radio"
	models "github.com/mpsurf/mpsurf/policy-models"
)

// statusOutput is what status --json prints.
type statusOutput struct {
	Host         string              `json:"host"`
	Version      string              `json:"version"`
	Protocol     int                 `json:"protocol"`
	PolicySource string              `json:"policy_source"`
	Policy       *protocol.Policy    `json:"policy,omitempty"`
	PolicyError  string              `json:"policy_error,omitempty"`
	Model        *decide.ModelStatus `json:"model,omitempty"`
	Paths        []paths.Path        `json:"paths,omitempty"`
	RRC          any                 `json:"rrc,omitempty"`
	PathsError   string              `json:"paths_error,omitempty"`
	SampledMS    int64               `json:"sampled_ms,omitempty"`
	// MPTCPEndpoints: in-kernel subflow endpoints (NetworkManager's) that would defeat per-site decisions.
	MPTCPEndpoints host.EndpointsHealth `json:"mptcp_endpoints"`
}

func statusCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("status")
	asJSON := fs.Bool("json", false, "")
	models := fs.String("models", "", "")
	policyFile := fs.String("policy", "", "")
	names := fs.String("names", "", "")
	probe := fs.String("probe-target", "", "")
	sample := fs.Duration("sample", 1500*time.Millisecond, "")
	cell := fs.String("cell", radio.LTE, "")
	radioModel := fs.String("radio-model", "", "")
	every := fs.Duration("every", 0, "")
	if err := cli.ParseNone(fs, args); err != nil {
		return badUsage(stderr, "status: %v", err)
	}
	nameMap, err := paths.ParseNames(*names)
	if err != nil {
		return badUsage(stderr, "status: %v", err)
	}
	if *sample < 0 || *sample > time.Minute {
		return badUsage(stderr, "status: --sample %v: want 0 … 1m", *sample)
	}
	if *every < 0 || (*every > 0 && (*every < 10*time.Millisecond || !*asJSON)) {
		return badUsage(stderr, "status: --every %v: want 10ms or more, with --json", *every)
	}
	if *cell != radio.LTE && *cell != radio.ThreeG {
		return badUsage(stderr, "status: --cell %q: want %s or %s", *cell, radio.LTE, radio.ThreeG)
	}
	if err := needPath("--models", *models, true); err != nil {
		return badUsage(stderr, "status: %v", err)
	}
	if err := needPath("--policy", *policyFile, false); err != nil {
		return badUsage(stderr, "status: %v", err)
	}
	if err := needPath("--radio-model", *radioModel, false); err != nil {
		return badUsage(stderr, "status: %v", err)
	}
	env, _ := readEnv(os.Getenv) // status reads no value that could be unusable
	src, err := env.policySource(*models, *policyFile)
	if err != nil {
		fmt.Fprintf(stderr, "mpsurf-host: status: %v\n", err)
		return exitFailed
	}
	out := statusOutput{Host: protocol.HostName, Version: host.Version, Protocol: protocol.Version, PolicySource: src.String(),
		MPTCPEndpoints: host.MPTCPEndpoints("/proc/sys/net/mptcp")}
	code := exitOK
	if snap, err := policy.NewStore(src).Snapshot(); err != nil {
		out.PolicyError, code = err.Error(), exitFailed
	} else {
		out.Policy = &snap.Policy
	}
	ms := &decide.ModelStatus{}
	if p, src, err := model.Open(env.modelsDir(*models)); err != nil {
		ms.Source, ms.Error, code = src, err.Error(), exitFailed
	} else {
		ms.Source, ms.ID, ms.Version = src, p.ID, p.Version
	}
	out.Model = ms
	if *sample > 0 {
		var tick io.Writer
		if *every > 0 {
			tick = stdout
		}
		if err := measure(&out, *models, *cell, *radioModel, nameMap, *probe, *sample, *every, tick); err != nil {
			out.PathsError = err.Error()
		}
	}
	if *asJSON {
		data, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdout, "%s\n", data)
		return code
	}
	fmt.Fprintf(stdout, "%s %s, protocol %d\npolicy file: %s\n", out.Host, out.Version, out.Protocol, out.PolicySource)
	if out.Policy == nil {
		fmt.Fprintf(stdout, "policy: not loaded: %s\n", out.PolicyError)
	} else {
		p := out.Policy
		fmt.Fprintf(stdout, "policy: %s v%d: multipath %v, theta1 %s, theta2 %s, deadline %s\nreason: %s\n",
			p.Model.ID, p.Model.Version, p.Multipath, theta1Text(p.Theta1), theta2Text(p.Theta2), msText(p.DeadlineMS), p.Reason)
	}
	if m := out.Model; m.Error != "" {
		fmt.Fprintf(stdout, "model: not loaded from %s: %s\n", m.Source, m.Error)
	} else {
		fmt.Fprintf(stdout, "model: %s v%d from %s\n", m.ID, m.Version, m.Source)
	}
	if out.PathsError != "" {
		fmt.Fprintf(stdout, "paths: not measured: %s\n", out.PathsError)
	}
	for _, p := range out.Paths {
		fmt.Fprintf(stdout, "path %s (%s) up %v %v: rtt %s (%s), down %s, up %s, loss %s\n", p.Name, p.Kind, p.Up,
			p.Addrs, unit(p.RTTMS, " ms"), str(p.RTTSource), rate(p.DownBPS), rate(p.UpBPS), percent(p.Loss))
	}
	if out.RRC != nil {
		data, _ := json.Marshal(out.RRC)
		fmt.Fprintf(stdout, "rrc: %s\n", data)
	}
	e := out.MPTCPEndpoints
	fmt.Fprintf(stdout, "mptcp endpoints (%s, path manager %s): %s\n", e.State, e.PathManager, e.Detail)
	if e.Fix != nil {
		fmt.Fprintf(stdout, "  fix: %s\n", *e.Fix)
	}
	return code
}

// unit prints a measurement with its unit, or "?" when it is not measured.
func unit(p *float64, u string) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatFloat(*p, 'f', -1, 64) + u
}

func rate(bps *float64) string {
	if bps == nil {
		return "?"
	}
	return model.HumanBits(*bps)
}

func percent(p *float64) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatFloat(*p*100, 'f', -1, 64) + " %"
}

// theta1Text is θ1 for a person: never (no multipath), from the first byte, or a size in kB/MB.
func theta1Text(t *int64) string {
	switch {
	case t == nil:
		return "never"
	case *t == 0:
		return "0 (from the first byte)"
	}
	return model.HumanBytes(float64(*t))
}

// theta2Text is θ2 for a person: none (no cap) or a size.
func theta2Text(t *int64) string {
	if t == nil {
		return "none"
	}
	return model.HumanBytes(float64(*t))
}

func msText(ms int64) string {
	if ms >= 1000 {
		return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatInt(ms, 10) + " ms"
}

func str(p *string) string {
	if p == nil {
		return "none"
	}
	return *p
}

// statusTick is one line of status --json --every: the paths and RRC state at unix ms TMS.
type statusTick struct {
	TMS   int64        `json:"t_ms"`
	Paths []paths.Path `json:"paths"`
	RRC   any          `json:"rrc"`
}

// loadRadio reads the cellular radio model: radioFile when given, else power-<cell>.json from modelsDir or from
// the models embedded in the binary.
func loadRadio(modelsDir, cell, radioFile string) (*radio.Model, error) {
	file := "power-" + cell + ".json"
	var b []byte
	var err error
	switch {
	case radioFile != "":
		file = radioFile
		b, err = os.ReadFile(radioFile)
	case modelsDir != "":
		b, err = os.ReadFile(filepath.Join(modelsDir, file))
	default:
		b, err = models.FS.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	m, err := radio.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return m, nil
}

// measure samples the paths for d. With every > 0 it also writes a statusTick line to tick every that often,
// so that a caller can follow the RRC state and the estimates while traffic comes and goes.
func measure(out *statusOutput, modelsDir, cell, radioFile string, names map[string]string, probe string, d, every time.Duration, tick io.Writer) error {
	m, err := loadRadio(modelsDir, cell, radioFile)
	if err != nil {
		return err
	}
	s, err := paths.NewSampler(paths.Config{Names: names, ProbeTarget: probe, Cellular: m})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	done := make(chan struct{})
	if tick != nil && every > 0 {
		go func() {
			defer close(done)
			t := time.NewTicker(every)
			defer t.Stop()
			enc := json.NewEncoder(tick)
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-t.C:
					snap := s.Snapshot()
					line := statusTick{TMS: now.UnixMilli(), Paths: snap.Paths}
					if snap.RRC != nil {
						line.RRC = snap.RRC
					}
					enc.Encode(line)
				}
			}
		}()
	} else {
		close(done)
	}
	err = s.Run(ctx)
	cancel()
	<-done
	if err != nil {
		return err
	}
	snap := s.Snapshot()
	out.Paths, out.SampledMS = snap.Paths, time.Since(start).Milliseconds()
	if snap.RRC != nil {
		out.RRC = snap.RRC
	}
	return nil
}
