package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mpsurf/mpsurf/native-host/carry"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/paths"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/radio"
)

// The environment of mpsurf-host (a browser passes its own on to the host it starts). It is read here and only
// here, once, by readEnv; every package takes what it needs from the env it returns.
const (
	envModels = "MPSURF_MODELS" // a models directory (model.json, baseline.json) instead of the built-in one
	envPolicy = "MPSURF_POLICY" // a policy file that fixes every decision (a research and test knob)
	envDB     = "MPSURF_DB"     // the decision log, instead of $XDG_DATA_HOME/mpsurf/mpsurf.db
	envLog    = "MPSURF_LOG"    // a file to log to instead of stderr
	// envActuator is the privileged helper's socket (mpsurf-actuator --socket). Unset: carry.DefaultHelper when
	// the installed unit made it, else no helper; "off": no helper. Decisions say which in inputs.actuation.
	envActuator = "MPSURF_ACTUATOR"
	// envHosts maps host names to addresses, "name=IP[|IP...],name=IP", ahead of the system resolver
	// (carry.Hosts): a testbed and override knob.
	envHosts       = "MPSURF_HOSTS"
	envProxyConfig = "MPSURF_PROXY_CONFIG" // the proxy settings file, instead of $XDG_CONFIG_HOME/mpsurf/proxy.json
	envDownloadCA  = "MPSURF_DOWNLOAD_CA"  // a PEM file of extra roots the host's downloads trust
	// The path meter's (decide.MeterConfig).
	envNames         = "MPSURF_NAMES"          // interface kinds over what sysfs says, e.g. wlan0=wifi,wwan0=cellular
	envProbeTarget   = "MPSURF_PROBE_TARGET"   // host:port for the active RTT probe when a path has no traffic
	envCell          = "MPSURF_CELL"           // the cellular radio's technology: lte (default) or 3g
	envNoMeasure     = "MPSURF_NO_MEASURE"     // 1: do not measure paths (the model then goes by its priors)
	envProbeURL      = "MPSURF_PROBE_URL"      // the https object the rate probe fetches; unset: no rate probe
	envProbePins     = "MPSURF_PROBE_PINS"     // base64 SHA-256 SPKI hashes, comma-separated, of the probe's server
	envProbeCellular = "MPSURF_PROBE_CELLULAR" // 1: the rate probe may wake an idle cellular radio
	envUsageEvery    = "MPSURF_USAGE_EVERY"    // how often cellular usage is stored (1s to 1h; a test knob for caps)
)

// env is mpsurf-host's environment, read once (readEnv) into what the packages take.
type env struct {
	Models, Policy string // the models directory and the policy file, "" when unset
	// DB is the decision log's path; "" with DBErr saying why there is none.
	DB    string
	DBErr error
	Log   string // a log file, "" for stderr
	// Helper is the privileged helper's socket, "" when there is none (carry.Config.Helper).
	Helper     string
	Hosts      carry.Hosts
	ProxyFile  string // the proxy settings file (carry.Config.ProxyFile)
	DownloadCA string
	Preload    string // LD_PRELOAD: mptcpize's library there says the browser's sockets are MPTCP
	Home       string // $HOME: where the per-user manifests go (install)
	// The path meter's settings, as given (meterConfig reads them).
	Names, ProbeTarget, Cell, NoMeasure, ProbeURL, ProbePins, ProbeCellular, UsageEvery string
}

// readEnv reads the environment through getenv (os.Getenv; tests give their own). A value the host cannot use
// is an error naming the variable, with the rest of env filled in (so that the error can be logged where
// MPSURF_LOG says).
func readEnv(getenv func(string) string) (env, error) {
	e := env{Models: getenv(envModels), Policy: getenv(envPolicy), Log: getenv(envLog), DownloadCA: getenv(envDownloadCA),
		Preload: getenv("LD_PRELOAD"), Names: getenv(envNames), ProbeTarget: getenv(envProbeTarget), Cell: getenv(envCell),
		NoMeasure: getenv(envNoMeasure), ProbeURL: getenv(envProbeURL), ProbePins: getenv(envProbePins),
		ProbeCellular: getenv(envProbeCellular), UsageEvery: getenv(envUsageEvery)}
	home := getenv("HOME")
	e.Home = home
	e.DB = getenv(envDB)
	if e.DB == "" {
		dir := getenv("XDG_DATA_HOME")
		if dir == "" && home == "" {
			e.DBErr = fmt.Errorf("no %s, XDG_DATA_HOME or home directory: $HOME is not defined", envDB)
		} else if dir == "" {
			dir = filepath.Join(home, ".local", "share")
		}
		if e.DBErr == nil {
			e.DB = filepath.Join(dir, "mpsurf", "mpsurf.db")
		}
	}
	e.ProxyFile = getenv(envProxyConfig)
	if e.ProxyFile == "" {
		dir := getenv("XDG_CONFIG_HOME")
		if dir == "" {
			dir = filepath.Join(cmp.Or(home, "."), ".config")
		}
		e.ProxyFile = filepath.Join(dir, "mpsurf", "proxy.json")
	}
	switch e.Helper = getenv(envActuator); e.Helper {
	case "":
		if fi, err := os.Stat(carry.DefaultHelper); err == nil && fi.Mode()&os.ModeSocket != 0 {
			e.Helper = carry.DefaultHelper
		}
	case "off":
		e.Helper = ""
	}
	hosts, err := carry.ParseHosts(getenv(envHosts))
	if err != nil {
		return e, fmt.Errorf("%s: %w", envHosts, err)
	}
	e.Hosts = hosts
	return e, nil
}

// policySource is where the network-wide policy comes from: the flags if one is set, else the environment, else
// the copy built into the binary. Setting both a directory and a file is an error rather than a silent preference.
func (e env) policySource(modelsDir, policyFile string) (policy.Source, error) {
	if modelsDir == "" && policyFile == "" {
		if e.Models != "" && e.Policy != "" {
			return policy.Source{}, fmt.Errorf("both %s and %s are set; set one", envModels, envPolicy)
		}
		modelsDir, policyFile = e.Models, e.Policy
	}
	return policy.Resolve(modelsDir, policyFile)
}

// modelsDir is the models directory a command loads the model from (model.Open): its flag's, else the
// environment's; "" for the one built into the binary.
func (e env) modelsDir(flag string) string { return cmp.Or(flag, e.Models) }

// meterConfig is the path meter's settings. A value it cannot use is logged and left out, as the meter would
// measure without it: an interval out of range keeps the default, and unusable interface kinds or radio
// technology leave the paths unmeasured.
func (e env) meterConfig(log *slog.Logger) decide.MeterConfig {
	var c decide.MeterConfig
	if v := e.UsageEvery; v != "" {
		if d, err := time.ParseDuration(v); err == nil && d >= time.Second && d <= time.Hour {
			c.UsageEvery = d
		} else {
			log.Warn("ignoring "+envUsageEvery+": want a duration from 1s to 1h", "value", v)
		}
	}
	if e.NoMeasure == "1" {
		c.Off = true
		return c
	}
	names, err := paths.ParseNames(e.Names)
	if err == nil && e.Cell != "" && e.Cell != radio.LTE && e.Cell != radio.ThreeG {
		err = fmt.Errorf("%s=%q: want %s or %s", envCell, e.Cell, radio.LTE, radio.ThreeG)
	}
	if err != nil {
		log.Warn("paths not measured", "err", err)
		c.Off = true
		return c
	}
	c.Names, c.Cell, c.ProbeTarget, c.ProbeURL = names, e.Cell, e.ProbeTarget, e.ProbeURL
	for _, p := range strings.Split(e.ProbePins, ",") {
		if p = strings.TrimSpace(p); p != "" {
			c.ProbePins = append(c.ProbePins, p)
		}
	}
	c.ProbeCellular = e.ProbeCellular == "1"
	return c
}
