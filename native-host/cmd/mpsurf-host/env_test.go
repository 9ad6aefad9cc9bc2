package main

import (
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/policy"
)

// vars is an environment for readEnv.
type vars map[string]string

func (v vars) get(name string) string { return v[name] }

// The environment's part of choosing the policy (the flags': policy TestResolve): MPSURF_POLICY alone, a flag
// over it, and both variables at once refused by name.
func TestPolicySource(t *testing.T) {
	dir := t.TempDir()
	e, _ := readEnv(vars{envPolicy: "rel.json"}.get)
	if s, err := e.policySource("", ""); err != nil || s.Kind != policy.OneFile || !filepath.IsAbs(s.Path) {
		t.Errorf("policy env: %+v, %v", s, err)
	}
	if s, err := e.policySource(dir, ""); err != nil || s.Kind != policy.Dir {
		t.Errorf("a flag wins over the environment: %+v, %v", s, err)
	}
	e, _ = readEnv(vars{envPolicy: "rel.json", envModels: dir}.get)
	if _, err := e.policySource("", ""); err == nil || !strings.Contains(err.Error(), envModels) {
		t.Errorf("both env: %v", err)
	}
}

// The environment is read into one env: the places of the decision log and the proxy settings by the XDG rules,
// the helper's socket, and MPSURF_HOSTS parsed once, a bad value refused by name whether a helper is configured
// or not.
func TestReadEnv(t *testing.T) {
	for _, tc := range []struct {
		name            string
		vars            vars
		db, proxy, help string
		err             string
	}{
		{"home only", vars{"HOME": "/home/u", envActuator: "off"}, "/home/u/.local/share/mpsurf/mpsurf.db", "/home/u/.config/mpsurf/proxy.json", "", ""},
		{"XDG directories", vars{"HOME": "/home/u", "XDG_DATA_HOME": "/d", "XDG_CONFIG_HOME": "/c", envActuator: "/run/a.sock"},
			"/d/mpsurf/mpsurf.db", "/c/mpsurf/proxy.json", "/run/a.sock", ""},
		{"named files", vars{envDB: "/x/m.db", envProxyConfig: "/x/p.json", envActuator: "off"}, "/x/m.db", "/x/p.json", "", ""},
		{"no home", vars{envActuator: "off"}, "", "mpsurf/proxy.json", "", ""},
		{"bad hosts, no helper", vars{"HOME": "/h", envActuator: "off", envHosts: "origin.test"}, "", "", "", "MPSURF_HOSTS: entry \"origin.test\" is not name=address"},
		{"bad hosts, a helper", vars{"HOME": "/h", envActuator: "/run/a.sock", envHosts: "origin.test=example.com"}, "", "", "", "MPSURF_HOSTS: \"example.com\" is not an IP address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := readEnv(tc.vars.get)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.DB != tc.db || (tc.db == "") != (e.DBErr != nil) || !strings.HasSuffix(e.ProxyFile, tc.proxy) || e.Helper != tc.help {
				t.Errorf("db %q (%v), proxy %q, helper %q", e.DB, e.DBErr, e.ProxyFile, e.Helper)
			}
		})
	}
	e, err := readEnv(vars{envActuator: "off", envHosts: "origin.test=10.200.3.2|10.200.3.3"}.get)
	if err != nil || !slices.Equal(e.Hosts["origin.test"], []netip.Addr{netip.MustParseAddr("10.200.3.2"), netip.MustParseAddr("10.200.3.3")}) {
		t.Errorf("hosts %v, %v", e.Hosts, err)
	}
}

// A serving host with an unusable MPSURF_HOSTS does not start: it says why in its log and exits 1, although no
// helper is configured.
func TestServeRefusesBadHosts(t *testing.T) {
	r := runHost(t, nil, hostEnv("MPSURF_HOSTS=origin.test", "MPSURF_ACTUATOR=off"), origin)
	if r.code != exitFailed || !strings.Contains(string(r.stderr), "MPSURF_HOSTS") {
		t.Errorf("exit %d, stderr %s", r.code, r.stderr)
	}
}
