// The user's preferences (PROTOCOL.md §4 Prefs): defaults, normalisation with messages that name the field, per-site
// override hosts (IDN to punycode through the URL parser), the settings file for import and export, and the
// Accept-Multipath-Policy opt-in response header. Plain logic: no browser calls, so vitest runs all of it.

export type Mode = 'performance' | 'balanced' | 'battery_saver';
export type HeaderScope = 'all' | 'opt_in' | 'never';
export type OverrideRule = 'always' | 'never' | 'auto';

export interface Override {
  host: string;
  rule: OverrideRule;
}

export interface Prefs {
  mode: Mode;
  deadline_ms: number;
  battery_floor_percent: number;
  charging_unlimited: boolean;
  quota_bytes: number | null;
  billing_day: number;
  header_scope: HeaderScope;
  overrides: Override[];
}

export const MODES: readonly Mode[] = ['performance', 'balanced', 'battery_saver'];
export const HEADER_SCOPES: readonly HeaderScope[] = ['all', 'opt_in', 'never'];
export const OVERRIDE_RULES: readonly OverrideRule[] = ['always', 'never', 'auto'];
export const MAX_OVERRIDES = 1_000;
export const DEADLINE_MIN_MS = 1_000;
export const DEADLINE_MAX_MS = 60_000;

/**
 * What a fresh install starts with. These are the user's to change, not model constants: performance mode (the
 * battery floor and the data limits (caps.ts) guard battery and bill; policy-models/model.json sources.defaults); T = 3 s, the
 * baseline policy's deadline (policy-models/baseline.json); no multipath on battery below 20 %; charging makes
 * radio energy free; no quota (unlimited) renewing on the 1st; the header to all sites, as before this page existed.
 */
export const DEFAULT_PREFS: Readonly<Prefs> = Object.freeze({
  mode: 'performance',
  deadline_ms: 3_000,
  battery_floor_percent: 20,
  charging_unlimited: true,
  quota_bytes: null,
  billing_day: 1,
  header_scope: 'all',
  overrides: [],
});

/**
 * A preference that cannot be accepted; `field` names it the way the protocol does, `plain` says what is wrong
 * without the field's name, and `range` gives the bounds (in the stored unit) when a number was out of them, so
 * that a page can say it in the unit it shows (view.ts plainError).
 */
export class PrefsError extends Error {
  override name = 'PrefsError';
  constructor(
    readonly field: string,
    readonly plain: string,
    readonly range?: { min: number; max: number },
  ) {
    super(`${field}: ${plain}`);
  }
}

// -------------------------------------------------------------------------------------------------------------
// Hosts

const MAX_HOST_BYTES = 253;

/**
 * The host a per-site rule applies to, in the form requests carry it (lower case, punycode), from what a person
 * types: "Bücher.example", "https://www.example.com/some/page", "127.0.0.1". Throws PrefsError with a message a
 * person can act on when it is not a host.
 */
export function normaliseHost(input: string): string {
  const raw = input.trim();
  if (raw === '') throw new PrefsError('host', 'enter a site such as example.com');
  if (/\s/.test(raw)) throw new PrefsError('host', `"${raw}" contains a space`);
  if (raw.includes('*')) throw new PrefsError('host', 'wildcards are not needed: a rule for example.com covers its subdomains too');
  const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw);
  if (hasScheme && !/^https?:\/\//i.test(raw)) throw new PrefsError('host', 'only http and https sites can have a rule');
  let u: URL;
  try {
    u = new URL(hasScheme ? raw : `http://${raw}`);
  } catch {
    throw new PrefsError('host', `"${raw}" is not a valid host name`);
  }
  if (u.username !== '' || u.password !== '') throw new PrefsError('host', 'a site rule takes a host, without a user name or password');
  if (u.port !== '') throw new PrefsError('host', `a site rule applies to every port: enter ${u.hostname} without :${u.port}`);
  if (!hasScheme && (u.pathname !== '/' || u.search !== '' || u.hash !== '')) {
    throw new PrefsError('host', `"${raw}" is not a host name (did you mean ${u.hostname}?)`);
  }
  const host = u.hostname;
  if (host === '' || host.length > MAX_HOST_BYTES) throw new PrefsError('host', `"${raw}" is not a valid host name`);
  if (host.startsWith('[')) return host; // IPv6 literal, already canonical
  if (/^[0-9.]+$/.test(host)) return host; // IPv4, canonicalised by the parser
  const labels = host.split('.');
  if (host.endsWith('.')) throw new PrefsError('host', `"${raw}" ends with a dot`);
  for (const l of labels) {
    if (l === '') throw new PrefsError('host', `"${raw}" has an empty label`);
    if (l.length > 63) throw new PrefsError('host', `"${raw}" has a label longer than 63 characters`);
    if (!/^[a-z0-9_-]+$/.test(l) || l.startsWith('-') || l.endsWith('-')) {
      throw new PrefsError('host', `"${raw}" is not a valid host name`);
    }
  }
  return host;
}

/** The overrides with hosts normalised, duplicates merged (the later entry wins), "auto" dropped (it is no rule). */
export function normaliseOverrides(v: unknown): Override[] {
  if (!Array.isArray(v)) throw new PrefsError('overrides', 'expected a list');
  const byHost = new Map<string, OverrideRule>();
  v.forEach((x: unknown, i) => {
    if (x === null || typeof x !== 'object') throw new PrefsError(`overrides[${i}]`, 'expected {"host", "rule"}');
    const o = x as Record<string, unknown>;
    if (typeof o.host !== 'string') throw new PrefsError(`overrides[${i}].host`, 'expected a string');
    if (!OVERRIDE_RULES.includes(o.rule as OverrideRule)) {
      throw new PrefsError(`overrides[${i}].rule`, `expected always, never or auto, got ${JSON.stringify(o.rule)}`);
    }
    let host: string;
    try {
      host = normaliseHost(o.host);
    } catch (e) {
      throw new PrefsError(`overrides[${i}].host`, (e as PrefsError).message.replace(/^host: /, ''));
    }
    byHost.delete(host);
    byHost.set(host, o.rule as OverrideRule);
  });
  const out = [...byHost].filter(([, rule]) => rule !== 'auto').map(([host, rule]) => ({ host, rule }));
  if (out.length > MAX_OVERRIDES) throw new PrefsError('overrides', `at most ${MAX_OVERRIDES} site rules`);
  return out;
}

/** Sets (or with "auto", removes) the rule for one host; returns the new list. */
export function withOverride(list: readonly Override[], host: string, rule: OverrideRule): Override[] {
  return normaliseOverrides([...list, { host, rule }]);
}

// -------------------------------------------------------------------------------------------------------------
// Prefs

function int(v: unknown, field: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new PrefsError(field, `expected a whole number, got ${JSON.stringify(v)}`, { min, max });
  if (v < min || v > max) throw new PrefsError(field, `${v} is outside ${min} … ${max}`, { min, max });
  return v;
}

/**
 * Checks every field and returns the preferences in their stored form. With `fill`, missing fields take their
 * defaults (a settings file from an older version); without it every field is required, as the protocol says.
 */
export function normalisePrefs(v: unknown, fill = false): Prefs {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new PrefsError('prefs', 'expected an object');
  const src = v as Record<string, unknown>;
  const get = (k: keyof Prefs): unknown => {
    if (k in src) return src[k];
    if (fill) return DEFAULT_PREFS[k];
    throw new PrefsError(k, 'missing');
  };
  const mode = get('mode');
  if (!MODES.includes(mode as Mode)) throw new PrefsError('mode', `expected performance, balanced or battery_saver, got ${JSON.stringify(mode)}`);
  const scope = get('header_scope');
  if (!HEADER_SCOPES.includes(scope as HeaderScope)) throw new PrefsError('header_scope', `expected all, opt_in or never, got ${JSON.stringify(scope)}`);
  const charging = get('charging_unlimited');
  if (typeof charging !== 'boolean') throw new PrefsError('charging_unlimited', 'expected true or false');
  const quota = get('quota_bytes');
  return {
    mode: mode as Mode,
    deadline_ms: int(get('deadline_ms'), 'deadline_ms', DEADLINE_MIN_MS, DEADLINE_MAX_MS),
    battery_floor_percent: int(get('battery_floor_percent'), 'battery_floor_percent', 0, 100),
    charging_unlimited: charging,
    quota_bytes: quota === null ? null : int(quota, 'quota_bytes', 0, Number.MAX_SAFE_INTEGER),
    billing_day: int(get('billing_day'), 'billing_day', 1, 31),
    header_scope: scope as HeaderScope,
    overrides: normaliseOverrides(get('overrides')),
  };
}

/** Preferences read back from storage: anything unusable falls back to the defaults rather than blocking startup. */
export function loadPrefs(stored: unknown): { prefs: Prefs; problem: string | null } {
  if (stored === undefined) return { prefs: structuredClone(DEFAULT_PREFS) as Prefs, problem: null };
  try {
    return { prefs: normalisePrefs(stored, true), problem: null };
  } catch (e) {
    return { prefs: structuredClone(DEFAULT_PREFS) as Prefs, problem: `stored preferences were unusable (${(e as Error).message}); defaults apply` };
  }
}

// -------------------------------------------------------------------------------------------------------------
// Settings file

export const SETTINGS_FORMAT = 'mpsurf-settings';
export const SETTINGS_VERSION = 1;
/** A settings file is a few kB even with 1,000 site rules; anything much larger is not one. */
export const MAX_SETTINGS_FILE = 256 * 1024;

export function exportSettings(prefs: Prefs, now = new Date()): string {
  return `${JSON.stringify({ format: SETTINGS_FORMAT, version: SETTINGS_VERSION, exported: now.toISOString(), prefs }, null, 2)}\n`;
}

/** Reads a settings file; throws an Error whose message says what is wrong with the file. */
export function parseSettingsFile(text: string): Prefs {
  if (text.length > MAX_SETTINGS_FILE) throw new Error(`the file is larger than ${MAX_SETTINGS_FILE / 1024} KiB: not an MPSurf settings file`);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`the file is not JSON (${(e as Error).message})`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('the file is not an MPSurf settings file');
  const f = v as Record<string, unknown>;
  if (f.format !== SETTINGS_FORMAT) throw new Error(`the file is not an MPSurf settings file (format ${JSON.stringify(f.format ?? null)})`);
  if (f.version !== SETTINGS_VERSION) throw new Error(`settings version ${JSON.stringify(f.version)} is not supported (this version reads ${SETTINGS_VERSION})`);
  try {
    return normalisePrefs(f.prefs, true);
  } catch (e) {
    throw new Error(`the settings are invalid: ${(e as Error).message}`);
  }
}

// -------------------------------------------------------------------------------------------------------------
// Opt-in response header

/** Sent by a site that wants the Multipath-Policy header, like Client Hints' Accept-CH. */
export const OPT_IN_HEADER = 'Accept-Multipath-Policy';
export const MAX_OPTED_IN = 1_000;

/**
 * An Accept-Multipath-Policy value: an RFC 9651 Boolean. `?1` opts the origin in, `?0` withdraws it; anything else
 * (or several values) leaves the origin as it was (null).
 */
export function parseOptIn(value: string | undefined): boolean | null {
  if (value === undefined) return null;
  const v = value.trim();
  if (v === '?1') return true;
  if (v === '?0') return false;
  return null;
}

/** The remembered opt-ins after one response: most recent last, capped. */
export function updateOptIns(list: readonly string[], origin: string, optIn: boolean | null): string[] {
  if (optIn === null) return [...list];
  const out = list.filter((o) => o !== origin);
  if (optIn) out.push(origin);
  return out.slice(-MAX_OPTED_IN);
}
