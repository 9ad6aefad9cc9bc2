#!/bin/sh
# Chromium inside the testbed's client namespace, its TCP sockets turned into MPTCP sockets by mptcpize.
# playwright-core starts this in place of /usr/bin/chromium; the DevTools pipe survives both execs.
exec ip netns exec "${MPS_CLIENT_NS:-${MPS_PREFIX:-mps}-client}" mptcpize run "${MPSURF_CHROMIUM:-/usr/bin/chromium}" "$@"
