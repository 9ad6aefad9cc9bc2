#!/usr/bin/env bash
# Sets up everything MPSurf needs on a fresh Debian machine: Debian packages (as root), Node packages and
# the Go and webpack builds. Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
usage='usage: npm run setup   (bash scripts/setup.sh): Debian packages (as root), Node packages, the Go and webpack builds'
case ${1-} in -h | --help) echo "$usage"; exit 0 ;; ?*) echo "setup.sh: unknown argument ${1} (--help shows usage)" >&2; exit 2 ;; esac

log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

# Debian packages: chromium and firefox-esr (the browsers the tests drive), mptcpize (makes its sockets MPTCP), iproute2 (testbed),
# aria2 (downloads grid), squid + apache2-utils (htpasswd) + openssl: the MPTCP proxy the testbed's proxy host and its
# tests run.
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v firefox-esr >/dev/null 2>&1 || need+=(firefox-esr)
command -v mptcpize >/dev/null 2>&1 || need+=(mptcpize)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v aria2c >/dev/null 2>&1 || need+=(aria2) # the segmented-download peer of the downloads grid
squid_new=0
command -v squid >/dev/null 2>&1 || { need+=(squid); squid_new=1; }
command -v htpasswd >/dev/null 2>&1 || need+=(apache2-utils)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# The Debian packages (npm run package, packaging/test-packages): lintian checks them, help2man makes their man
# pages from each command's --help, file tells the binaries' architecture, unzip reads the .xpi's manifest.
command -v lintian >/dev/null 2>&1 || need+=(lintian)
command -v help2man >/dev/null 2>&1 || need+=(help2man)
command -v file >/dev/null 2>&1 || need+=(file)
command -v unzip >/dev/null 2>&1 || need+=(unzip)
# stress-ng loads the CPUs while scripts/stress-flaky repeats the timing-sensitive tests.
command -v stress-ng >/dev/null 2>&1 || need+=(stress-ng)
if ((${#need[@]})); then
  if [ "$(id -u)" = 0 ]; then
    log "installing Debian packages: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    # The tests run their own Squid in network namespaces; the package's service, which Debian starts on a machine
    # with systemd, is not wanted on a development machine: stop and disable it if this run installed it.
    if ((squid_new)) && [ -d /run/systemd/system ]; then
      systemctl disable --now squid >/dev/null 2>&1 || true
      log "squid installed for the tests; its system service is disabled (the testbed starts its own)"
    fi
  else
    log "missing Debian packages (${need[*]}); run as root or: sudo apt-get install ${need[*]}"
  fi
fi

# Node packages, exactly as locked.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing Node packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

command -v go >/dev/null 2>&1 || { log "Go is not installed (need Go >= 1.24)"; exit 1; }

log "building dist/"
npm run --silent build:host
npm run --silent build:ext >/dev/null
for cmd in testbed origin report; do
  if [ -d "e2e/cmd/$cmd" ]; then
    go build -trimpath -o "dist/$cmd" "./e2e/cmd/$cmd"
  fi
done
log "ready: $(ls dist | tr '\n' ' ')"

# The privileged helper's systemd unit (packaging/systemd): installed as root, with the binary it runs. It is
# started only when systemd runs and MPSURF_ENABLE_ACTUATOR=1, because it selects the userspace MPTCP path
# manager for the whole machine while it runs (restored when it stops).
if [ "$(id -u)" = 0 ]; then
  unit=/etc/systemd/system/mpsurf-actuator.service
  uid=${MPSURF_ALLOWED_UID:-${SUDO_UID:-$(id -u)}}
  cell_if=${MPSURF_CELL_IF:-$(ls /sys/class/net | grep -m1 -E '^(wwan|rmnet|ccmni|usb)' || echo wwan0)}
  install -D -m 0755 dist/mpsurf-actuator /usr/local/bin/mpsurf-actuator
  # The helper runs as a system user of its own with CAP_NET_ADMIN only (the unit's User=), never as root.
  if ! id -u mpsurf-actuator >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin mpsurf-actuator
    log "created the system user mpsurf-actuator, which the helper runs as"
  fi
  # The package's unit (packaging/systemd) serves the group mpsurf and finds the modem itself; a source build
  # names the one allowed uid (root too, which a group never admits) and the interface instead.
  sed -e "s#/usr/sbin/mpsurf-actuator#/usr/local/bin/mpsurf-actuator#g" -e "s/--allow-group mpsurf/--allow-uid $uid/" \
    -e "s/^Environment=MPSURF_CELL_IF=auto\$/Environment=MPSURF_CELL_IF=$cell_if/" \
    -e "s#^Documentation=.*#Documentation=file://$PWD/README.md#" packaging/systemd/mpsurf-actuator.service >"$unit.tmp"
  grep -q -- "--allow-uid $uid" "$unit.tmp" && grep -q "^Environment=MPSURF_CELL_IF=$cell_if\$" "$unit.tmp" ||
    { log "packaging/systemd/mpsurf-actuator.service no longer has the words this script rewrites"; exit 1; }
  mv "$unit.tmp" "$unit"
  log "installed $unit (allowed uid $uid, cellular interface $cell_if) and /usr/local/bin/mpsurf-actuator"
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    if [ "${MPSURF_ENABLE_ACTUATOR:-0}" = 1 ]; then
      systemctl enable --now mpsurf-actuator.service
      log "mpsurf-actuator started; the native host finds it at /run/mpsurf/actuator.sock"
    else
      log "mpsurf-actuator installed, not started (MPSURF_ENABLE_ACTUATOR=1 npm start, or systemctl enable --now mpsurf-actuator)"
    fi
  else
    log "systemd is not running here: mpsurf-actuator installed, not started"
  fi
fi
