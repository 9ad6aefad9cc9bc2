# A fresh Debian 12 system booted under its own systemd, for the checks that install MPSurf as a user would
# (packaging/check-on-fresh-debian, packaging/proxy/check-on-fresh-debian). Sourced, not run. The caller sets
# fresh_dir (where the system goes) and work (a scratch directory), and defines say and fail.

# fresh_mirror prints the Debian mirror this machine's own apt uses: the first URIs of a deb822 stanza in
# /etc/apt/sources.list.d/*.sources that carries bookworm's main suite, else a bookworm line of
# /etc/apt/sources.list. The checks name no mirror of their own.
fresh_mirror() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    uri=$(awk '
      BEGIN { RS = ""; FS = "\n" }
      {
        uris = ""; deb = 0; suite = 0
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:.*(^|[ \t:])deb([ \t]|$)/) deb = 1
          if ($i ~ /^URIs:/) { split($i, u, /[ \t]+/); uris = u[2] }
          if ($i ~ /^Suites:/ && $i ~ /[ \t]bookworm([ \t]|$)/) suite = 1
        }
        if (deb && suite && uris != "") { print uris; exit }
      }' "$f")
    [[ -n $uri ]] && { printf '%s\n' "$uri"; return 0; }
  done
  uri=$(awk '$1 == "deb" && $0 ~ /[ \t]bookworm[ \t]/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list 2>/dev/null)
  [[ -n $uri ]] && { printf '%s\n' "$uri"; return 0; }
  return 1
}

# fresh_bootstrap PACKAGE,...: debootstrap Debian 12 into $fresh_dir (required and important packages, systemd
# as init, and the packages named), from this machine's own mirror.
fresh_bootstrap() {
  local mirror
  mirror=$(fresh_mirror) || fail "no bookworm mirror in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"
  say "debootstrap bookworm into $fresh_dir from $mirror"
  debootstrap --include="systemd-sysv,dbus,ca-certificates${1:+,$1}" bookworm "$fresh_dir" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
  cp /etc/resolv.conf "$fresh_dir/etc/resolv.conf"
  # The suites a Debian 12 install has (updates and security beside the release), as this machine's apt has them.
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] && grep -q 'bookworm' "$f" && cp "$f" "$fresh_dir/etc/apt/sources.list.d/" && rm -f "$fresh_dir/etc/apt/sources.list"
  done
  return 0
}

# fresh_boot [NSPAWN OPTION...]: boot $fresh_dir with systemd-nspawn --boot and wait until its systemd (PID 1)
# says running or degraded. Sets fresh_pid (the systemd-nspawn process).
fresh_boot() {
  systemd-nspawn -D "$fresh_dir" --boot --register=no --keep-unit --console=pipe "$@" </dev/null >"$work/console.log" 2>&1 &
  fresh_pid=$!
  local state=''
  for _ in $(seq 300); do
    if [[ -n $(fresh_leader) ]]; then
      state=$(in_box systemctl is-system-running 2>/dev/null || true)
      [[ $state == running || $state == degraded ]] && break
    fi
    kill -0 "$fresh_pid" 2>/dev/null || { tail -20 "$work/console.log" >&2; fail "the container stopped while booting"; }
    sleep 0.2
  done
  [[ $state == running || $state == degraded ]] || fail "the container's systemd is '$state'"
  [[ $(in_box cat /proc/1/comm) == systemd ]] || fail "the container's PID 1 is not systemd"
}

# The container's PID 1 (its systemd): the child of systemd-nspawn.
fresh_leader() { pgrep -P "$fresh_pid" | head -n1; }
# in_box COMMAND...: run in the container (its mount, UTS, IPC, PID and network namespaces).
in_box() { nsenter -t "$(fresh_leader)" -m -u -i -p -n -- "$@"; }

# fresh_poweroff: shut the container down and wait for it.
fresh_poweroff() {
  [[ -n ${fresh_pid-} ]] && kill -0 "$fresh_pid" 2>/dev/null || return 0
  in_box systemctl poweroff >/dev/null 2>&1 || true
  for _ in $(seq 300); do kill -0 "$fresh_pid" 2>/dev/null || break; sleep 0.2; done
  kill "$fresh_pid" 2>/dev/null || true
  wait "$fresh_pid" 2>/dev/null || true
}
