import { describe, expect, it } from 'vitest';
import { DEFAULT_MULTIPATH, SettingsError, WARN_AT, gate, loadMultipath, normaliseMultipath, type MultipathSettings } from '../src/caps';

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
    expect(g.warnings.length).toBe(level === 'ok' ? 0 : 1);
  });

  it('warns at 75 % of the monthly cap and stops at 100 %', () => {
    expect(WARN_AT).toBe(0.75);
    const s = { ...agreed, monthly_cap_bytes: 1000 * MB };
    const warn = gate(s, { today_bytes: 10 * MB, cycle_bytes: 800 * MB, roaming: false });
    expect(warn).toMatchObject({ paused: false, why: 'none' });
    expect(warn.warnings[0]).toMatch(/^80 % of this billing month's cellular cap used \(800 MB of 1,000 MB\)/);
    expect(gate(s, { today_bytes: 10 * MB, cycle_bytes: 1000 * MB, roaming: false })).toMatchObject({ paused: true, why: 'cap_monthly' });
  });

  it('the daily cap wins over the monthly one when both are reached', () => {
    const s = { ...agreed, daily_cap_bytes: 10 * MB, monthly_cap_bytes: 100 * MB };
    expect(gate(s, { today_bytes: 20 * MB, cycle_bytes: 200 * MB, roaming: false }).why).toBe('cap_daily');
  });

  it('does not pause on a cap it cannot measure, and says so', () => {
    const g = gate({ ...agreed, daily_cap_bytes: 10 * MB }, { today_bytes: null, cycle_bytes: null, roaming: null });
    expect(g).toMatchObject({ paused: false, why: 'none', daily: null });
    expect(g.message).toMatch(/not measured/);
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
    [{ monthly_cap_bytes: -1 }, /monthly_cap_bytes/],
    [{ monthly_cap_bytes: 1.5e9 + 0.5 }, /monthly_cap_bytes/],
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
