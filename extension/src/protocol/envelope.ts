// The extension's half of native-host/PROTOCOL.md, its envelopes: the protocol's version and names, the error codes
// of §6, request ids, and the classification of every message the host sends (parseIncoming). The bodies are
// checked, field by field, by the file of their request (decide.ts, status.ts, records.ts, peers.ts, proxy.ts,
// pause.ts, downloads.ts) before any other module sees them. Nothing under protocol/ touches the browser, so the
// vitest suite runs it against the shared vectors (native-host/vectors/).

import { int, object, show, string } from './fields';

export const PROTOCOL_VERSION = 1;

export const HOST_NAME = 'org.mpsurf.host';

export const CLIENT_NAME = 'mpsurf-extension';

export const MAX_ID = 2 ** 31 - 1;

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

/**
 * Every request type (PROTOCOL.md §4) and push type (§5), as the host names them: checked against
 * native-host/vectors/names.json, which native-host/protocol generates.
 */
export const REQUEST_TYPES = [
  'hello',
  'decide',
  'status',
  'report',
  'prefs',
  'log_export',
  'log_delete',
  'peers',
  'announce',
  'proxy_status',
  'proxy_config',
  'proxy_test',
  'pause',
  'download_offer',
  'download_control',
  'download_list',
] as const;
export const PUSH_TYPES = ['policy', 'proxy', 'download'] as const;

export type RequestType = (typeof REQUEST_TYPES)[number];

export interface Request {
  v: 1;
  id: number;
  type: RequestType;
  body?: Record<string, unknown>;
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

export function checkId(id: number): void {
  if (!Number.isInteger(id) || id < 1 || id > MAX_ID) throw new RangeError(`request id ${id} is outside 1 … 2^31-1`);
}

/** The next request id after `id`, wrapping inside 1 … 2^31-1. */
export function nextId(id: number): number {
  return id >= MAX_ID ? 1 : id + 1;
}

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
