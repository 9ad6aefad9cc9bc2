import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_DAILY_LIMIT_BYTES, DEFAULT_MULTIPATH, SettingsError, WARN_AT, gate, loadMultipath, migrateLimits, normaliseMultipath, type MultipathSettings } from '../src/caps';
import { loadPrefs } from '../src/prefs';

const agreed: MultipathSettings = { ...DEFAULT_MULTIPATH, consent_at: 1_700_000_000_000 };
const MB = 1_000_000;

describe('gate', () => {
  it('pauses everything until the user agrees', () => {
    const g = gate(DEFAULT_MULTIPATH, { today_bytes: 0, cycle_bytes: 0, roaming: false });
    expect(g).toMatchObject({ paused: true, why: 'consent' });
  });

  it('is on with consent and nothing else', () => {
    expect(gate(agreed, { today_bytes: 0, cycle_bytes: 0, roaming: false })).toMatchObject({ paused: false, why: 'none', warnings: [] });
  });

  it("pauses on the user's one click, ahead of every cap", () => {
    const s = { ...agreed, paused: true, daily_cap_bytes: 10 * MB };
    expect(gate(s, { today_bytes: 50 * MB, cycle_bytes: 50 * MB, roaming: true })).toMatchObject({ paused: true, why: 'user' });
  });

  it.each([
    // [today, cap, level, paused]
    [0, 'ok', false],
    [7.4 * MB, 'ok', false],
    [7.5 * MB, 'warn', false],
    [9.99 * MB, 'warn', false],
    [10 * MB, 'reached', true],
    [25 * MB, 'reached', true],
  ] as const)('daily cap 10 MB, %d bytes used today: %s', (used, level, paused) => {
    const g = gate({ ...agreed, daily_cap_bytes: 10 * MB }, { today_bytes: used, cycle_bytes: used, roaming: false });
    expect(g.daily?.level).toBe(level);
    expect(g.paused).toBe(paused);
    if (paused) expect(g.why).toBe('cap_daily');
    // A warning while there is some left; once used up, the gate's message says so.
    expect(g.warnings.length).toBe(level === 'warn' ? 1 : 0);
    if (paused) expect(g.message).toMatch(/^Today’s data limit \(10 MB\) is used up: multipath is off until midnight/);
  });

  it("warns at 75 % of the plan's monthly data and stops at 100 %", () => {
    expect(WARN_AT).toBe(0.75);
    const plan = { monthly_bytes: 1_000 * MB, billing_day: 15 };
    const warn = gate(agreed, { today_bytes: 10 * MB, cycle_bytes: 800 * MB, roaming: false }, plan);
    expect(warn).toMatchObject({ paused: false, why: 'none' });
    expect(warn.warnings[0]).toBe("80 % of this month's cellular data used (800 MB of 1 GB): multipath stops at 100 %");
    const out = gate(agreed, { today_bytes: 10 * MB, cycle_bytes: 1000 * MB, roaming: false }, plan);
    expect(out).toMatchObject({ paused: true, why: 'cap_monthly' });
    expect(out.message).toMatch(/until the plan renews on day 15/);
    // Without a plan (unlimited, or not said) there is no monthly limit.
    expect(gate(agreed, { today_bytes: 0, cycle_bytes: 50_000 * MB, roaming: false })).toMatchObject({ paused: false, monthly: null });
  });

  it('the daily limit wins over the monthly one when both are reached', () => {
    const s = { ...agreed, daily_cap_bytes: 10 * MB };
    expect(gate(s, { today_bytes: 20 * MB, cycle_bytes: 200 * MB, roaming: false }, { monthly_bytes: 100 * MB, billing_day: 1 }).why).toBe('cap_daily');
  });

  it('does not pause on a cap it cannot measure, and says so', () => {
    const g = gate({ ...agreed, daily_cap_bytes: 10 * MB }, { today_bytes: null, cycle_bytes: null, roaming: null });
    expect(g).toMatchObject({ paused: false, why: 'none', daily: null });
    expect(g.message).toMatch(/not measured/);
    expect(gate({ ...agreed, daily_cap_bytes: null }, { today_bytes: null, cycle_bytes: null, roaming: null }, { monthly_bytes: MB, billing_day: 1 }).message).toMatch(/not measured/);
  });

  it('pauses while roaming unless the user allows it', () => {
    expect(gate(agreed, { today_bytes: 0, cycle_bytes: 0, roaming: true })).toMatchObject({ paused: true, why: 'roaming' });
    expect(gate({ ...agreed, pause_roaming: false }, { today_bytes: 0, cycle_bytes: 0, roaming: true })).toMatchObject({ paused: false });
    expect(gate(agreed, { today_bytes: 0, cycle_bytes: 0, roaming: null })).toMatchObject({ paused: false });
  });
});

describe('normaliseMultipath', () => {
  it('fills defaults and keeps valid fields', () => {
    expect(normaliseMultipath({ route: 'all', daily_cap_bytes: 50 * MB })).toEqual({ ...DEFAULT_MULTIPATH, route: 'all', daily_cap_bytes: 50 * MB });
  });
  it.each([
    [{ route: 'sometimes' }, /route/],
    [{ daily_cap_bytes: 5 }, /daily_cap_bytes/],
    [{ daily_cap_bytes: -1 }, /daily_cap_bytes/],
    [{ daily_cap_bytes: 1.5e9 + 0.5 }, /daily_cap_bytes/],
    [{ paused: 'yes' }, /paused/],
    [{ consent_at: 'today' }, /consent_at/],
    [[], /object/],
  ])('refuses %j', (v, msg) => {
    expect(() => normaliseMultipath(v)).toThrow(SettingsError);
    expect(() => normaliseMultipath(v)).toThrow(msg);
  });
  it('falls back to defaults (no consent) from unusable storage', () => {
    const { settings, problem } = loadMultipath({ route: 7 });
    expect(settings).toEqual(DEFAULT_MULTIPATH);
    expect(problem).toMatch(/unusable/);
  });
});

describe('the data limits a new install starts with', () => {
  it('has a daily limit on, as the first-run page promises, and no monthly plan until the user says', () => {
    expect(DEFAULT_MULTIPATH.daily_cap_bytes).toBe(DEFAULT_DAILY_LIMIT_BYTES);
    expect(DEFAULT_DAILY_LIMIT_BYTES).toBe(100 * MB);
    expect(loadPrefs(undefined).prefs.quota_bytes).toBeNull();
    const fresh = gate({ ...DEFAULT_MULTIPATH, consent_at: 1 }, { today_bytes: 100 * MB, cycle_bytes: 100 * MB, roaming: false });
    expect(fresh).toMatchObject({ paused: true, why: 'cap_daily' });
  });

  it('is what the first-run page says: limits on from the start, warned at 75 %, stopped at 100 %', () => {
    const page = fs.readFileSync(path.join(__dirname, '..', 'static', 'welcome.html'), 'utf8');
    expect(page).toMatch(/Data limits<\/b>, on from the start/);
    expect(page).toMatch(/At 75 % of a limit MPSurf warns you; at 100 % multipath stops/);
    expect(page).toMatch(/id="cap-daily"/);
    expect(page).toMatch(/id="quota-gb"/);
  });
});

describe('settings from before the one data-limit model', () => {
  it("moves the monthly cap (MB) into the plan's monthly limit when there was no quota", () => {
    const m = migrateLimits({ mode: 'balanced', quota_bytes: null, billing_day: 9 }, { consent_at: 5, daily_cap_bytes: null, monthly_cap_bytes: 3_000 * MB });
    expect(m.prefs).toEqual({ mode: 'balanced', quota_bytes: 3_000 * MB, billing_day: 9 });
    expect(m.multipath).toEqual({ consent_at: 5, daily_cap_bytes: null });
    expect(m.note).toBe("your monthly cellular cap (3 GB) is now your plan's monthly limit");
    // What was stored loads as it was: consent kept, no daily limit forced on an existing user.
    expect(loadMultipath(m.multipath).settings).toMatchObject({ consent_at: 5, daily_cap_bytes: null });
    expect(loadPrefs(m.prefs).prefs).toMatchObject({ mode: 'balanced', quota_bytes: 3_000 * MB, billing_day: 9 });
  });

  it('keeps the smaller of a cap and a quota (GB), the one that stopped multipath first', () => {
    const m = migrateLimits({ quota_bytes: 5e9, billing_day: 1 }, { consent_at: 5, monthly_cap_bytes: 2_000 * MB });
    expect(m.prefs).toMatchObject({ quota_bytes: 2_000 * MB });
    expect(m.note).toMatch(/2 GB, the smaller/);
    const n = migrateLimits({ quota_bytes: 1e9 }, { monthly_cap_bytes: 2_000 * MB });
    expect(n.prefs).toMatchObject({ quota_bytes: 1e9 });
  });

  it('changes nothing without an old cap, and drops an unset one quietly', () => {
    const prefs = { quota_bytes: 5e9 };
    const mp = { consent_at: 5, daily_cap_bytes: 10 * MB };
    expect(migrateLimits(prefs, mp)).toEqual({ prefs, multipath: mp, note: null });
    expect(migrateLimits(undefined, undefined)).toEqual({ prefs: undefined, multipath: undefined, note: null });
    expect(migrateLimits(prefs, { consent_at: 5, monthly_cap_bytes: null })).toEqual({ prefs, multipath: { consent_at: 5 }, note: null });
    // Preferences never stored: the plan gets the cap, the rest takes the defaults when loaded.
    const m = migrateLimits(undefined, { monthly_cap_bytes: 500 * MB });
    expect(loadPrefs(m.prefs).prefs.quota_bytes).toBe(500 * MB);
  });
});
