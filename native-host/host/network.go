package host

// NetworkInfo is what the OS says of the cellular link's cost. Metered is NetworkManager's D-Bus property
// org.freedesktop.NetworkManager.Device.Metered of the cellular device (NMMetered: 0 unknown, 1 yes, 2 no,
// 3 guess-yes, 4 guess-no); Roaming is ModemManager's Modem3gpp.RegistrationState = 5 (roaming). Where neither runs
// (no system bus, as in the testbed), both are unknown and the source says so.
type NetworkInfo struct {
	Metered string `json:"metered"` // yes, no, guess_yes, guess_no, unknown
	Roaming *bool  `json:"roaming"`
	Source  string `json:"source"`
	Detail  string `json:"detail"`
}

// meteredNames maps NMMetered values to the protocol's words.
var meteredNames = map[uint32]string{0: "unknown", 1: "yes", 2: "no", 3: "guess_yes", 4: "guess_no"}

// MeteredName is NetworkManager's NMMetered value as the protocol says it.
func MeteredName(v uint32) string {
	if n, ok := meteredNames[v]; ok {
		return n
	}
	return "unknown"
}
