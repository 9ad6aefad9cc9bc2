// Package radio holds the cellular and WiFi radio models MPSurf reasons with: a Model is one technology (LTE,
// 3G, WiFi) read from a policy-models/power-*.json file, with its RRC state machine and power draw.
//
// The state machine is the pair of pure functions Model.Demote (where a radio ends up after some silence) and
// Model.Wake (where a packet moves it); Model.Step combines them. The testbed's energy accounting
// (e2e/energy) replays packet traces through them, and native-host/rrc drives them online from interface
// counters.
//
// Conventions:
//   - A promotion starts at the packet that triggers it; packets arriving during it wait for its end.
//   - Right after a packet the first tail phase (LTE's inactivity timer, 3G's DCH timer) is already running.
//   - Power while connected is beta + alpha_up * uplink Mbit/s + alpha_down * downlink Mbit/s.
//
// Load reads a file; everything else is pure computation on values and safe for concurrent use.
package radio
