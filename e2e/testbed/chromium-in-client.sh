#!/bin/sh
# Chromium inside the testbed's client namespace, its TCP sockets turned into MPTCP sockets by mptcpize, unless
# MPSURF_MPTCPIZE=0 (the proxy modes: the browser speaks plain TCP and the host's relay dials the proxy over MPTCP).
# playwright-core starts this in place of /usr/bin/chromium; the DevTools pipe survives both execs.
ns="${MPS_CLIENT_NS:-${MPS_PREFIX:-mps}-client}"
if [ "${MPSURF_MPTCPIZE:-1}" = 0 ]; then
  exec ip netns exec "$ns" "${MPSURF_CHROMIUM:-/usr/bin/chromium}" "$@"
fi
exec ip netns exec "$ns" mptcpize run "${MPSURF_CHROMIUM:-/usr/bin/chromium}" "$@"
