// What a user expects once real cellular data is spent: a daily and a monthly cap on the cellular bytes MPSurf may
// let multipath spend, a warning at 75 %, a one-click pause, a pause while roaming, and nothing multipath before the
// user has read what MPSurf does and agreed. Plain logic: the service worker feeds it the settings and the host's
// usage, and sends the host the resulting pause (PROTOCOL.md §4 Pause); vitest runs all of it.

import type { PauseWhy } from './protocol';

export type Route = 'off' | 'decided' | 'all';
export const ROUTES: readonly Route[] = ['off', 'decided', 'all'];

/** The user's multipath settings that live in the browser only (the host gets their effect as a pause). */
export interface MultipathSettings {
  /** Which sites go through the user's MPTCP proxy: none, every https site but those known not to gain, or all. */
  route: Route;
  daily_cap_bytes: number | null;
  monthly_cap_bytes: number | null;
  pause_roaming: boolean;
  /** The user's own pause (the popup's button). */
  paused: boolean;
  /** Date.now() when the user agreed on the first-run page; null: not yet. */
  consent_at: number | null;
}

export const DEFAULT_MULTIPATH: Readonly<MultipathSettings> = Object.freeze({
  route: 'decided',
  daily_cap_bytes: null,
  monthly_cap_bytes: null,
  pause_roaming: true,
  paused: false,
  consent_at: null,
});

/** The share of a cap at which the user is warned. */
export const WARN_AT = 0.75;

export class SettingsError extends Error {
  override name = 'SettingsError';
}

function cap(v: unknown, field: string): number | null {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1_000_000) throw new SettingsError(`${field}: at least 1 MB, or none`);
  return v;
}

/** Checks settings from storage or the options page; missing fields take their defaults. */
export function normaliseMultipath(v: unknown): MultipathSettings {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new SettingsError('multipath settings: expected an object');
  const s = { ...DEFAULT_MULTIPATH, ...(v as Record<string, unknown>) } as Record<string, unknown>;
  if (!ROUTES.includes(s.route as Route)) throw new SettingsError(`route: expected off, decided or all, got ${JSON.stringify(s.route)}`);
  if (typeof s.pause_roaming !== 'boolean') throw new SettingsError('pause_roaming: expected true or false');
  if (typeof s.paused !== 'boolean') throw new SettingsError('paused: expected true or false');
  if (s.consent_at !== null && (typeof s.consent_at !== 'number' || !Number.isSafeInteger(s.consent_at) || s.consent_at < 0)) {
    throw new SettingsError('consent_at: expected a time or null');
  }
  return {
    route: s.route as Route,
    daily_cap_bytes: cap(s.daily_cap_bytes, 'daily_cap_bytes'),
    monthly_cap_bytes: cap(s.monthly_cap_bytes, 'monthly_cap_bytes'),
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

export interface Gate {
  paused: boolean;
  why: PauseWhy;
  /** A sentence for the popup and options page. */
  message: string;
  daily: CapView | null;
  monthly: CapView | null;
  /** Caps at or past WARN_AT, as sentences. */
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

/**
 * Whether multipath is paused, and why, in order of precedence: no consent, the user's pause, today's cap,
 * the month's cap, roaming. Usage the host has not measured counts as unknown, never as zero used of a cap: a
 * cap with unknown usage is reported, and does not pause.
 */
export function gate(s: MultipathSettings, now: CellularNow): Gate {
  const daily = capView(now.today_bytes, s.daily_cap_bytes);
  const monthly = capView(now.cycle_bytes, s.monthly_cap_bytes);
  const warnings: string[] = [];
  for (const [name, v] of [['today', daily], ['this billing month', monthly]] as const) {
    if (v !== null && v.level !== 'ok') {
      warnings.push(`${Math.floor(v.fraction * 100)} % of ${name}'s cellular cap used (${mb(v.used)} of ${mb(v.cap)})`);
    }
  }
  const out = (paused: boolean, why: PauseWhy, message: string): Gate => ({ paused, why, message, daily, monthly, warnings });
  if (s.consent_at === null) return out(true, 'consent', 'Multipath is off until you agree on MPSurf’s first-run page.');
  if (s.paused) return out(true, 'user', 'Multipath is paused: every site uses one path, none goes through the proxy.');
  if (daily?.level === 'reached') return out(true, 'cap_daily', `Today’s cellular cap (${mb(daily.cap)}) is reached: multipath is off until midnight.`);
  if (monthly?.level === 'reached') return out(true, 'cap_monthly', `This month’s cellular cap (${mb(monthly.cap)}) is reached: multipath is off until the plan renews.`);
  if (s.pause_roaming && now.roaming === true) return out(true, 'roaming', 'The cellular link is roaming: multipath is off (you can change this in the settings).');
  const capsUnknown = (s.daily_cap_bytes !== null && now.today_bytes === null) || (s.monthly_cap_bytes !== null && now.cycle_bytes === null);
  return out(false, 'none', capsUnknown ? 'Multipath is on; cellular use is not measured yet, so the caps cannot be checked.' : 'Multipath is on.');
}
