// Package rrc infers a cellular radio's RRC state from packet activity on its interface, with the state
// machine and timers of a native-host/radio model (policy-models/power-lte.json, power-3g.json, which cite
// their sources).
//
// The caller samples the interface's packet and byte counters (every 50 ms or less) and passes each sample to
// Machine.Observe; a sample whose counters moved counts as packets at the sample's time, so the inferred
// transitions are exact up to one sampling period. State reports the PROTOCOL.md RRC object: the model's name
// for the state, the unix time in ms the radio entered it, and source "inferred".
//
// Reported names: the model's promotion, connected and tail-phase names and "idle". The first tail phase
// (LTE's inactivity timer, 3G's DCH timer) is reported under the connected state's name, because the radio is
// still in continuous reception (LTE) or CELL_DCH (3G) while it runs; the energy accounting in e2e/energy
// makes the same choice.
//
// ModemManager is left out on purpose. Its D-Bus API (org.freedesktop.ModemManager1.Modem: State,
// AccessTechnologies, SignalQuality, Bearers; Modem.Signal: RSSI/RSRP/RSRQ/SNR) reports registration and
// whether a data bearer is connected, not the RRC state (idle, connected, DRX, FACH): a connected bearer stays
// connected through RRC_IDLE. What it could honestly add, whether the bearer is up, the interface's up flag in
// native-host/paths already gives. So every RRC object this package produces has source "inferred".
package rrc
