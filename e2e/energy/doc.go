// Package energy estimates radio energy from packet timelines, the way trace-driven simulation in AT&T's ARO
// tool does: an RRC state machine driven by packet times, with a power draw for every state.
//
// A radio.Model (native-host/radio) is one radio technology (LTE, 3G, WiFi) read from a
// policy-models/power-*.json file, with its state machine (Model.Demote, Model.Wake, Model.Step), which the
// host's online RRC inference uses too. Timeline replays a packet trace through it and returns state segments;
// Simulate adds up their energy over a window [start, end + Model.Drain()].
//
// A window starts idle, connected (pre-promoted) or where the link's earlier packets left the radio: StartAt
// walks the same state machine through them to the window's start, TimelineFrom replays from that state (a
// tail under way goes on with the time it has left), and SimulateFrom charges the window only the energy its
// packets add to it (no promotion for a radio still connected; the tail as far as they extend it).
//
// Conventions, chosen so that replaying a trace is causal:
//   - A promotion starts at the packet that triggers it; packets arriving during it wait for its end.
//   - A gap between packets shorter than the first tail phase counts as connected ("active") time; otherwise
//     the radio walks through the tail phases and, past the last, is idle.
//   - Energy while connected is beta * duration + alpha_up * uplink Mbit + alpha_down * downlink Mbit. That
//     is exactly what summing (alpha_u*t_u + alpha_d*t_d + beta) * dt over throughput bins of any width gives,
//     so no bin width enters the totals; PowerSeries draws the binned curve.
//   - Idle energy is reported but left out of totals.
//
// ReadTraceFile reads files (radio.Load the models); everything else is pure computation on values and safe for concurrent
// use. ParseTrace reads the link emulator's timelines (e2e/linkem), which have no header line.
package energy
