#!/usr/bin/env bash
# Benchmarks (figures printed, nothing asserted): native-messaging latency in-process, through a host
# subprocess and through real Chromium; the model's evaluation time and the host's idle CPU; the model's
# calibration against a recorded testbed grid; as root with MPTCP, the link emulator's accuracy and the
# per-connection actuation delay and precision.
set -euo pipefail
cd "$(dirname "$0")/.."
usage='usage: npm run bench   (bash scripts/bench.sh): latency, model and actuation benchmarks (figures printed, nothing asserted); MPSURF_BENCH_LOADS sets the actuation loads'
case ${1-} in -h | --help) echo "$usage"; exit 0 ;; ?*) echo "bench.sh: unknown argument ${1} (--help shows usage)" >&2; exit 2 ;; esac
bash scripts/setup.sh
echo "== decide round trip through the framing (in-process, subprocess, raw-echo baseline)"
go run ./native-host/cmd/hostbench -host dist/mpsurf-host
echo
echo "== through a real Chromium port"
node e2e/bench-slice.mjs
echo
echo "== cost-benefit model: Evaluate p50/p99 against the baseline policy's decide"
go run ./native-host/cmd/modelbench
echo
echo "== host idle CPU with path sampling on"
go test ./native-host/paths/ -run '^$' -bench IdleCPU -benchtime 1x | grep -v '^ok\|^PASS\|^goos\|^goarch\|^pkg\|^cpu'
echo
echo "== model calibration against the recorded baseline grid (e2e/testdata/grid-baseline-runs.jsonl)"
mkdir -p out
go run ./e2e/cmd/calibrate --runs e2e/testdata/grid-baseline-runs.jsonl --out out/
if [ "$(id -u)" = 0 ] && [ -e /proc/sys/net/mptcp/enabled ] && [ -x dist/testbed ]; then
  echo
  echo "== link emulator accuracy (configured vs measured)"
  dist/testbed accuracy
  echo
  echo "== the privileged helper under floods: audit log growth, requests accepted from 40 callers, memory under address churn"
  go run ./native-host/cmd/actuatorbench --helper dist/mpsurf-actuator
  echo
  echo "== actuation: subflow delay after ESTABLISHED (userspace PM vs in-kernel PM) and per-origin precision"
  node e2e/bench-actuation.mjs --loads "${MPSURF_BENCH_LOADS:-40}"
fi
