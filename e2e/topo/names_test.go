package topo

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite names.json from names.go")

// namesJSON is what names.go defines, for the testbed's JavaScript side (e2e/lib/topo.mjs reads names.json).
func namesJSON() []byte {
	n := NamesFor("")
	type suffixes struct {
		Client string `json:"client"`
		Router string `json:"router"`
		Server string `json:"server"`
		Proxy  string `json:"proxy"`
	}
	type iface struct {
		WiFi         string `json:"wifi"`
		Cell         string `json:"cell"`
		Server       string `json:"server"`
		RouterWiFi   string `json:"router_wifi"`
		RouterCell   string `json:"router_cell"`
		RouterServer string `json:"router_server"`
		Proxy        string `json:"proxy"`
		RouterProxy  string `json:"router_proxy"`
	}
	v := struct {
		About             string   `json:"about"`
		DefaultPrefix     string   `json:"default_prefix"`
		NamespaceSuffixes suffixes `json:"namespace_suffixes"`
		Interfaces        iface    `json:"interfaces"`
		Addresses         struct {
			WiFi          string `json:"wifi"`
			WiFiGateway   string `json:"wifi_gateway"`
			Cell          string `json:"cell"`
			CellGateway   string `json:"cell_gateway"`
			Server        string `json:"server"`
			ServerGateway string `json:"server_gateway"`
			Proxy         string `json:"proxy"`
			ProxyGateway  string `json:"proxy_gateway"`
		} `json:"addresses"`
		PrefixLen int `json:"prefix_len"`
	}{
		About: "Generated from e2e/topo/names.go (go test ./e2e/topo -run TestNamesFile -update): the testbed's " +
			"namespaces (the prefix, then each suffix), interfaces and addresses, for the JavaScript side (e2e/lib/topo.mjs).",
		DefaultPrefix:     DefaultPrefix,
		NamespaceSuffixes: suffixes{n.Client, n.Router, n.Server, n.Proxy},
		Interfaces:        iface{WiFiIf, CellIf, ServerIf, RouterWiFiIf, RouterCellIf, RouterServerIf, ProxyIf, RouterProxyIf},
		PrefixLen:         PrefixLen,
	}
	a := &v.Addresses
	a.WiFi, a.WiFiGateway, a.Cell, a.CellGateway = WiFiAddr, WiFiGateway, CellAddr, CellGateway
	a.Server, a.ServerGateway, a.Proxy, a.ProxyGateway = ServerAddr, ServerGateway, ProxyAddr, ProxyGateway
	b, _ := json.MarshalIndent(v, "", " ")
	return append(b, '\n')
}

// names.json says what names.go defines: a name or address changed here reaches the JavaScript side.
func TestNamesFile(t *testing.T) {
	want := namesJSON()
	if *update {
		if err := os.WriteFile("names.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("names.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("names.json is not what names.go defines; rewrite it with -update:\n%s", want)
	}
}
