// The Multipath-Policy request header (PROTOCOL.md §7): an RFC 9651 Dictionary with quantised values, so that the
// header says little more about the user than "has a second path, roughly this patient, roughly this data budget".

import { ParseError, isInnerList, parseDictionary, serializeDictionary, type Dictionary } from 'structured-headers';

export const HEADER_NAME = 'Multipath-Policy';
export const HEADER_VERSION = 1;

/**
 * The policy fields the header is made from; a Policy and a Decision both have them. Multipath is allowed (`mp`)
 * unless θ1 is never (null): a page expected single path still carries its θ1, so that a server, or the helper,
 * can use multipath once a transfer passes it.
 */
export interface HeaderSource {
  theta1: number | null;
  theta2: number | null;
  deadline_ms: number;
}

/** The header's members after quantisation. `t2` is null when there is no cap (the key is then absent). */
export interface HeaderFields {
  v: number;
  mp: boolean;
  t1: number;
  t2: number | null;
  dl: number;
}

const T1_MAX_KIB = 2 ** 20; // 1,048,576
const T2_MAX_KIB = 2 ** 24; // 16,777,216
const DL_MIN_S = 1;
const DL_MAX_S = 60;

/** θ1 in KiB: 0 stays 0, else the nearest power of two on a log scale (halves up), clamped to 1 … 2^20. */
export function quantiseTheta1(theta1: number): number {
  checkBytes(theta1, 'theta1');
  if (theta1 === 0) return 0;
  // k = round(log2(θ1/1024)) with halves up: θ1 rounds past 2^k KiB once θ1 ≥ 1024·2^(k+½), i.e. once
  // θ1² ≥ 2^(21+2k). Squaring in BigInt keeps every boundary exact, where Math.log2 would round.
  const sq = BigInt(theta1) ** 2n;
  for (let k = 0; k < 20; k++) {
    if (sq < 1n << BigInt(21 + 2 * k)) return 2 ** k;
  }
  return T1_MAX_KIB;
}

/** θ2 in KiB: null stays null (no cap), below 1 KiB is 0, else the power of two at or below θ2/1024, ≤ 2^24. */
export function quantiseTheta2(theta2: number | null): number | null {
  if (theta2 === null) return null;
  checkBytes(theta2, 'theta2');
  // Rounding down: a cap is never raised by the quantisation.
  const kib = Math.floor(theta2 / 1024);
  if (kib < 1) return 0;
  if (kib >= T2_MAX_KIB) return T2_MAX_KIB;
  let p = 1;
  while (p * 2 <= kib) p *= 2;
  return p;
}

/** T in whole seconds, rounded half up, clamped to 1 … 60. */
export function quantiseDeadline(deadlineMs: number): number {
  if (!Number.isFinite(deadlineMs) || deadlineMs < 0) throw new RangeError(`deadline_ms: ${deadlineMs} is not a duration`);
  return Math.min(DL_MAX_S, Math.max(DL_MIN_S, Math.floor((deadlineMs + 500) / 1000)));
}

export function quantise(p: HeaderSource): HeaderFields {
  return {
    v: HEADER_VERSION,
    mp: p.theta1 !== null,
    t1: quantiseTheta1(p.theta1 ?? 0),
    t2: quantiseTheta2(p.theta2),
    dl: quantiseDeadline(p.deadline_ms),
  };
}

/**
 * Serialises the fields in the order v, mp, t1, t2, dl with the RFC 9651 serialiser, so the output is the
 * canonical form that PROTOCOL.md §7 and vectors/header.json fix (a true `mp` is the bare key).
 */
export function serialiseHeader(f: HeaderFields): string {
  const members: Dictionary = new Map();
  members.set('v', [f.v, new Map()]);
  members.set('mp', [f.mp, new Map()]);
  members.set('t1', [f.t1, new Map()]);
  if (f.t2 !== null) members.set('t2', [f.t2, new Map()]);
  members.set('dl', [f.dl, new Map()]);
  return serializeDictionary(members);
}

/** The header value for a policy or decision. */
export function headerValue(p: HeaderSource): string {
  return serialiseHeader(quantise(p));
}

/**
 * The same header with multipath withheld (`mp=?0`, θ1 gone): what every rule sets while multipath is paused or
 * the user has not agreed yet, so that no request says `mp` then, the first one to a new site included. The
 * other members (patience, cap) stay, as they describe the user, not the pause.
 */
export function withoutMultipath(value: string): string {
  const f = parseHeader(value);
  return serialiseHeader({ ...f, mp: false, t1: 0 });
}

export class HeaderError extends Error {
  override name = 'HeaderError';
}

/** Parses a Multipath-Policy value; unknown keys are ignored, as §7 asks of receivers. */
export function parseHeader(value: string): HeaderFields {
  let dict;
  try {
    dict = parseDictionary(value);
  } catch (e) {
    throw new HeaderError(`not an RFC 9651 dictionary: ${e instanceof ParseError ? e.message : String(e)}`);
  }
  const get = (key: string): unknown => {
    const m = dict.get(key);
    if (m === undefined) return undefined;
    if (isInnerList(m)) throw new HeaderError(`${key}: an inner list, not an item`);
    return m[0];
  };
  const intKey = (key: string, min: number, max: number): number => {
    const x = get(key);
    if (typeof x !== 'number' || !Number.isInteger(x)) throw new HeaderError(`${key}: expected an integer`);
    if (x < min || x > max) throw new HeaderError(`${key}: ${x} is outside ${min} … ${max}`);
    return x;
  };
  const v = intKey('v', 1, 999);
  if (v !== HEADER_VERSION) throw new HeaderError(`v: version ${v} is not ${HEADER_VERSION}`);
  const mp = get('mp');
  if (typeof mp !== 'boolean') throw new HeaderError('mp: expected a boolean');
  return {
    v,
    mp,
    t1: intKey('t1', 0, T1_MAX_KIB),
    t2: dict.has('t2') ? intKey('t2', 0, T2_MAX_KIB) : null,
    dl: intKey('dl', DL_MIN_S, DL_MAX_S),
  };
}

function checkBytes(x: number, name: string): void {
  if (!Number.isSafeInteger(x) || x < 0) throw new RangeError(`${name}: ${x} is not a byte count`);
}
