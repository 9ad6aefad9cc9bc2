import { describe, expect, it } from 'vitest';
import { Counters } from '../src/counters';
import type { Report } from '../src/protocol/records';
import { RECENT_LOADS } from '../src/reports';

const report = (nav: string): Report => ({ origin: 'https://a.example', tab: 1, nav, protocol: 'h2', transfer_bytes: 1000, plt_ms: 100, multipath: null });

describe('Counters', () => {
  it('notes a load once per navigation and keeps the most recent ones', () => {
    const c = new Counters();
    expect(c.load(report('1-1'), 10)).toBe(true);
    expect(c.load(report('1-1'), 20)).toBe(false);
    for (let i = 2; i <= RECENT_LOADS + 5; i++) c.load(report(`1-${i}`), 10 * i);
    expect(c.loads).toHaveLength(RECENT_LOADS);
    expect(c.loads.at(-1)).toMatchObject({ at: 10 * (RECENT_LOADS + 5), origin: 'https://a.example', plt_ms: 100 });
    expect(c.loads[0]!.at).toBe(60);
  });
});
