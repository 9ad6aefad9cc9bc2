// The MPTCP proxy (PROTOCOL.md §4 Proxy): the relay's status, the proxy's settings and its test.

import { checkId, ProtocolError, type Request } from './envelope';
import { bool, int, object, oneOf, string, utf8Length } from './fields';

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
