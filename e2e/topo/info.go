package topo

// IfInfo describes one client interface.
type IfInfo struct {
	Addr      string `json:"addr"`
	PrefixLen int    `json:"prefix_len"`
	Gateway   string `json:"gateway"`
	RouterIf  string `json:"router_if"`
	Table     int    `json:"table"`
	Tech      string `json:"tech"`
}

// Info is the fixed layout of a testbed instance.
type Info struct {
	Namespaces Names             `json:"namespaces"`
	Client     map[string]IfInfo `json:"client"`
	Server     struct {
		If       string `json:"if"`
		Addr     string `json:"addr"`
		Gateway  string `json:"gateway"`
		RouterIf string `json:"router_if"`
	} `json:"server"`
	// Proxy is where the proxy host sits when the testbed has one (up --proxy).
	Proxy struct {
		If       string `json:"if"`
		Addr     string `json:"addr"`
		Gateway  string `json:"gateway"`
		RouterIf string `json:"router_if"`
	} `json:"proxy"`
	PrimaryIf string `json:"primary_if"` // carries the default route in sp-wifi and mp
	Modes     []Mode `json:"modes"`
	MPTCP     struct {
		Subflows        int `json:"subflows"`
		AddAddrAccepted int `json:"add_addr_accepted"`
	} `json:"mptcp_limits"`
}

// Describe returns the layout of the instance with the given prefix.
func Describe(prefix string) Info {
	var in Info
	in.Namespaces = NamesFor(prefix)
	in.Client = map[string]IfInfo{
		WiFiIf: {Addr: WiFiAddr, PrefixLen: PrefixLen, Gateway: WiFiGateway, RouterIf: RouterWiFiIf, Table: WiFiTable, Tech: "wifi"},
		CellIf: {Addr: CellAddr, PrefixLen: PrefixLen, Gateway: CellGateway, RouterIf: RouterCellIf, Table: CellTable, Tech: "cellular"},
	}
	in.Server.If, in.Server.Addr, in.Server.Gateway, in.Server.RouterIf = ServerIf, ServerAddr, ServerGateway, RouterServerIf
	in.Proxy.If, in.Proxy.Addr, in.Proxy.Gateway, in.Proxy.RouterIf = ProxyIf, ProxyAddr, ProxyGateway, RouterProxyIf
	in.PrimaryIf = WiFiIf
	in.Modes = Modes
	in.MPTCP.Subflows, in.MPTCP.AddAddrAccepted = MPTCPSubflows, MPTCPAddAddrOK
	return in
}
