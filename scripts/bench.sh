#!/usr/bin/env bash
# Benchmarks (figures printed, nothing asserted): native-messaging latency in-process, through a host
# subprocess and through real Chromium; the link emulator's accuracy when root and MPTCP are here.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== decide round trip through the framing (in-process, subprocess, raw-echo baseline)"
go run ./native-host/cmd/hostbench -host dist/mpsurf-host
echo
echo "== through a real Chromium port"
node e2e/bench-slice.mjs
if [ "$(id -u)" = 0 ] && [ -e /proc/sys/net/mptcp/enabled ] && [ -x dist/testbed ]; then
  echo
  echo "== link emulator accuracy (configured vs measured)"
  dist/testbed accuracy
fi
