// One data-limit model, the one phones taught people (Android's data warning and limit, per billing cycle): a
// monthly plan (how much cellular data it includes, the day it renews) and a daily limit, each warned at 75 % and
// stopping multipath at 100 %; a one-click pause; a pause while roaming; and nothing multipath before the user has
// read what MPSurf does and agreed. The monthly plan is the preferences' quota_bytes and billing_day (prefs.ts),
// which the host also weighs in every decision (θ2, the price of a megabyte); the daily limit lives in the
// browser only. Plain logic: the service worker feeds it the settings and the host's usage, and sends the host the
// resulting pause (PROTOCOL.md §4 Pause); vitest runs all of it.

import type { PauseWhy } from './protocol/pause';

export type Route = 'off' | 'decided' | 'all';
export const ROUTES: readonly Route[] = ['off', 'decided', 'all'];

/** The user's multipath settings that live in the browser only (the host gets their effect as a pause). */
export interface MultipathSettings {
  /** Which sites go through the user's MPTCP proxy: none, every https site but those known not to gain, or all. */
  route: Route;
  /** The daily limit on cellular data (bytes since local midnight), null: none. */
  daily_cap_bytes: number | null;
  pause_roaming: boolean;
  /** The user's own pause (the popup's button). */
  paused: boolean;
  /** Date.now() when the user agreed on the first-run page; null: not yet. */
  consent_at: number | null;
}

/**
 * The daily limit a new install starts with: on, because the first-run page presents the limits as what keeps the
 * cost in check, and a person who has not yet said what their plan holds expects MPSurf not to spend much cellular
 * data on its own. 100 MB is the model's own day of browsing at its most frugal: 100 page loads a day
 * (policy-models/model.json quota.pages_per_day) at battery-saver mode's 1 MB per page (quota.battery_saver_cap_bytes),
 * about 3 GB in a 30-day month, near the 2 GB monthly data warning Android sets by default
 * (frameworks/base config_networkPolicyDefaultWarning). The first-run page says so and lets the user change it.
 */
export const DEFAULT_DAILY_LIMIT_BYTES = 100_000_000;

export const DEFAULT_MULTIPATH: Readonly<MultipathSettings> = Object.freeze({
  route: 'decided',
  daily_cap_bytes: DEFAULT_DAILY_LIMIT_BYTES,
  pause_roaming: true,
  paused: false,
  consent_at: null,
});

/** The share of a limit at which the user is warned. */
export const WARN_AT = 0.75;

/** The smallest limit taken (1 MB): anything less stops multipath at the first page. */
export const MIN_LIMIT_BYTES = 1_000_000;

/** A setting that cannot be taken; `field` names it as it is stored, the message says what a person can do. */
export class SettingsError extends Error {
  override name = 'SettingsError';
  constructor(
    readonly field: string,
    readonly plain: string,
  ) {
    super(`${field}: ${plain}`);
  }
}

function cap(v: unknown, field: string): number | null {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < MIN_LIMIT_BYTES) throw new SettingsError(field, 'at least 1 MB, or none');
  return v;
}

/** Checks settings from storage or the options page; missing fields take their defaults, unknown ones are dropped. */
export function normaliseMultipath(v: unknown): MultipathSettings {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new SettingsError('multipath', 'expected an object');
  const s = { ...DEFAULT_MULTIPATH, ...(v as Record<string, unknown>) } as Record<string, unknown>;
  if (!ROUTES.includes(s.route as Route)) throw new SettingsError('route', `expected off, decided or all, got ${JSON.stringify(s.route)}`);
  if (typeof s.pause_roaming !== 'boolean') throw new SettingsError('pause_roaming', 'expected true or false');
  if (typeof s.paused !== 'boolean') throw new SettingsError('paused', 'expected true or false');
  if (s.consent_at !== null && (typeof s.consent_at !== 'number' || !Number.isSafeInteger(s.consent_at) || s.consent_at < 0)) {
    throw new SettingsError('consent_at', 'expected a time or null');
  }
  return {
    route: s.route as Route,
    daily_cap_bytes: cap(s.daily_cap_bytes, 'daily_cap_bytes'),
    pause_roaming: s.pause_roaming,
    paused: s.paused,
    consent_at: s.consent_at as number | null,
  };
}

/** Settings read back from storage: anything unusable falls back to the defaults (no consent, so no multipath). */
export function loadMultipath(stored: unknown): { settings: MultipathSettings; problem: string | null } {
  if (stored === undefined) return { settings: { ...DEFAULT_MULTIPATH }, problem: null };
  try {
    return { settings: normaliseMultipath(stored), problem: null };
  } catch (e) {
    return { settings: { ...DEFAULT_MULTIPATH }, problem: `stored multipath settings were unusable (${(e as Error).message}); defaults apply` };
  }
}

/**
 * Stored settings from before the one data-limit model had two monthly limits: a "monthly cellular cap" among the
 * multipath settings (monthly_cap_bytes, entered in MB) and the plan's quota among the preferences (quota_bytes,
 * entered in GB). The cap becomes the plan's monthly limit when no quota was set; when both were, the smaller one
 * stays, since it is the one that stopped multipath first. Returns the raw objects to store (unchanged when there
 * was nothing to migrate) and a sentence saying what changed.
 */
export function migrateLimits(prefs: unknown, multipath: unknown): { prefs: unknown; multipath: unknown; note: string | null } {
  if (multipath === null || typeof multipath !== 'object' || Array.isArray(multipath) || !('monthly_cap_bytes' in multipath)) {
    return { prefs, multipath, note: null };
  }
  const { monthly_cap_bytes: capBytes, ...rest } = multipath as Record<string, unknown>;
  if (typeof capBytes !== 'number' || !Number.isSafeInteger(capBytes) || capBytes <= 0) return { prefs, multipath: rest, note: null };
  const p = prefs !== null && typeof prefs === 'object' && !Array.isArray(prefs) ? (prefs as Record<string, unknown>) : {};
  const quota = typeof p.quota_bytes === 'number' && Number.isSafeInteger(p.quota_bytes) ? p.quota_bytes : null;
  const monthly = quota === null ? capBytes : Math.min(quota, capBytes);
  const note =
    quota === null
      ? `your monthly cellular cap (${gb(capBytes)}) is now your plan's monthly limit`
      : `your monthly cellular cap (${gb(capBytes)}) and your plan's quota (${gb(quota)}) are now one monthly limit: ${gb(monthly)}, the smaller`;
  return { prefs: { ...p, quota_bytes: monthly }, multipath: rest, note };
}

function gb(n: number): string {
  return n >= 1e9 ? `${(n / 1e9).toLocaleString('en', { maximumFractionDigits: 2 })} GB` : mb(n);
}

/** What the host measured of cellular use, and whether the cellular link roams (null: unknown). */
export interface CellularNow {
  today_bytes: number | null;
  cycle_bytes: number | null;
  roaming: boolean | null;
}

export interface CapView {
  used: number;
  cap: number;
  fraction: number;
  level: 'ok' | 'warn' | 'reached';
}

/** The monthly plan, from the preferences: its limit (null: unlimited or not said) and the day it renews. */
export interface Plan {
  monthly_bytes: number | null;
  billing_day: number;
}

export const NO_PLAN: Readonly<Plan> = Object.freeze({ monthly_bytes: null, billing_day: 1 });

export interface Gate {
  paused: boolean;
  why: PauseWhy;
  /** A sentence for the popup and options page. */
  message: string;
  daily: CapView | null;
  monthly: CapView | null;
  /** Limits at or past WARN_AT, as sentences. */
  warnings: string[];
}

function capView(used: number | null, limit: number | null): CapView | null {
  if (limit === null || used === null) return null;
  const fraction = used / limit;
  return { used, cap: limit, fraction, level: fraction >= 1 ? 'reached' : fraction >= WARN_AT ? 'warn' : 'ok' };
}

function mb(n: number): string {
  return `${(n / 1e6).toLocaleString('en', { maximumFractionDigits: 1 })} MB`;
}

/** A limit in the unit people buy it in: GB from 1 GB on, MB below. */
export function limitText(n: number): string {
  return gb(n);
}

/**
 * Whether multipath is paused, and why, in order of precedence: no consent, the user's pause, today's limit,
 * the month's limit, roaming. Usage the host has not measured counts as unknown, never as zero used of a limit: a
 * limit with unknown usage is reported, and does not pause.
 */
export function gate(s: MultipathSettings, now: CellularNow, plan: Plan = NO_PLAN): Gate {
  const daily = capView(now.today_bytes, s.daily_cap_bytes);
  const monthly = capView(now.cycle_bytes, plan.monthly_bytes);
  const warnings: string[] = [];
  for (const [name, v] of [["today's", daily], ["this month's", monthly]] as const) {
    if (v !== null && v.level === 'warn') {
      warnings.push(`${Math.floor(v.fraction * 100)} % of ${name} cellular data used (${limitText(v.used)} of ${limitText(v.cap)}): multipath stops at 100 %`);
    }
  }
  const out = (paused: boolean, why: PauseWhy, message: string): Gate => ({ paused, why, message, daily, monthly, warnings });
  if (s.consent_at === null) return out(true, 'consent', 'Multipath is off until you agree on MPSurf’s first-run page.');
  if (s.paused) return out(true, 'user', 'Multipath is paused: every site uses one path, none goes through the proxy.');
  if (daily?.level === 'reached') return out(true, 'cap_daily', `Today’s data limit (${limitText(daily.cap)}) is used up: multipath is off until midnight.`);
  if (monthly?.level === 'reached') {
    return out(true, 'cap_monthly', `This month’s data limit (${limitText(monthly.cap)}) is used up: multipath is off until the plan renews on day ${plan.billing_day}.`);
  }
  if (s.pause_roaming && now.roaming === true) return out(true, 'roaming', 'The cellular link is roaming: multipath is off (you can change this in the settings).');
  const capsUnknown = (s.daily_cap_bytes !== null && now.today_bytes === null) || (plan.monthly_bytes !== null && now.cycle_bytes === null);
  return out(false, 'none', capsUnknown ? 'Multipath is on; cellular use is not measured yet, so the limits cannot be checked.' : 'Multipath is on.');
}
