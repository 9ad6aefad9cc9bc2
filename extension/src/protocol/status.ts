// hello and status (PROTOCOL.md §4): the requests and the checks of their replies, with everything status reports
// (paths, RRC state, usage, the helper, the browser's MPTCP wrapping, the network's cost).

import { parsePolicy, type Policy } from './decide';
import { checkId, CLIENT_NAME, MAX_ID, PROTOCOL_VERSION, ProtocolError, type Request } from './envelope';
import { bool, int, num, object, oneOf, show, string, utf8Length } from './fields';

export interface HelloReply {
  host: string;
  version: string;
  protocol: number;
  policy: Policy;
}

export interface StatusReply {
  host: string;
  version: string;
  protocol: number;
  pid: number;
  uptime_ms: number;
  decisions: number;
  policy: Policy;
  paths?: PathInfo[];
  rrc?: RrcInfo;
  prefs?: Record<string, unknown>;
  store?: StoreInfo;
  usage?: UsageInfo;
  actuator?: ActuatorInfo;
  browser_mptcp?: BrowserMptcpInfo;
  browser_profile?: BrowserProfileInfo;
  /** How the host was installed: the mpsurf Debian package, or a source build (dist/mpsurf-host). */
  install?: InstallKind;
  network?: NetworkInfo;
  mptcp_endpoints?: EndpointsInfo;
}

/** What the OS says of the cellular link's cost (NetworkManager's Metered, ModemManager's registration). */
export interface NetworkInfo {
  metered: 'yes' | 'no' | 'guess_yes' | 'guess_no' | 'unknown';
  roaming: boolean | null;
  source: string;
  detail: string;
}

/** The kernel's MPTCP endpoints that would give connections subflows behind MPSurf's back (NetworkManager ≥ 1.40). */
export interface EndpointsInfo {
  path_manager: string;
  subflow_endpoints: string[];
  state: 'ok' | 'warn' | 'unknown';
  detail: string;
  fix: string | null;
}

/** Cellular data measured this billing cycle. */
export interface UsageInfo {
  interface: string;
  since_ms: number;
  used_bytes: number;
  quota_bytes: number | null;
  /** Since local midnight; absent from hosts that do not count it. */
  today_bytes?: number;
}

/** The privileged helper that carries decisions into the kernel. */
export interface ActuatorInfo {
  state: 'connected' | 'unavailable' | 'not_configured';
  backend?: string;
  detail: string;
}

/** Whether the browser runs under mptcpize, so that its sockets are MPTCP, and which way its pages reach a second
 * path: its own MPTCP sockets, the relay to a configured MPTCP proxy, or none (absent from older hosts). */
export interface BrowserMptcpInfo {
  wrapped: boolean;
  way?: 'mptcpize' | 'relay' | 'none';
  detail: string;
}

export type InstallKind = 'package' | 'source';
export const INSTALL_KINDS: readonly InstallKind[] = ['package', 'source'];

/** The browser's profile directory as the host saw it on its parent's command line; null: the default one. */
export interface BrowserProfileInfo {
  user_data_dir: string | null;
}

export interface PathInfo {
  name: string;
  kind: 'wifi' | 'cellular' | 'ethernet' | 'other';
  up: boolean;
  addrs: string[];
  rtt_ms: number | null;
  down_bps: number | null;
  up_bps: number | null;
  loss: number | null;
  rtt_source: 'passive' | 'probe' | null;
  /** How long ago down_bps was measured (absent: the host did not say); an old cellular rate counts less. */
  down_age_ms?: number;
  /** What a bulk flow held on the path under its losses (absent: no long lossy transfer in the last 10 minutes). */
  down_sustained_bps?: number;
}

export interface RrcInfo {
  interface: string;
  tech: 'lte' | '3g';
  state: string;
  since_ms: number;
  source: 'inferred' | 'modemmanager';
  /** While the host is unsure of the state: the states the radio may be in, with their probabilities. */
  spread?: { state: string; since_ms: number; p: number }[];
}

export interface StoreInfo {
  path: string;
  decisions: number;
  observations: number;
}

export function helloRequest(id: number, version: string): Request {
  checkId(id);
  if (utf8Length(version) > 32) throw new RangeError('hello: version longer than 32 bytes');
  return { v: 1, id, type: 'hello', body: { client: CLIENT_NAME, version, protocols: [PROTOCOL_VERSION] } };
}

export function statusRequest(id: number): Request {
  checkId(id);
  return { v: 1, id, type: 'status' };
}

export function parseHelloReply(body: unknown): HelloReply {
  const b = object(body, 'hello');
  const host = string(b.host, 'hello.host', 64);
  if (host !== 'mpsurf-host') throw new ProtocolError(`hello.host: expected "mpsurf-host", got ${show(host)}`);
  const protocol = int(b.protocol, 'hello.protocol', 0, MAX_ID);
  if (protocol !== PROTOCOL_VERSION) throw new ProtocolError(`hello.protocol: expected ${PROTOCOL_VERSION}, got ${protocol}`);
  return { host, version: string(b.version, 'hello.version', 64), protocol, policy: parsePolicy(b.policy, 'hello.policy') };
}

export function parseStatusReply(body: unknown): StatusReply {
  const b = object(body, 'status');
  const host = string(b.host, 'status.host', 64);
  if (host !== 'mpsurf-host') throw new ProtocolError(`status.host: expected "mpsurf-host", got ${show(host)}`);
  const protocol = int(b.protocol, 'status.protocol', 0, MAX_ID);
  if (protocol !== PROTOCOL_VERSION) throw new ProtocolError(`status.protocol: expected ${PROTOCOL_VERSION}, got ${protocol}`);
  return {
    host,
    version: string(b.version, 'status.version', 64),
    protocol,
    pid: int(b.pid, 'status.pid', 0, MAX_ID),
    uptime_ms: int(b.uptime_ms, 'status.uptime_ms', 0, Number.MAX_SAFE_INTEGER),
    decisions: int(b.decisions, 'status.decisions', 0, Number.MAX_SAFE_INTEGER),
    policy: parsePolicy(b.policy, 'status.policy'),
    ...(b.paths === undefined ? {} : { paths: parsePaths(b.paths) }),
    ...(b.rrc === undefined || b.rrc === null ? {} : { rrc: parseRrc(b.rrc) }),
    ...(b.prefs === undefined || b.prefs === null ? {} : { prefs: object(b.prefs, 'status.prefs') }),
    ...(b.store === undefined || b.store === null ? {} : { store: parseStore(b.store) }),
    ...(b.usage === undefined || b.usage === null ? {} : { usage: parseUsage(b.usage) }),
    ...(b.actuator === undefined || b.actuator === null ? {} : { actuator: parseActuator(b.actuator) }),
    ...(b.browser_mptcp === undefined || b.browser_mptcp === null ? {} : { browser_mptcp: parseBrowserMptcp(b.browser_mptcp) }),
    ...(b.browser_profile === undefined || b.browser_profile === null ? {} : { browser_profile: parseBrowserProfile(b.browser_profile) }),
    ...(b.install === undefined || b.install === null ? {} : { install: oneOf(b.install, 'status.install', INSTALL_KINDS) }),
    ...(b.network === undefined || b.network === null ? {} : { network: parseNetwork(b.network) }),
    ...(b.mptcp_endpoints === undefined || b.mptcp_endpoints === null ? {} : { mptcp_endpoints: parseEndpoints(b.mptcp_endpoints) }),
  };
}

function parseNetwork(v: unknown): NetworkInfo {
  const n = object(v, 'status.network');
  return {
    metered: oneOf(n.metered, 'status.network.metered', ['yes', 'no', 'guess_yes', 'guess_no', 'unknown'] as const),
    roaming: n.roaming === null || n.roaming === undefined ? null : bool(n.roaming, 'status.network.roaming'),
    source: string(n.source, 'status.network.source', 128),
    detail: string(n.detail, 'status.network.detail', 1024),
  };
}

function parseEndpoints(v: unknown): EndpointsInfo {
  const e = object(v, 'status.mptcp_endpoints');
  const list = e.subflow_endpoints ?? [];
  if (!Array.isArray(list)) throw new ProtocolError('status.mptcp_endpoints.subflow_endpoints: expected an array');
  return {
    path_manager: string(e.path_manager, 'status.mptcp_endpoints.path_manager', 32),
    subflow_endpoints: list.slice(0, 32).map((x: unknown, i: number) => string(x, `status.mptcp_endpoints.subflow_endpoints[${i}]`, 128)),
    state: oneOf(e.state, 'status.mptcp_endpoints.state', ['ok', 'warn', 'unknown'] as const),
    detail: string(e.detail, 'status.mptcp_endpoints.detail', 1024),
    fix: e.fix === null || e.fix === undefined ? null : string(e.fix, 'status.mptcp_endpoints.fix', 1024),
  };
}

function parseUsage(v: unknown): UsageInfo {
  const u = object(v, 'status.usage');
  return {
    interface: string(u.interface, 'status.usage.interface', 64),
    since_ms: int(u.since_ms, 'status.usage.since_ms', 0, Number.MAX_SAFE_INTEGER),
    used_bytes: int(u.used_bytes, 'status.usage.used_bytes', 0, Number.MAX_SAFE_INTEGER),
    quota_bytes: u.quota_bytes === null ? null : int(u.quota_bytes, 'status.usage.quota_bytes', 0, Number.MAX_SAFE_INTEGER),
    ...(u.today_bytes === undefined ? {} : { today_bytes: int(u.today_bytes, 'status.usage.today_bytes', 0, Number.MAX_SAFE_INTEGER) }),
  };
}

function parseActuator(v: unknown): ActuatorInfo {
  const a = object(v, 'status.actuator');
  return {
    state: oneOf(a.state, 'status.actuator.state', ['connected', 'unavailable', 'not_configured'] as const),
    ...(a.backend === undefined ? {} : { backend: string(a.backend, 'status.actuator.backend', 64) }),
    detail: string(a.detail, 'status.actuator.detail', 1024),
  };
}

function parseBrowserMptcp(v: unknown): BrowserMptcpInfo {
  const m = object(v, 'status.browser_mptcp');
  return {
    wrapped: bool(m.wrapped, 'status.browser_mptcp.wrapped'),
    ...(m.way === undefined ? {} : { way: oneOf(m.way, 'status.browser_mptcp.way', ['mptcpize', 'relay', 'none'] as const) }),
    detail: string(m.detail, 'status.browser_mptcp.detail', 1024),
  };
}

function parseBrowserProfile(v: unknown): BrowserProfileInfo {
  const p = object(v, 'status.browser_profile');
  return { user_data_dir: p.user_data_dir === null || p.user_data_dir === undefined ? null : string(p.user_data_dir, 'status.browser_profile.user_data_dir', 4096) };
}

const PATH_KINDS = ['wifi', 'cellular', 'ethernet', 'other'] as const;

/** A measurement's age beyond a year is absurd (the host's model refuses the same). */
const MAX_AGE_MS = 365 * 24 * 3600 * 1000;

function parsePaths(v: unknown): PathInfo[] {
  if (!Array.isArray(v)) throw new ProtocolError(`status.paths: expected an array, got ${show(v)}`);
  if (v.length > 64) throw new ProtocolError('status.paths: more than 64 paths');
  return v.map((x, i) => {
    const at = `status.paths[${i}]`;
    const p = object(x, at);
    const kind = oneOf(p.kind, `${at}.kind`, PATH_KINDS);
    if (!Array.isArray(p.addrs)) throw new ProtocolError(`${at}.addrs: expected an array`);
    const rttSource = p.rtt_source === null || p.rtt_source === undefined ? null : oneOf(p.rtt_source, `${at}.rtt_source`, ['passive', 'probe'] as const);
    return {
      name: string(p.name, `${at}.name`, 64),
      kind,
      up: bool(p.up, `${at}.up`),
      addrs: p.addrs.slice(0, 16).map((a: unknown, j: number) => string(a, `${at}.addrs[${j}]`, 64)),
      rtt_ms: num(p.rtt_ms, `${at}.rtt_ms`),
      down_bps: num(p.down_bps, `${at}.down_bps`),
      up_bps: num(p.up_bps, `${at}.up_bps`),
      loss: num(p.loss, `${at}.loss`),
      rtt_source: rttSource,
      ...(p.down_age_ms === undefined || p.down_age_ms === null ? {} : { down_age_ms: int(p.down_age_ms, `${at}.down_age_ms`, 0, MAX_AGE_MS) }),
      ...sustained(p.down_sustained_bps, `${at}.down_sustained_bps`),
    };
  });
}

function sustained(v: unknown, at: string): { down_sustained_bps?: number } {
  const bps = num(v, at);
  if (bps === null) return {};
  if (bps <= 0) throw new ProtocolError(`${at}: ${bps} is not a rate`);
  return { down_sustained_bps: bps };
}

function parseRrc(v: unknown): RrcInfo {
  const r = object(v, 'status.rrc');
  return {
    interface: string(r.interface, 'status.rrc.interface', 64),
    tech: oneOf(r.tech, 'status.rrc.tech', ['lte', '3g'] as const),
    state: string(r.state, 'status.rrc.state', 64),
    since_ms: int(r.since_ms, 'status.rrc.since_ms', 0, Number.MAX_SAFE_INTEGER),
    source: oneOf(r.source, 'status.rrc.source', ['inferred', 'modemmanager'] as const),
    ...(r.spread === undefined || r.spread === null ? {} : { spread: parseSpread(r.spread) }),
  };
}

function parseSpread(v: unknown): NonNullable<RrcInfo['spread']> {
  if (!Array.isArray(v)) throw new ProtocolError(`status.rrc.spread: expected an array, got ${show(v)}`);
  if (v.length > 32) throw new ProtocolError('status.rrc.spread: more than 32 states');
  return v.map((x, i) => {
    const at = `status.rrc.spread[${i}]`;
    const s = object(x, at);
    const p = num(s.p, `${at}.p`);
    if (p === null || p < 0 || p > 1) throw new ProtocolError(`${at}.p: expected a probability, got ${show(s.p)}`);
    return { state: string(s.state, `${at}.state`, 64), since_ms: int(s.since_ms, `${at}.since_ms`, 0, Number.MAX_SAFE_INTEGER), p };
  });
}

function parseStore(v: unknown): StoreInfo {
  const s = object(v, 'status.store');
  return {
    path: string(s.path, 'status.store.path', 4096),
    decisions: int(s.decisions, 'status.store.decisions', 0, Number.MAX_SAFE_INTEGER),
    observations: int(s.observations, 'status.store.observations', 0, Number.MAX_SAFE_INTEGER),
  };
}
