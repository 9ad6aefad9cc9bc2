// Package report turns the testbed's run records into per-load radio energy, statistics, SVG plots and a
// Markdown report that puts our numbers beside the seed papers'.
//
// # Run records (the contract with the browser runner)
//
// The runner appends one JSON object per page load, one per line, to out/runs.jsonl:
//
//	{
//	  "run_id":        string, unique per load
//	  "mode":          "sp-wifi" | "sp-cell" | "mp-always" | "mp-adaptive"
//	  "profile":       string, an e2e/profiles id (the link conditions)
//	  "cell_tech":     "lte" | "3g", which power model the cellular radio gets
//	  "page":          string, page id
//	  "page_bytes":    int, bytes of the whole page (all objects)
//	  "objects":       int, number of objects
//	  "proto":         "h2" | "http/1.1"
//	  "rep":           int, repetition number
//	  "start_unix_ns": int, when the navigation started
//	  "end_unix_ns":   int, when the load event fired (>= start)
//	  "plt_ms":        number, page load time; > 0 when ok
//	  "ok":            bool, false when the load failed or timed out
//	  "error":         string, optional, why it failed
//	  "link_bytes":    {"wlan0": {"rx": int, "tx": int}, "wwan0": {"rx": int, "tx": int}}
//	  "server_path_bytes": {"wlan0": int, "wwan0": int} | null
//	  "decision":      {"multipath": bool, "theta1": int, "theta2": int | null, "reason": string,
//	                    "basis": "measured" | "prior" | "rule" (optional)} | null
//	  "header_seen":   bool, whether the origin saw the policy header
//	  "timeline_dir":  string, directory holding wlan0.csv and wwan0.csv
//	  "history":       "session" | "none", optional: what an mp-adaptive load's host remembered
//	}
//
// Every key except "error" must be present. A relative timeline_dir is resolved against the directory that
// holds runs.jsonl. wlan0.csv and wwan0.csv hold lines "t_unix_ns,dir,bytes" as energy.ParseTrace reads
// them; a missing file in an existing directory counts as no traffic on that interface and is noted in the
// report. Unknown keys are ignored, so the runner may add fields.
//
// Loads with ok=false are counted and listed as failures and left out of every statistic.
//
// # Energy
//
// Each ok load gets two radios: the cellular one with the model of its cell_tech and the WiFi one, each
// replayed over [start, end + the model's drain] (energy.Simulate). The cellular radio's state at the start
// is an option: idle; connected, as after seed 000's pre-load pings; or observed, where the packets of the
// earlier ok loads on the load's wwan0 timeline (any mode's, each between its start and end) left it, the load
// then charged only the energy it adds to that state (energy.StartAt, energy.SimulateFrom). The WiFi radio
// starts idle. The report states which was used.
//
// # Derived numbers
//
// Per (profile, cell_tech, proto, page) and mode: mean, standard deviation and quartiles of PLT and energy.
// The per-page gain of seed 000 is G = (min(mean PLT sp-wifi, mean PLT sp-cell) - mean PLT mp) / that min,
// for mp-always and mp-adaptive. The energy ratio of seed 001 Fig. 4 is mean radio energy of the MP mode over
// that of sp-wifi, with and without the tail. Small pages are those of at most SmallPageBytes.
//
// # Decisions
//
// When the runs have sp-wifi, mp-always and mp-adaptive loads, AnalyzeDecisions measures the adaptive mode per
// profile (decisions.go): the share of mp-always's PLT reduction it keeps on pages of 1 MB and more, its cellular
// bytes and energy as a share of mp-always's on pages under 200 kB, the pages where it is more than 10 % slower
// than the better mode, its decisions by basis, and its utility regret against an oracle. The report's
// "Decisions" section defines each; cmd/report prints a one-screen summary. 1 kB = 1000 bytes, 1 MB = 10^6 bytes.
package report
