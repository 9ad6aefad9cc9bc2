// Package decide is MPSurf's one decision pipeline: a Decider, assembled once per process, turns a navigation
// (origin, tab, nav) into a typed Decision. The serving host, `mpsurf-host decide` and `mpsurf-host replay` all go
// through it, so a logged decision, an offline one and a replayed one are the same computation. It only decides:
// carrying a decision out (the privileged helper, the relay) is native-host/carry's.
//
// Its inputs arrive through small interfaces, each with one real implementation and test doubles of pure logic:
// Links (the measured paths and the radio's RRC state: Meter over native-host/paths) and Memory (what the host
// remembers: native-host/store). Anything missing is left out of the model's input, and the model says so in the
// decision's reason.
//
// The model's numbers come from Open (native-host/model): a directory given on the command line, else
// MPSURF_MODELS, else the copy of policy-models/ built into the binary.
package decide
