// Decisions (PROTOCOL.md §3, §4 decide): the network-wide policy, a navigation's decision, the decide request and
// the checks of both replies; origins as the host normalises them.

import { checkId, MAX_ID, ProtocolError, type Request } from './envelope';
import { bool, int, num, object, oneOf, show, string, utf8Length } from './fields';

const MAX_ORIGIN_BYTES = 2048;

const MAX_NAV_CHARS = 128;

export const MAX_REASON_BYTES = 256;

/** PROTOCOL.md sets no bound on a model id; this cap only stops a broken host from filling the UI. */
const MAX_MODEL_ID_BYTES = 256;

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
  /** The model's whole input, only when the request asked for it (PROTOCOL.md §3); the extension never does. */
  model_input?: Record<string, unknown>;
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

export interface DecideArgs {
  origin: string;
  tab: number;
  nav: string;
  /** The navigation's URL path, without query or fragment (PROTOCOL.md §4 decide). */
  path?: string;
  /** Ask for the model's whole input in the reply (PROTOCOL.md §4 decide): for tools that replay decisions. */
  model_input?: boolean;
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

export function checkPath(path: string | undefined, what: string): void {
  if (path === undefined) return;
  if (typeof path !== 'string' || !path.startsWith('/') || /[?#]/.test(path) || utf8Length(path) > MAX_PATH_BYTES) {
    throw new RangeError(`${what}: path must start with / and have no query or fragment, at most ${MAX_PATH_BYTES} bytes`);
  }
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
  const body: Record<string, unknown> = { origin, tab, nav };
  if (args.path !== undefined) body.path = args.path;
  if (args.model_input !== undefined) {
    if (typeof args.model_input !== 'boolean') throw new RangeError('decide: model_input must be a boolean');
    body.model_input = args.model_input;
  }
  return { v: 1, id, type: 'decide', body };
}

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
  if (b.model_input !== undefined && b.model_input !== null) d.model_input = object(b.model_input, 'decision.model_input');
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
