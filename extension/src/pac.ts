// The route of each request: https origins go to the host's relay (and on to the user's MPTCP proxy), except those
// known not to gain from multipath, which go DIRECT so that QUIC and plain TCP stay as they are for them (Chromium
// sends no QUIC through an HTTP proxy). The rule is one function, requestRoute: Chromium runs it as the PAC script's
// FindProxyForURL (pacScript embeds its source), Firefox in proxy.onRequest for every request (proxyInfoFor), so both
// browsers route the same. Plain logic, no browser calls: the vitest suite runs it with hostile host names.
//
// Only https (and wss) to port 443 goes to the relay: the proxy tunnels nothing else (packaging/proxy). Hosts are
// embedded as JSON object keys after a strict check (punycode DNS names, IPv4, IPv6), so no host string can end the
// string literal or add code to the script. Chromium hands FindProxyForURL the host without IPv6 brackets and with
// IDNs in punycode, and strips https URLs down to scheme, host and port; Firefox's request URLs are whole, their
// hosts in brackets and punycode.

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

/**
 * The route of one request: true through the relay, false DIRECT. `all` sends every https request to port 443 through
 * the relay; otherwise a host in `direct` (pacHost's form), or one the proxy cannot reach, goes DIRECT: a name
 * without a dot, the special-use local names (RFC 6761 localhost, RFC 6762 .local, RFC 8375 home.arpa, and .internal
 * and .lan, which home routers and companies resolve on their own networks), and loopback, private, link-local and
 * shared (CGNAT) addresses.
 *
 * Self-contained, in the JavaScript a PAC engine runs: pacScript embeds its source (Function.prototype.toString) as
 * the script's rule, since FindProxyForURL may call nothing of ours. It refers to nothing outside itself.
 */
export function requestRoute(url: string, host: string, all: boolean, direct: Readonly<Record<string, 1>>): boolean {
  function local(h: string): boolean {
    if (h.indexOf('.') < 0 && h.indexOf(':') < 0) return true;
    if (/(^|\.)(localhost|local|internal|home\.arpa|lan)$/.test(h)) return true;
    const v4 = /^(\d+)\.(\d+)\.\d+\.\d+$/.exec(h);
    if (v4) {
      const a = Number(v4[1]);
      const b = Number(v4[2]);
      return a === 10 || a === 127 || a === 0 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127);
    }
    return h === '::1' || /^(fc|fd|fe[89ab])[0-9a-f]{0,2}:/.test(h);
  }
  const m = /^(https|wss):\/\/(\[[^\]]*\]|[^/:]*)(:(\d+))?/.exec(url);
  if (!m || (m[4] && m[4] !== '443')) return false;
  if (all) return true;
  let h = String(host).toLowerCase();
  if (h.charAt(0) === '[') h = h.substring(1, h.length - 1);
  if (h.charAt(h.length - 1) === '.') h = h.substring(0, h.length - 1);
  return !(h === '' || local(h) || Object.prototype.hasOwnProperty.call(direct, h));
}

/** Whether the proxy cannot reach a host (in pacHost's form), by requestRoute's rule. */
export function localHost(h: string): boolean {
  const url = h.includes(':') ? `https://[${h}]/` : `https://${h}/`;
  return !requestRoute(url, h, false, {});
}

export interface PacInput {
  /** The relay on loopback; null: no relay, everything DIRECT. */
  relay: { host: string; port: number } | null;
  /**
   * Hosts known not to be worth multipath (decided single path with a known size below θ1, θ1 never: a site rule,
   * h3, the battery floor), oldest first: they connect DIRECT. Every other https host goes through the relay, which
   * decides for a host it knows nothing of with the model's priors. Ignored with `all`.
   */
  direct: Iterable<string>;
  /** Every https origin through the relay ("always via proxy"), local names and private addresses included. */
  all: boolean;
}

/** What requestRoute needs, checked and bounded: the relay on loopback, and the DIRECT hosts as a lookup table. */
export interface RouteTable {
  relay: { host: string; port: number };
  all: boolean;
  /** DIRECT hosts in pacHost's form; a null-prototype object, so no inherited name is a host. */
  direct: Readonly<Record<string, 1>>;
}

/** At most this many DIRECT hosts in one table; beyond it the oldest go through the relay like unknown ones. */
export const MAX_PAC_HOSTS = 5_000;

/**
 * The route table for `input`, or null when there is no relay (the caller then routes everything DIRECT: it clears
 * the proxy setting rather than installing a script that only says DIRECT).
 *
 * Every https host goes to the relay by default, because the first visit to a site is when the routes know least: a
 * script that routed only hosts decided multipath sent every first visit DIRECT, and HTTP/2 keeps the whole page on
 * that first connection (e2e/results/ARCHIVE-2026.md#proxy). The relay holds a host it knows nothing of on WiFi until θ1 bytes
 * have passed, so a small page costs no cellular bytes, only the proxy's round trips; hosts decided not worth
 * multipath skip even those.
 */
export function routeTable(input: PacInput): RouteTable | null {
  const relay = input.relay;
  if (relay === null) return null;
  if (!/^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost)$/.test(relay.host)) throw new RangeError(`relay host ${JSON.stringify(relay.host)} is not loopback`);
  if (!Number.isInteger(relay.port) || relay.port < 1 || relay.port > 65535) throw new RangeError(`relay port ${relay.port}`);
  const seen = new Set<string>();
  if (!input.all) {
    for (const raw of input.direct) {
      const h = pacHost(raw);
      if (h === null) continue;
      seen.delete(h); // a host listed again is newer
      seen.add(h);
    }
  }
  const hosts = [...seen];
  // The newest decisions win the bound: they are the sites the user visits now.
  const direct: Record<string, 1> = Object.create(null) as Record<string, 1>;
  for (const h of hosts.slice(Math.max(0, hosts.length - MAX_PAC_HOSTS))) direct[h] = 1;
  return { relay: { host: relay.host, port: relay.port }, all: input.all, direct };
}

/** The PAC script for `input` (Chromium), or null when there is no relay. */
export function pacScript(input: PacInput): string | null {
  const t = routeTable(input);
  return t && scriptOf(t);
}

/** The PAC script that routes as `t` says: requestRoute's own source, with the table as data. */
export function scriptOf(t: RouteTable): string {
  // Through the relay, and DIRECT if the relay itself cannot be reached (host gone); when the proxy behind it
  // fails, the relay resets the connection, which Chromium also answers by trying DIRECT.
  const route = `PROXY ${t.relay.host}:${t.relay.port}; DIRECT`;
  return [
    '// MPSurf: https sites go through the local relay to your MPTCP proxy, except those known not to gain from',
    '// multipath and names the proxy cannot reach (local names, private addresses); everything else DIRECT.',
    `var ROUTE = ${JSON.stringify(route)};`,
    `var ALL = ${t.all ? 'true' : 'false'};`,
    `var DIRECT_HOSTS = ${JSON.stringify(t.direct)};`,
    `var requestRoute = ${requestRoute.toString()};`,
    'function FindProxyForURL(url, host) {',
    '  return requestRoute(url, host, ALL, DIRECT_HOSTS) ? ROUTE : "DIRECT";',
    '}',
    '',
  ].join('\n');
}

/** Firefox's proxy.ProxyInfo, the fields MPSurf sets. */
export type ProxyInfo = { type: 'direct' } | { type: 'http'; host: string; port: number; failoverTimeout: number };

/**
 * Seconds Firefox leaves the relay out after it could not be reached (its default is half an hour): the host restarts
 * its relay within seconds of a reconnect, and until then requests fall through to DIRECT.
 */
export const RELAY_FAILOVER_S = 5;

/**
 * Firefox's answer for one request (proxy.onRequest): the relay, then DIRECT if the relay cannot be reached, as the
 * PAC's "PROXY relay; DIRECT"; or DIRECT alone, by requestRoute's rule, or when there is no table.
 */
export function proxyInfoFor(url: string, t: RouteTable | null): ProxyInfo[] {
  if (t === null) return [{ type: 'direct' }];
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return [{ type: 'direct' }];
  }
  if (!requestRoute(url, host, t.all, t.direct)) return [{ type: 'direct' }];
  return [{ type: 'http', host: t.relay.host, port: t.relay.port, failoverTimeout: RELAY_FAILOVER_S }, { type: 'direct' }];
}
