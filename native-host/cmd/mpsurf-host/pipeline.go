package main

import (
	"context"
	"log/slog"

	"github.com/mpsurf/mpsurf/native-host/battery"
	"github.com/mpsurf/mpsurf/native-host/carry"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/netcost"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/relay"
)

// pipeline assembles the serving host in one place, from the environment e: the model (--models DIR, else
// MPSURF_MODELS, else built in), the store, the path meter (started under ctx) and the battery, handed to one
// decide.Decider; the Carrier that carries its decisions out (the privileged helper's client, the relay to the
// user's MPTCP proxy); and the server around them. A policy file given by itself (--policy, MPSURF_POLICY) fixes
// every decision to that file's, a research and test knob. stop ends them in order once the server has stopped
// serving: the server (its decision log written out, the relay stopped), the meter, then the store they write to.
func pipeline(ctx context.Context, e env, modelsDir string, src policy.Source, pol *policy.Store, log *slog.Logger) (srv *host.Server, stop func()) {
	params, paramsSrc, err := model.Open(e.modelsDir(modelsDir))
	if err != nil {
		log.Error("cost-benefit model not loaded; decide replies policy_unavailable", "source", paramsSrc, "err", err)
	} else {
		log.Info("model", "id", params.ID, "version", params.Version, "source", paramsSrc)
	}
	db, dbErr := openStore(e, log)
	meter := decide.NewMeterFrom(e.meterConfig(log), params, db, log)
	go meter.Run(ctx)
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
	dec := decide.New(cfg)
	var proxy *relay.Upstream
	up, proxyErr := carry.ReadProxyConfig(e.ProxyFile)
	if proxyErr == nil {
		proxy = &up
	}
	car := carry.New(carry.Config{Helper: e.Helper, Hosts: e.Hosts, ProxyFile: e.ProxyFile, Proxy: proxy, ProxyErr: proxyErr,
		Tunnel: dec.Tunnel, Store: db, Cellular: meter.IsCellular, Log: log})
	car.Start()
	srv = host.NewServer(host.Parts{Policy: pol, Decider: dec, Carrier: car, Store: db, StoreErr: dbErr,
		Downloads: host.Downloads{Hosts: e.Hosts, CA: e.DownloadCA}, Preload: e.Preload,
		Network: networkInfo(meter, &netcost.Reader{}),
		Hold:    meter.HoldCellular, // while multipath is paused, no probe of the host's own goes over cellular
		Log:     log})
	return srv, func() {
		srv.Close()
		meter.Close()
		if db != nil {
			if err := db.Close(); err != nil {
				log.Error("closing the decision log", "err", err)
			}
		}
	}
}
