package main

import (
	"context"
	"log/slog"

	"github.com/mpsurf/mpsurf/native-host/battery"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
)

// pipeline assembles the serving host in one place: the model (--models DIR, else MPSURF_MODELS, else built in),
// the store, the path meter (started under ctx), the privileged helper's client and the battery, handed to one
// decide.Decider, and the server around it. A policy file given by itself (--policy, MPSURF_POLICY) fixes every
// decision to that file's, a research and test knob.
func pipeline(ctx context.Context, modelsDir string, src policy.Source, pol *policy.Store, log *slog.Logger) (*host.Server, *decide.Meter) {
	params, paramsSrc, err := model.Open(modelsDir)
	if err != nil {
		log.Error("cost-benefit model not loaded; decide replies policy_unavailable", "source", paramsSrc, "err", err)
	} else {
		log.Info("model", "id", params.ID, "version", params.Version, "source", paramsSrc)
	}
	db, dbErr := openStore(log)
	meter := decide.MeterFromEnv(params, db, log)
	go meter.Run(ctx)
	act := host.StartActuator(log)
	cfg := decide.Config{Params: params, ParamsSource: paramsSrc, ParamsErr: err, Links: meter, Log: log,
		Battery: func() *model.Battery {
			if b, err := battery.Read(""); err == nil && b.Present {
				return &model.Battery{Present: true, Percent: b.Percent, Charging: b.Charging}
			}
			return nil
		}}
	if db != nil {
		cfg.Memory = db // a nil *store.Store in the interface would not read as "no memory"
	}
	if src.Kind == policy.OneFile {
		cfg.Fixed = pol
	}
	srv := host.NewServer(pol, decide.New(cfg), act, log)
	srv.SetStore(db, dbErr)
	return srv, meter
}
