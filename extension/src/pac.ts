// The PAC script that routes origins decided multipath to the host's relay (and on to the user's MPTCP proxy) and
// everything else DIRECT, so that QUIC and plain TCP stay as they are for them (Chromium sends no QUIC through an
// HTTP proxy). Plain logic, no browser calls: the vitest suite runs it with hostile host names.
//
// Only https (and wss) to port 443 goes to the relay: the proxy tunnels nothing else (packaging/proxy). Hosts are
// embedded as JSON object keys after a strict check (punycode DNS names, IPv4, IPv6), so no host string can end the
// string literal or add code to the script. Chromium hands FindProxyForURL the host without IPv6 brackets and with
// IDNs in punycode, and strips https URLs down to scheme, host and port.

/** A host as the PAC sees it (lower case, punycode, IPv6 without brackets), or null when it cannot be one. */
export function pacHost(input: string): string | null {
  if (typeof input !== 'string' || input.length === 0 || input.length > 255) return null;
  let h = input.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  // Nothing that could carry a port, a path, user info or quoting: a host name or an address only.
  // eslint-disable-next-line no-control-regex
  if (/[\s\x00-\x1f\x7f"'`\\/@?#%<>{}|^[\]]/.test(h) || (h.includes(':') && !/^[0-9a-f:.]+$/.test(h))) return null;
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (/^[0-9a-f:.]+$/.test(h) && h.includes(':')) {
    // IPv6: let the URL parser canonicalise it (it rejects anything that is not an address).
    try {
      const u = new URL(`http://[${h}]/`);
      return u.hostname.slice(1, -1);
    } catch {
      return null;
    }
  }
  if (/^[0-9.]+$/.test(h)) {
    const parts = h.split('.');
    if (parts.length !== 4 || parts.some((p) => p === '' || Number(p) > 255 || (p.length > 1 && p.startsWith('0')))) return null;
    return h;
  }
  let ascii: string;
  try {
    // IDN to punycode, as the browser serialises hosts.
    ascii = new URL(`http://${h}/`).hostname;
  } catch {
    return null;
  }
  if (ascii.length > 253) return null;
  for (const label of ascii.split('.')) {
    if (label.length === 0 || label.length > 63 || !/^[a-z0-9_-]+$/.test(label) || label.startsWith('-') || label.endsWith('-')) return null;
  }
  return ascii;
}

export interface PacInput {
  /** The relay on loopback; null: no relay, everything DIRECT. */
  relay: { host: string; port: number } | null;
  /** Hosts decided multipath (ignored with `all`). */
  hosts: Iterable<string>;
  /** Every https origin through the relay ("always via proxy"). */
  all: boolean;
}

/** At most this many hosts in one script; beyond it the oldest decisions lose their route (DIRECT). */
export const MAX_PAC_HOSTS = 5_000;

/**
 * The PAC script for `input`, or null when nothing should go to the relay (the caller then clears the proxy
 * setting rather than installing a script that only says DIRECT).
 */
export function pacScript(input: PacInput): string | null {
  const relay = input.relay;
  if (relay === null) return null;
  if (!/^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost)$/.test(relay.host)) throw new RangeError(`relay host ${JSON.stringify(relay.host)} is not loopback`);
  if (!Number.isInteger(relay.port) || relay.port < 1 || relay.port > 65535) throw new RangeError(`relay port ${relay.port}`);
  const map: Record<string, 1> = Object.create(null) as Record<string, 1>;
  let n = 0;
  if (!input.all) {
    for (const raw of input.hosts) {
      const h = pacHost(raw);
      if (h === null || h in map) continue;
      if (++n > MAX_PAC_HOSTS) break;
      map[h] = 1;
    }
    if (n === 0) return null;
  }
  // Through the relay, and DIRECT if the relay itself cannot be reached (host gone); when the proxy behind it
  // fails, the relay resets the connection, which Chromium also answers by trying DIRECT.
  const route = `PROXY ${relay.host}:${relay.port}; DIRECT`;
  return [
    '// MPSurf: sites decided multipath go through the local relay to your MPTCP proxy; everything else DIRECT.',
    `var ROUTE = ${JSON.stringify(route)};`,
    `var ALL = ${input.all ? 'true' : 'false'};`,
    `var HOSTS = ${JSON.stringify(map)};`,
    'function FindProxyForURL(url, host) {',
    '  var m = /^(https|wss):\\/\\/(\\[[^\\]]*\\]|[^\\/:]*)(:(\\d+))?/.exec(url);',
    '  if (!m || (m[4] && m[4] !== "443")) return "DIRECT";',
    '  if (ALL) return ROUTE;',
    '  var h = String(host).toLowerCase();',
    '  if (h.charAt(h.length - 1) === ".") h = h.substring(0, h.length - 1);',
    '  return Object.prototype.hasOwnProperty.call(HOSTS, h) ? ROUTE : "DIRECT";',
    '}',
    '',
  ].join('\n');
}
