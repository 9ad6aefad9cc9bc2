// Package netcost reads what the operating system says of the cellular link's cost, over the system D-Bus:
// NetworkManager's Device.Metered property of the cellular interface (NMMetered) and ModemManager's
// Modem3gpp.RegistrationState (5 = roaming). Where neither service runs, or there is no system bus, both are
// unknown and the result says which source was missing. Nothing is written.
package netcost
