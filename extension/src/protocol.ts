// The extension's half of native-host/PROTOCOL.md: message types, the error codes of §6, request builders, and
// validators for everything the host sends. Host data is checked here, field by field, before any other module
// sees it. Nothing in this file touches the browser, so the vitest suite runs it against the shared vectors.

export const PROTOCOL_VERSION = 1;
export const HOST_NAME = 'org.mpsurf.host';
export const CLIENT_NAME = 'mpsurf-extension';

/** Host → browser frames: Chrome closes the port on anything larger (PROTOCOL.md §1). */
export const MAX_HOST_FRAME = 1_048_576;
/** Browser → host frames: the host's own input cap (PROTOCOL.md §1). */
export const MAX_REQUEST_FRAME = 65_536;

const MAX_ID = 2 ** 31 - 1;
const MAX_ORIGIN_BYTES = 2048;
const MAX_NAV_CHARS = 128;
const MAX_REASON_BYTES = 256;
/** PROTOCOL.md sets no bound on a model id; this cap only stops a broken host from filling the UI. */
const MAX_MODEL_ID_BYTES = 256;

/** PROTOCOL.md §6. Append-only, like the table it mirrors. */
export const ErrorCode = {
  Internal: 1,
  BadFrame: 2,
  FrameTooLarge: 3,
  BadJSON: 4,
  BadUTF8: 5,
  UnsupportedVersion: 6,
  UnknownType: 7,
  BadRequest: 8,
  BadOrigin: 9,
  PolicyUnavailable: 10,
  StoreUnavailable: 11,
  RateLimited: 12,
} as const;
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The wire name of each code in §6. */
export const ERROR_NAMES: Readonly<Record<ErrorCodeValue, string>> = {
  1: 'internal',
  2: 'bad_frame',
  3: 'frame_too_large',
  4: 'bad_json',
  5: 'bad_utf8',
  6: 'unsupported_version',
  7: 'unknown_type',
  8: 'bad_request',
  9: 'bad_origin',
  10: 'policy_unavailable',
  11: 'store_unavailable',
  12: 'rate_limited',
};

export function isKnownErrorCode(code: number): code is ErrorCodeValue {
  return Object.prototype.hasOwnProperty.call(ERROR_NAMES, code);
}

// ---------------------------------------------------------------------------------------------------------------
// Types (PROTOCOL.md §3, §4)

export interface ModelRef {
  id: string;
  version: number;
}

export interface Policy {
  revision: number;
  multipath: boolean;
  /** Bytes a connection must receive before its cellular subflow opens; null: never (PROTOCOL.md §3). */
  theta1: number | null;
  theta2: number | null;
  deadline_ms: number;
  reason: string;
  model: ModelRef;
}

export type InputValue = number | string | boolean | null;

export interface Decision {
  /** Whether this page is expected to go multipath (θ1 is 0, or the page's known size lies above θ1). */
  multipath: boolean;
  /** Bytes a connection must receive before its cellular subflow opens, enforced at run time; null: never. */
  theta1: number | null;
  theta2: number | null;
  deadline_ms: number;
  reason: string;
  model: ModelRef;
  origin: string;
  tab: number;
  nav: string;
  inputs: Record<string, InputValue>;
  /** The model's explanation, when the host gives one (PROTOCOL.md §3, optional). */
  terms?: Term[];
  size?: SizePrediction;
  protocol?: string;
  /** What the paths' numbers came from (PROTOCOL.md §3): the model on measured links, priors, or a rule. */
  basis?: Basis;
}

export type Basis = 'measured' | 'prior' | 'rule';

export interface Term {
  name: string;
  value: number | null;
  unit: string;
  note: string;
}

export interface SizePrediction {
  known: boolean;
  median: number | null;
  p90: number | null;
  samples: number;
  source: string;
}

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

/** A finished main-frame load (PROTOCOL.md §4 Report). */
export interface Report {
  origin: string;
  tab: number;
  nav: string;
  protocol: string;
  transfer_bytes: number;
  plt_ms: number;
  multipath: boolean | null;
  /** The page's URL path (never its query or fragment), so the host learns sizes per page, not per site. */
  path?: string;
  /** Objects the page loaded and new connections it opened to its own origin (Resource Timing). */
  objects?: number;
  conns?: number;
}

export interface LogChunk {
  format: string;
  data: string;
  rows: number;
  cursor: string | null;
}

export type RequestType =
  | 'hello'
  | 'decide'
  | 'status'
  | 'announce'
  | 'report'
  | 'prefs'
  | 'log_export'
  | 'log_delete'
  | 'peers'
  | 'proxy_status'
  | 'proxy_config'
  | 'proxy_test'
  | 'pause'
  | DownloadRequestType;

/** A host a page's requests reached and the address the browser used for it (PROTOCOL.md §4 Peers). */
export interface Peer {
  host: string;
  ip: string;
}

/** At most this many peers per `peers` request (PROTOCOL.md §4). */
export const MAX_PEERS = 64;

export interface Request {
  v: 1;
  id: number;
  type: RequestType;
  body?: Record<string, unknown>;
}

export interface DecideArgs {
  origin: string;
  tab: number;
  nav: string;
  /** The navigation's URL path, without query or fragment (PROTOCOL.md §4 decide). */
  path?: string;
}

/** Longest URL path sent in decide and report (PROTOCOL.md §4). */
export const MAX_PATH_BYTES = 2048;

/** The path of a URL as decide and report carry it: never the query or fragment. */
export function urlPath(url: string): string | undefined {
  try {
    const p = new URL(url).pathname;
    return p.startsWith('/') && utf8Length(p) <= MAX_PATH_BYTES ? p : undefined;
  } catch {
    return undefined;
  }
}

function checkPath(path: string | undefined, what: string): void {
  if (path === undefined) return;
  if (typeof path !== 'string' || !path.startsWith('/') || /[?#]/.test(path) || utf8Length(path) > MAX_PATH_BYTES) {
    throw new RangeError(`${what}: path must start with / and have no query or fragment, at most ${MAX_PATH_BYTES} bytes`);
  }
}

export interface WireError {
  code: number;
  name: string;
  message: string;
}

/** What a host message turned out to be after envelope validation. Bodies are still unchecked here. */
export type Incoming =
  | { kind: 'reply'; id: number; type: string; body: Record<string, unknown> }
  | { kind: 'error'; id: number; type: string; error: WireError }
  | { kind: 'push'; type: string; body: unknown };

/** Host data that broke the protocol; the message names the field. */
export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

// ---------------------------------------------------------------------------------------------------------------
// Request builders. Key order matches vectors/frames.json byte for byte.

export function helloRequest(id: number, version: string): Request {
  checkId(id);
  if (utf8Length(version) > 32) throw new RangeError('hello: version longer than 32 bytes');
  return { v: 1, id, type: 'hello', body: { client: CLIENT_NAME, version, protocols: [PROTOCOL_VERSION] } };
}

export function decideRequest(id: number, args: DecideArgs): Request {
  checkId(id);
  const { origin, tab, nav } = args;
  if (typeof origin !== 'string' || origin.length === 0 || utf8Length(origin) > MAX_ORIGIN_BYTES) {
    throw new RangeError(`decide: origin must be 1 … ${MAX_ORIGIN_BYTES} bytes`);
  }
  if (!Number.isInteger(tab) || tab < -1 || tab > MAX_ID) throw new RangeError(`decide: tab ${tab} is not an integer ≥ -1`);
  if (typeof nav !== 'string' || nav.length < 1 || nav.length > MAX_NAV_CHARS) {
    throw new RangeError(`decide: nav must be 1 … ${MAX_NAV_CHARS} characters`);
  }
  checkPath(args.path, 'decide');
  return { v: 1, id, type: 'decide', body: args.path === undefined ? { origin, tab, nav } : { origin, tab, nav, path: args.path } };
}

export function statusRequest(id: number): Request {
  checkId(id);
  return { v: 1, id, type: 'status' };
}

export function reportRequest(id: number, r: Report): Request {
  checkId(id);
  decideRequest(id, { origin: r.origin, tab: r.tab, nav: r.nav });
  if (typeof r.protocol !== 'string' || utf8Length(r.protocol) > 16) throw new RangeError('report: protocol longer than 16 bytes');
  if (!Number.isSafeInteger(r.transfer_bytes) || r.transfer_bytes < 0 || r.transfer_bytes > 2 ** 40) {
    throw new RangeError(`report: transfer_bytes ${r.transfer_bytes} is outside 0 … 2^40`);
  }
  if (!Number.isFinite(r.plt_ms) || r.plt_ms < 0 || r.plt_ms > 600_000) throw new RangeError(`report: plt_ms ${r.plt_ms} is outside 0 … 600000`);
  if (r.multipath !== null && typeof r.multipath !== 'boolean') throw new RangeError('report: multipath must be a boolean or null');
  checkPath(r.path, 'report');
  for (const k of ['objects', 'conns'] as const) {
    const v = r[k];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0 || v > 100_000)) throw new RangeError(`report: ${k} ${v} is outside 0 … 100000`);
  }
  const { origin, tab, nav, protocol, transfer_bytes, plt_ms, multipath } = r;
  const body: Record<string, unknown> = { origin, tab, nav, protocol, transfer_bytes, plt_ms, multipath };
  if (r.path !== undefined) body.path = r.path;
  if (r.objects !== undefined) body.objects = r.objects;
  if (r.conns !== undefined) body.conns = r.conns;
  return { v: 1, id, type: 'report', body };
}

/** `prefs` must already be normalised (prefs.ts); the builder only wraps it. */
export function prefsRequest(id: number, prefs: object): Request {
  checkId(id);
  return { v: 1, id, type: 'prefs', body: { ...prefs } };
}

export function logExportRequest(id: number, format: 'csv' | 'jsonl', cursor: string | null, sinceMs?: number): Request {
  checkId(id);
  const body: Record<string, unknown> = { format };
  if (sinceMs !== undefined) body.since_ms = sinceMs;
  if (cursor !== null) body.cursor = cursor;
  return { v: 1, id, type: 'log_export', body };
}

export function peersRequest(id: number, origin: string, tab: number, peers: Peer[]): Request {
  checkId(id);
  decideRequest(id, { origin, tab, nav: 'peers' });
  if (!Array.isArray(peers) || peers.length < 1 || peers.length > MAX_PEERS) throw new RangeError(`peers: must list 1 … ${MAX_PEERS}`);
  for (const p of peers) {
    if (typeof p.host !== 'string' || p.host.length === 0 || utf8Length(p.host) > 255) throw new RangeError('peers: host must be 1 … 255 bytes');
    if (typeof p.ip !== 'string' || !/^\[?[0-9A-Fa-f:.]{2,45}\]?$/.test(p.ip)) throw new RangeError(`peers: ${p.ip} is not an IP address`);
  }
  return { v: 1, id, type: 'peers', body: { origin, tab, peers: peers.map(({ host, ip }) => ({ host, ip })) } };
}

/** The largest announced byte count a request may carry (PROTOCOL.md §4 Announce): 2^40, as transfer_bytes. */
export const MAX_ANNOUNCED = 2 ** 40;

/** Announce: the page's responses have announced (Content-Length) at least `bytes` bytes (PROTOCOL.md §4 Announce). */
export function announceRequest(id: number, origin: string, tab: number, nav: string, bytes: number): Request {
  checkId(id);
  decideRequest(id, { origin, tab, nav });
  if (!Number.isSafeInteger(bytes) || bytes < 0 || bytes > MAX_ANNOUNCED) throw new RangeError(`announce: bytes ${bytes} is outside 0 … 2^40`);
  return { v: 1, id, type: 'announce', body: { origin, tab, nav, bytes } };
}

// ---------------------------------------------------------------------------------------------------------------
// The MPTCP proxy (PROTOCOL.md §4 Proxy) and pause

export type ProxyState = 'unconfigured' | 'unknown' | 'up' | 'down' | 'error';

export interface ProxyUsage {
  host: string;
  cell_bytes: number;
  other_bytes: number;
  tunnels: number;
}

/** The host's relay and what it knows of the user's proxy. */
export interface ProxyStatus {
  configured: boolean;
  server: string | null;
  user: string | null;
  pin: string | null;
  file: string;
  state: ProxyState;
  detail: string;
  since_ms: number;
  software: string | null;
  relay: { host: string; port: number; user: string; password: string } | null;
  stats: { tunnels_open: number; tunnels: number; failures: number; tunnels_direct: number };
  usage: ProxyUsage[];
  /** Hosts whose latest decision is multipath. */
  routes: string[];
  /** Hosts whose latest decision says multipath would not pay (PROTOCOL.md ProxyStatus): the PAC sends them DIRECT. */
  direct: string[];
  /** Hosts the proxy could not reach (PROTOCOL.md ProxyStatus): DIRECT whatever their decisions say. */
  unreachable: string[];
}

export interface ProxyTestResult {
  ok: boolean;
  stage: string;
  detail: string;
  software: string | null;
  mptcp: boolean;
  subflows: number;
  cell_subflow: boolean;
  helper: string;
  status: number;
  elapsed_ms: number;
}

export interface ProxySettings {
  server: string;
  user: string;
  password: string;
  pin: string;
}

export type PauseWhy = 'user' | 'consent' | 'cap_daily' | 'cap_monthly' | 'roaming' | 'none';
export const PAUSE_REASONS: readonly PauseWhy[] = ['user', 'consent', 'cap_daily', 'cap_monthly', 'roaming', 'none'];

export function proxyStatusRequest(id: number): Request {
  checkId(id);
  return { v: 1, id, type: 'proxy_status' };
}

/** New proxy settings (the host checks and stores them, password included, in its 0600 file), or clear: true. */
export function proxyConfigRequest(id: number, s: ProxySettings | { clear: true }): Request {
  checkId(id);
  if ('clear' in s) return { v: 1, id, type: 'proxy_config', body: { clear: true } };
  for (const [k, v, max] of [['server', s.server, 300], ['user', s.user, 64], ['password', s.password, 256], ['pin', s.pin, 64]] as const) {
    if (typeof v !== 'string' || utf8Length(v) > max) throw new RangeError(`proxy ${k}: at most ${max} bytes`);
  }
  const body: Record<string, unknown> = { server: s.server.trim(), user: s.user.trim(), password: s.password };
  if (s.pin.trim() !== '') body.pin = s.pin.trim();
  return { v: 1, id, type: 'proxy_config', body };
}

export function proxyTestRequest(id: number, target?: string): Request {
  checkId(id);
  return target === undefined ? { v: 1, id, type: 'proxy_test' } : { v: 1, id, type: 'proxy_test', body: { target } };
}

export function pauseRequest(id: number, paused: boolean, why: PauseWhy): Request {
  checkId(id);
  if (!PAUSE_REASONS.includes(why) || paused === (why === 'none')) throw new RangeError(`pause: ${why} does not go with paused ${paused}`);
  return { v: 1, id, type: 'pause', body: { paused, why } };
}

const PROXY_STATES = ['unconfigured', 'unknown', 'up', 'down', 'error'] as const;

export function parseProxyStatus(body: unknown): ProxyStatus {
  const b = object(body, 'proxy');
  const opt = (v: unknown, at: string, max: number): string | null => (v === undefined || v === null || v === '' ? null : string(v, at, max));
  const relay = b.relay === null || b.relay === undefined ? null : object(b.relay, 'proxy.relay');
  const stats = object(b.stats ?? {}, 'proxy.stats');
  const count = (v: unknown, at: string): number => (v === undefined ? 0 : int(v, at, 0, Number.MAX_SAFE_INTEGER));
  if (!Array.isArray(b.usage ?? [])) throw new ProtocolError('proxy.usage: expected an array');
  if (!Array.isArray(b.routes ?? [])) throw new ProtocolError('proxy.routes: expected an array');
  if (!Array.isArray(b.direct ?? [])) throw new ProtocolError('proxy.direct: expected an array');
  if (!Array.isArray(b.unreachable ?? [])) throw new ProtocolError('proxy.unreachable: expected an array');
  return {
    configured: bool(b.configured, 'proxy.configured'),
    server: opt(b.server, 'proxy.server', 300),
    user: opt(b.user, 'proxy.user', 64),
    pin: opt(b.pin, 'proxy.pin', 64),
    file: string(b.file, 'proxy.file', 4096),
    state: oneOf(b.state, 'proxy.state', PROXY_STATES),
    detail: string(b.detail, 'proxy.detail', 1024),
    since_ms: int(b.since_ms ?? 0, 'proxy.since_ms', 0, Number.MAX_SAFE_INTEGER),
    software: opt(b.software, 'proxy.software', 128),
    relay:
      relay === null
        ? null
        : {
            host: string(relay.host, 'proxy.relay.host', 64),
            port: int(relay.port, 'proxy.relay.port', 1, 65535),
            user: string(relay.user, 'proxy.relay.user', 64),
            password: string(relay.password, 'proxy.relay.password', 128),
          },
    stats: {
      tunnels_open: count(stats.tunnels_open, 'proxy.stats.tunnels_open'),
      tunnels: count(stats.tunnels, 'proxy.stats.tunnels'),
      failures: count(stats.failures, 'proxy.stats.failures'),
      tunnels_direct: stats.tunnels_direct === undefined ? 0 : count(stats.tunnels_direct, 'proxy.stats.tunnels_direct'),
    },
    usage: ((b.usage ?? []) as unknown[]).slice(0, 100).map((x, i) => {
      const u = object(x, `proxy.usage[${i}]`);
      return {
        host: string(u.host, `proxy.usage[${i}].host`, 255),
        cell_bytes: count(u.cell_bytes, `proxy.usage[${i}].cell_bytes`),
        other_bytes: count(u.other_bytes, `proxy.usage[${i}].other_bytes`),
        tunnels: count(u.tunnels, `proxy.usage[${i}].tunnels`),
      };
    }),
    routes: ((b.routes ?? []) as unknown[]).slice(0, 5_000).map((h, i) => string(h, `proxy.routes[${i}]`, 255)),
    direct: ((b.direct ?? []) as unknown[]).slice(0, 5_000).map((h, i) => string(h, `proxy.direct[${i}]`, 255)),
    unreachable: ((b.unreachable ?? []) as unknown[]).slice(0, 5_000).map((h, i) => string(h, `proxy.unreachable[${i}]`, 255)),
  };
}

export function parseProxyTest(body: unknown): ProxyTestResult {
  const b = object(body, 'proxy_test');
  return {
    ok: bool(b.ok ?? false, 'proxy_test.ok'),
    stage: string(b.stage, 'proxy_test.stage', 32),
    detail: string(b.detail, 'proxy_test.detail', 1024),
    software: b.software === undefined || b.software === '' ? null : string(b.software, 'proxy_test.software', 128),
    mptcp: bool(b.mptcp ?? false, 'proxy_test.mptcp'),
    subflows: int(b.subflows ?? 0, 'proxy_test.subflows', 0, 64),
    cell_subflow: bool(b.cell_subflow ?? false, 'proxy_test.cell_subflow'),
    helper: string(b.helper ?? '', 'proxy_test.helper', 256),
    status: int(b.status ?? 0, 'proxy_test.status', 0, 999),
    elapsed_ms: int(b.elapsed_ms ?? 0, 'proxy_test.elapsed_ms', 0, Number.MAX_SAFE_INTEGER),
  };
}

export function parsePauseReply(body: unknown): { paused: boolean; why: PauseWhy } {
  const b = object(body, 'pause');
  return { paused: bool(b.paused, 'pause.paused'), why: oneOf(b.why, 'pause.why', PAUSE_REASONS) };
}

export function logDeleteRequest(id: number): Request {
  checkId(id);
  return { v: 1, id, type: 'log_delete' };
}

function checkId(id: number): void {
  if (!Number.isInteger(id) || id < 1 || id > MAX_ID) throw new RangeError(`request id ${id} is outside 1 … 2^31-1`);
}

/** The next request id after `id`, wrapping inside 1 … 2^31-1. */
export function nextId(id: number): number {
  return id >= MAX_ID ? 1 : id + 1;
}

// ---------------------------------------------------------------------------------------------------------------
// Envelope validation

/** Classifies one message from the host, or throws ProtocolError. */
export function parseIncoming(msg: unknown): Incoming {
  const m = object(msg, 'message');
  if (m.v !== PROTOCOL_VERSION) throw new ProtocolError(`v: expected ${PROTOCOL_VERSION}, got ${show(m.v)}`);
  const type = string(m.type, 'type', 64);
  if (m.push === true) {
    if ('id' in m) throw new ProtocolError('push: carries an id');
    return { kind: 'push', type, body: m.body };
  }
  if ('push' in m) throw new ProtocolError(`push: expected true or absent, got ${show(m.push)}`);
  const id = int(m.id, 'id', 0, MAX_ID);
  if (m.ok === true) {
    return { kind: 'reply', id, type, body: object(m.body, 'body') };
  }
  if (m.ok === false) {
    const e = object(m.error, 'error');
    const code = int(e.code, 'error.code', 1, MAX_ID);
    const name = string(e.name, 'error.name', 64);
    const message = e.message === undefined ? '' : string(e.message, 'error.message', 4096);
    return { kind: 'error', id, type, error: { code, name, message } };
  }
  throw new ProtocolError(`ok: expected a boolean, got ${show(m.ok)}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Body validation

export function parsePolicy(body: unknown, path = 'policy'): Policy {
  const b = object(body, path);
  return {
    revision: int(b.revision, `${path}.revision`, 1, Number.MAX_SAFE_INTEGER),
    ...parsePolicyFields(b, path),
  };
}

function parsePolicyFields(b: Record<string, unknown>, path: string): Omit<Policy, 'revision'> {
  const m = object(b.model, `${path}.model`);
  return {
    multipath: bool(b.multipath, `${path}.multipath`),
    theta1: b.theta1 === null ? null : int(b.theta1, `${path}.theta1`, 0, Number.MAX_SAFE_INTEGER),
    theta2: b.theta2 === null ? null : int(b.theta2, `${path}.theta2`, 0, Number.MAX_SAFE_INTEGER),
    deadline_ms: int(b.deadline_ms, `${path}.deadline_ms`, 100, 60_000),
    reason: string(b.reason, `${path}.reason`, MAX_REASON_BYTES),
    model: {
      id: string(m.id, `${path}.model.id`, MAX_MODEL_ID_BYTES),
      version: int(m.version, `${path}.model.version`, 0, Number.MAX_SAFE_INTEGER),
    },
  };
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
    };
  });
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

export function parseLogChunk(body: unknown): LogChunk {
  const b = object(body, 'log_export');
  return {
    format: string(b.format, 'log_export.format', 16),
    data: string(b.data, 'log_export.data', 512 * 1024),
    rows: int(b.rows, 'log_export.rows', 0, Number.MAX_SAFE_INTEGER),
    cursor: b.cursor === null || b.cursor === undefined ? null : string(b.cursor, 'log_export.cursor', 1024),
  };
}

export function parsePrefsReply(body: unknown): Record<string, unknown> {
  const b = object(body, 'prefs');
  if (b.applied !== true) throw new ProtocolError(`prefs.applied: expected true, got ${show(b.applied)}`);
  return object(b.prefs, 'prefs.prefs');
}

export function parseReportReply(body: unknown): { stored: boolean; samples: number } {
  const b = object(body, 'report');
  return { stored: bool(b.stored, 'report.stored'), samples: int(b.samples, 'report.samples', 0, Number.MAX_SAFE_INTEGER) };
}

/** A reported peer the host did not put under the page's decision, and why (PROTOCOL.md §4 Peers). */
export interface PeerRefusal {
  host: string;
  ip: string;
  why: string;
}

export function parsePeersReply(body: unknown): { addrs: number; refused: PeerRefusal[]; actuation: string } {
  const b = object(body, 'peers');
  const refused: PeerRefusal[] = [];
  if (b.refused !== undefined) {
    if (!Array.isArray(b.refused) || b.refused.length > MAX_PEERS) throw new ProtocolError(`peers.refused: an array of at most ${MAX_PEERS}`);
    b.refused.forEach((r: unknown, i: number) => {
      const o = object(r, `peers.refused[${i}]`);
      refused.push({ host: string(o.host, `peers.refused[${i}].host`, 255), ip: string(o.ip, `peers.refused[${i}].ip`, 64), why: string(o.why, `peers.refused[${i}].why`, 512) });
    });
  }
  return { addrs: int(b.addrs, 'peers.addrs', 0, MAX_PEERS), refused, actuation: string(b.actuation, 'peers.actuation', 256) };
}

export interface AnnounceReply {
  joined: boolean;
  why: string;
  actuation: string;
  /** Tunnels through the user's MPTCP proxy told to join now. */
  tunnels: number;
}

export function parseAnnounceReply(body: unknown): AnnounceReply {
  const b = object(body, 'announce');
  const why = b.why === undefined ? '' : string(b.why, 'announce.why', 512);
  const tunnels = b.tunnels === undefined ? 0 : int(b.tunnels, 'announce.tunnels', 0, 64);
  return { joined: bool(b.joined, 'announce.joined'), why, actuation: string(b.actuation, 'announce.actuation', 256), tunnels };
}

// ---------------------------------------------------------------------------------------------------------------
// Downloads (PROTOCOL.md §4 Downloads)

export type DownloadRequestType = 'download_offer' | 'download_control' | 'download_list';

/** The request headers a download may carry to the host, for that download only. */
export interface DownloadHeaders {
  cookie?: string;
  authorization?: string;
  referer?: string;
  'user-agent'?: string;
}

export interface DownloadOffer {
  id: string;
  url: string;
  origin: string;
  size: number;
  file: string;
  protocol?: 'h2' | 'http/1.1' | '';
  resume?: boolean;
  headers?: DownloadHeaders;
}

export const DOWNLOAD_STATES = ['declined', 'starting', 'running', 'paused', 'done', 'failed', 'canceled'] as const;
export type DownloadStateName = (typeof DOWNLOAD_STATES)[number];

export interface DownloadState {
  id: string;
  state: DownloadStateName;
  url: string;
  file: string;
  size: number;
  received: number;
  paths: { name: string; kind: string; bytes: number }[];
  multipath: boolean;
  reason: string;
  digest?: string;
  elapsed_ms: number;
}

const DOWNLOAD_HEADER_LIMITS: Record<keyof DownloadHeaders, number> = { cookie: 16_384, authorization: 8_192, referer: 8_192, 'user-agent': 512 };

/** Why the host would refuse this offer (the limits of PROTOCOL.md §4 Downloads), or null: checked before sending. */
export function offerProblem(o: DownloadOffer): string | null {
  if (typeof o.id !== 'string' || o.id.length < 1 || utf8Length(o.id) > 64) return 'id: 1 … 64 bytes';
  let u: URL;
  try {
    u = new URL(o.url);
  } catch {
    return 'url: not a URL';
  }
  if (u.protocol !== 'https:' || u.username !== '' || u.password !== '' || utf8Length(o.url) > 8_192) return 'url: not an https URL without credentials';
  const origin = normaliseOrigin(o.origin);
  if (origin === null) return 'origin: not an http(s) origin';
  if (origin !== u.origin) return 'origin: not the URL\'s origin';
  if (!Number.isSafeInteger(o.size) || o.size < 1 || o.size > 2 ** 50) return 'size: 1 … 2^50';
  if (typeof o.file !== 'string' || !o.file.startsWith('/') || utf8Length(o.file) > 4_096 || /(^|\/)\.\.?(\/|$)|\/\/|\0/.test(o.file) || (o.file.length > 1 && o.file.endsWith('/'))) {
    return 'file: not a clean absolute path';
  }
  if (o.protocol !== undefined && !['h2', 'http/1.1', ''].includes(o.protocol)) return 'protocol: h2, http/1.1 or ""';
  for (const [k, v] of Object.entries(o.headers ?? {})) {
    const lim = DOWNLOAD_HEADER_LIMITS[k as keyof DownloadHeaders];
    if (lim === undefined) return `headers.${k}: not one of cookie, authorization, referer, user-agent`;
    if (typeof v !== 'string' || utf8Length(v) > lim) return `headers.${k}: at most ${lim} bytes`;
    if (/[\r\n\0]/.test(v)) return `headers.${k}: control characters`;
  }
  return null;
}

export function downloadOfferRequest(id: number, o: DownloadOffer): Request {
  checkId(id);
  const why = offerProblem(o);
  if (why !== null) throw new RangeError(why);
  return { v: 1, id, type: 'download_offer', body: { ...o } };
}

export function downloadControlRequest(id: number, download: string, action: 'pause' | 'resume' | 'cancel'): Request {
  checkId(id);
  return { v: 1, id, type: 'download_control', body: { id: download, action } };
}

export function downloadDiscardRequest(id: number, file: string): Request {
  checkId(id);
  return { v: 1, id, type: 'download_control', body: { action: 'discard', file } };
}

export function downloadListRequest(id: number): Request {
  checkId(id);
  return { v: 1, id, type: 'download_list' };
}

export function parseDownloadState(body: unknown): DownloadState {
  const b = object(body, 'download');
  const size = int(b.size, 'download.size', 0, 2 ** 50);
  const paths = b.paths ?? [];
  if (!Array.isArray(paths) || paths.length > 8) throw new ProtocolError('download.paths: expected an array of at most 8');
  const st: DownloadState = {
    id: string(b.id, 'download.id', 64),
    state: oneOf(b.state, 'download.state', DOWNLOAD_STATES),
    url: string(b.url, 'download.url', 8_192),
    file: string(b.file, 'download.file', 4_096),
    size,
    received: int(b.received, 'download.received', 0, size),
    paths: paths.map((x, i) => {
      const p = object(x, `download.paths[${i}]`);
      return { name: string(p.name, `download.paths[${i}].name`, 64), kind: string(p.kind ?? '', `download.paths[${i}].kind`, 16), bytes: int(p.bytes, `download.paths[${i}].bytes`, 0, 2 ** 50) };
    }),
    multipath: bool(b.multipath, 'download.multipath'),
    reason: string(b.reason ?? '', 'download.reason', MAX_REASON_BYTES),
    elapsed_ms: int(b.elapsed_ms ?? 0, 'download.elapsed_ms', 0, Number.MAX_SAFE_INTEGER),
  };
  if (b.digest !== undefined && b.digest !== null) st.digest = string(b.digest, 'download.digest', 64);
  return st;
}

export function parseDownloadList(body: unknown): DownloadState[] {
  const b = object(body, 'download_list');
  if (!Array.isArray(b.downloads) || b.downloads.length > 1_000) throw new ProtocolError('download_list.downloads: expected an array');
  return b.downloads.map(parseDownloadState);
}

function parseTerms(v: unknown): Term[] {
  if (!Array.isArray(v)) throw new ProtocolError(`decision.terms: expected an array, got ${show(v)}`);
  if (v.length > 64) throw new ProtocolError('decision.terms: more than 64 terms');
  return v.map((x, i) => {
    const at = `decision.terms[${i}]`;
    const t = object(x, at);
    return {
      name: string(t.name, `${at}.name`, 128),
      value: num(t.value, `${at}.value`),
      unit: string(t.unit ?? '', `${at}.unit`, 32),
      note: string(t.note ?? '', `${at}.note`, 512),
    };
  });
}

function parseSize(v: unknown): SizePrediction {
  const s = object(v, 'decision.size');
  const optInt = (x: unknown, at: string): number | null => (x === null ? null : int(x, at, 0, Number.MAX_SAFE_INTEGER));
  return {
    known: bool(s.known, 'decision.size.known'),
    median: optInt(s.median, 'decision.size.median'),
    p90: optInt(s.p90, 'decision.size.p90'),
    samples: int(s.samples, 'decision.size.samples', 0, Number.MAX_SAFE_INTEGER),
    source: string(s.source ?? '', 'decision.size.source', 128),
  };
}

/**
 * Validates a decide reply against the request it answers: the tab and nav must be echoed, and the origin must be
 * the normalised form of the one asked about (the host lower-cases, drops default ports, and turns IDNs into
 * punycode, as the URL parser does).
 */
export function parseDecision(body: unknown, asked: DecideArgs): Decision {
  const b = object(body, 'decision');
  const origin = string(b.origin, 'decision.origin', MAX_ORIGIN_BYTES);
  if (normaliseOrigin(origin) !== origin) throw new ProtocolError(`decision.origin: ${show(origin)} is not a normalised http(s) origin`);
  const want = normaliseOrigin(asked.origin);
  if (origin !== want) throw new ProtocolError(`decision.origin: asked about ${show(want)}, got ${show(origin)}`);
  const tab = int(b.tab, 'decision.tab', -1, MAX_ID);
  if (tab !== asked.tab) throw new ProtocolError(`decision.tab: asked about ${asked.tab}, got ${tab}`);
  const nav = string(b.nav, 'decision.nav', MAX_NAV_CHARS * 4);
  if (nav !== asked.nav) throw new ProtocolError(`decision.nav: asked about ${show(asked.nav)}, got ${show(nav)}`);
  const d: Decision = { ...parsePolicyFields(b, 'decision'), origin, tab, nav, inputs: parseInputs(b.inputs) };
  if (b.terms !== undefined && b.terms !== null) d.terms = parseTerms(b.terms);
  if (b.size !== undefined && b.size !== null) d.size = parseSize(b.size);
  if (b.protocol !== undefined && b.protocol !== null) d.protocol = oneOf(b.protocol, 'decision.protocol', ['h2', 'http/1.1', 'h3', 'unknown'] as const);
  if (b.basis !== undefined && b.basis !== null) d.basis = oneOf(b.basis, 'decision.basis', ['measured', 'prior', 'rule'] as const);
  return d;
}

function parseInputs(v: unknown): Record<string, InputValue> {
  const o = object(v, 'decision.inputs');
  const out: Record<string, InputValue> = {};
  for (const [k, x] of Object.entries(o)) {
    if (x === null || typeof x === 'string' || typeof x === 'boolean' || (typeof x === 'number' && Number.isFinite(x))) {
      out[k] = x;
    } else {
      throw new ProtocolError(`decision.inputs.${k}: expected a number, string, boolean or null`);
    }
  }
  return out;
}

/**
 * The origin of an http(s) URL or origin string in the form the browser and the host both use, or null when it is
 * not an http(s) origin (a path, query, fragment or user info makes it something else).
 */
export function normaliseOrigin(s: string): string | null {
  if (/[?#]/.test(s)) return null;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  if (u.username !== '' || u.password !== '') return null;
  // "/" is all an origin may have; the regex catches paths the parser folds away ("/.", "/a/..").
  if (u.pathname !== '/' || /^[a-z]+:[/\\]{2}[^/\\]*[/\\]./i.test(s)) return null;
  return u.origin;
}

// ---------------------------------------------------------------------------------------------------------------
// Framing (PROTOCOL.md §1). Chrome frames the extension's messages itself; these exist so the tests can prove the
// byte-level agreement with the Go host against vectors/frames.json and vectors/bad_input.json.

export type FrameResult =
  | { ok: true; message: Record<string, unknown>; used: number }
  /** `code` is a §6 error code; `fatal` means the stream cannot be read past this point. */
  | { ok: false; code: ErrorCodeValue; used: number; fatal: boolean }
  | { ok: false; code: 'truncated'; used: number; fatal: true };

const encoder = new TextEncoder();

/** A 4-byte little-endian length followed by the UTF-8 JSON. */
export function encodeFrame(message: object | string, cap = MAX_HOST_FRAME): Uint8Array {
  const json = typeof message === 'string' ? message : JSON.stringify(message);
  const payload = encoder.encode(json);
  if (payload.length === 0) throw new RangeError('frame: empty payload');
  if (payload.length > cap) throw new RangeError(`frame: ${payload.length} bytes exceed the ${cap}-byte cap`);
  const out = new Uint8Array(4 + payload.length);
  new DataView(out.buffer).setUint32(0, payload.length, true);
  out.set(payload, 4);
  return out;
}

/** Reads the frame at the start of `bytes`, judging it the way PROTOCOL.md §1 says the host judges its input. */
export function decodeFrame(bytes: Uint8Array, cap = MAX_HOST_FRAME): FrameResult {
  if (bytes.length < 4) return { ok: false, code: 'truncated', used: bytes.length, fatal: true };
  const length = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true);
  if (length === 0) return { ok: false, code: ErrorCode.BadFrame, used: 4, fatal: false };
  if (length > cap) return { ok: false, code: ErrorCode.FrameTooLarge, used: 4, fatal: true };
  if (bytes.length < 4 + length) return { ok: false, code: 'truncated', used: bytes.length, fatal: true };
  const used = 4 + length;
  let json: string;
  try {
    json = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(4, used));
  } catch {
    return { ok: false, code: ErrorCode.BadUTF8, used, fatal: false };
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return { ok: false, code: ErrorCode.BadJSON, used, fatal: false };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, code: ErrorCode.BadJSON, used, fatal: false };
  }
  return { ok: true, message: value as Record<string, unknown>, used };
}

// ---------------------------------------------------------------------------------------------------------------
// Field checks

function object(v: unknown, path: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ProtocolError(`${path}: expected an object, got ${show(v)}`);
  return v as Record<string, unknown>;
}

function int(v: unknown, path: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new ProtocolError(`${path}: expected an integer, got ${show(v)}`);
  if (v < min || v > max) throw new ProtocolError(`${path}: ${v} is outside ${min} … ${max}`);
  return v;
}

/** A finite number or null (absent counts as null: the host did not measure it). */
function num(v: unknown, path: string): number | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ProtocolError(`${path}: expected a number or null, got ${show(v)}`);
  return v;
}

function oneOf<T extends string>(v: unknown, path: string, allowed: readonly T[]): T {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw new ProtocolError(`${path}: expected one of ${allowed.join(', ')}, got ${show(v)}`);
  }
  return v as T;
}

function bool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw new ProtocolError(`${path}: expected a boolean, got ${show(v)}`);
  return v;
}

function string(v: unknown, path: string, maxBytes: number): string {
  if (typeof v !== 'string') throw new ProtocolError(`${path}: expected a string, got ${show(v)}`);
  if (utf8Length(v) > maxBytes) throw new ProtocolError(`${path}: longer than ${maxBytes} bytes`);
  return v;
}

export function utf8Length(s: string): number {
  return encoder.encode(s).length;
}

function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
