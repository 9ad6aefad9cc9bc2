import { describe, expect, it } from 'vitest';
import type { HostStatus } from '../src/host';
import { Multipath, cellularNow } from '../src/multipath';
import { ProxyRouter } from '../src/proxy';
import type { Request } from '../src/protocol/envelope';
import type { StatusReply } from '../src/protocol/status';

const connected: HostStatus = { host: 'connected', detail: '', since: 0, hostVersion: '0.1.0', policy: null, lastDecisionAt: 0, reconnects: 0 };

function setup() {
  const sent: Request[] = [];
  const saved: unknown[] = [];
  let state: HostStatus = { ...connected, host: 'connecting' };
  const proxy = new ProxyRouter({ apply: async () => undefined, test: async () => Promise.reject(new Error('no')), now: () => 0, setTimer: () => 0, clearTimer: () => undefined });
  const m = new Multipath({
    host: {
      status: () => state,
      request: async <T,>(build: (id: number) => Request, parse: (b: unknown) => T) => {
        const req = build(sent.length + 1);
        sent.push(req);
        return parse(req.body);
      },
    },
    save: async (_k, v) => {
      saved.push(v);
    },
    proxy,
  });
  return { m, sent, saved, connect: () => (state = connected) };
}

const usage = (today: number, cycle: number): StatusReply =>
  ({ usage: { interface: 'wwan0', since_ms: 0, used_bytes: cycle, quota_bytes: null, today_bytes: today } }) as unknown as StatusReply;

describe('Multipath', () => {
  it('tells a new host "paused: consent" first, and "none" once the user agrees', async () => {
    const { m, sent, connect } = setup();
    m.restore(undefined);
    connect();
    await m.hostChanged(connected);
    expect(sent.map((r) => r.body)).toEqual([{ paused: true, why: 'consent' }]);
    await m.consent(123);
    expect(sent.map((r) => r.body)).toEqual([{ paused: true, why: 'consent' }, { paused: false, why: 'none' }]);
    expect(m.view().hostApplied).toBe(true);
    // A reconnected host hears it again.
    await m.hostChanged(connected);
    expect(sent.at(-1)?.body).toEqual({ paused: false, why: 'none' });
  });

  it('pauses when a cap is reached and resumes the next day', async () => {
    const { m, sent, connect } = setup();
    m.restore({ consent_at: 1, daily_cap_bytes: 10_000_000 });
    connect();
    await m.hostChanged(connected);
    await m.usage(usage(9_000_000, 9_000_000));
    expect(m.view().gate.warnings[0]).toMatch(/^90 % of today's cellular data used/);
    expect(sent.at(-1)?.body).toEqual({ paused: false, why: 'none' });
    await m.usage(usage(10_500_000, 10_500_000));
    expect(sent.at(-1)?.body).toEqual({ paused: true, why: 'cap_daily' });
    await m.usage(usage(0, 10_500_000));
    expect(sent.at(-1)?.body).toEqual({ paused: false, why: 'none' });
  });

  it('one-click pause and resume are stored and sent', async () => {
    const { m, sent, saved, connect } = setup();
    m.restore({ consent_at: 1 });
    connect();
    await m.hostChanged(connected);
    await m.pause(true);
    expect(sent.at(-1)?.body).toEqual({ paused: true, why: 'user' });
    expect(saved.at(-1)).toMatchObject({ paused: true });
    await m.pause(false);
    expect(sent.at(-1)?.body).toEqual({ paused: false, why: 'none' });
  });

  it('a change before the stored settings are read waits for them', async () => {
    const { m, saved } = setup();
    const p = m.pause(true);
    m.restore({ consent_at: 42, route: 'all' });
    await p;
    expect(saved.at(-1)).toMatchObject({ consent_at: 42, route: 'all', paused: true });
  });

  it('tells the rules and badges of every gate, at once, and takes the monthly limit from the plan', async () => {
    const gates: boolean[] = [];
    let plan = { monthly_bytes: null as number | null, billing_day: 1 };
    const proxy = new ProxyRouter({ apply: async () => undefined, test: async () => Promise.reject(new Error('no')), now: () => 0, setTimer: () => 0, clearTimer: () => undefined });
    const m = new Multipath({
      host: { status: () => connected, request: async <T,>(build: (id: number) => Request, parse: (b: unknown) => T) => parse(build(1).body) },
      save: async () => undefined,
      proxy,
      plan: () => plan,
      gateChanged: (g) => {
        gates.push(g.paused);
      },
    });
    m.restore(undefined);
    expect(gates).toEqual([true]); // no consent yet: paused from the very start
    await m.consent(1);
    expect(gates.at(-1)).toBe(false);
    await m.usage(usage(0, 900_000_000));
    plan = { monthly_bytes: 1_000_000_000, billing_day: 1 };
    await m.planChanged();
    expect(m.view().gate.warnings[0]).toMatch(/^90 % of this month's cellular data used/);
    plan = { monthly_bytes: 800_000_000, billing_day: 1 };
    await m.planChanged();
    expect(m.view().gate.why).toBe('cap_monthly');
    expect(gates.at(-1)).toBe(true);
  });

  it('reads usage and roaming from the host status', () => {
    expect(cellularNow(null)).toEqual({ today_bytes: null, cycle_bytes: null, roaming: null });
    const s = { ...usage(5, 7), network: { metered: 'yes', roaming: true, source: 'x', detail: '' } } as unknown as StatusReply;
    expect(cellularNow(s)).toEqual({ today_bytes: 5, cycle_bytes: 7, roaming: true });
  });
});
