import { describe, expect, it } from 'vitest';
import type { HostStatus } from '../src/host';
import type { TabRecord } from '../src/pages';
import type { StatusReply } from '../src/protocol';
import { HELPER_COMMAND, MPTCPIZE_COMMAND, NOT_MEASURED, bytes, healthItems, hostRows, pageRows, pathViews, rrcText, usageText } from '../src/view';
import { ProtocolError, parseStatusReply } from '../src/protocol';

const status: HostStatus = {
  host: 'connected',
  detail: 'mpsurf-host 0.1.0, protocol 1',
  since: 1_000,
  hostVersion: '0.1.0',
  policy: {
    revision: 2,
    multipath: true,
    theta1: 200_000,
    theta2: 5_000_000,
    deadline_ms: 3000,
    reason: 'both paths up',
    model: { id: 'baseline-seed001', version: 1 },
  },
  lastDecisionAt: 0,
  reconnects: 1,
};

const page: TabRecord = {
  tab: 1,
  nav: '1-1',
  origin: 'https://example.com',
  source: 'host',
  stale: false,
  multipath: true,
  theta1: 200_000,
  theta2: null,
  deadline_ms: 3000,
  reason: 'page over θ1',
  model: { id: 'baseline-seed001', version: 1 },
  inputs: {},
  header: 'v=1, mp, t1=256, dl=3',
  navStartedAt: 10,
  decidedAt: 11.5,
  ruleInstalledAt: 12.25,
  completedAt: null,
};

describe('popup text', () => {
  it('formats byte counts', () => {
    expect([bytes(null), bytes(512), bytes(200_000), bytes(1_500_000)]).toEqual(['no cap', '512 B', '200 kB', '1.5 MB']);
  });

  it('describes the host and the network policy', () => {
    const rows = Object.fromEntries(hostRows(status, 4_000));
    expect(rows.Host).toBe('connected for 3 s');
    expect(rows.Network).toBe('multipath; θ1 200 kB, θ2 5 MB, T 3 s');
    expect(rows.Model).toBe('baseline-seed001 v1, policy revision 2');
    expect(rows.Reconnects).toBe('1');
    const off = Object.fromEntries(hostRows({ ...status, host: 'missing', policy: null }, 4_000));
    expect(off.Host).toMatch(/^not installed/);
    expect(off.Network).toMatch(/no Multipath-Policy header/);
  });

  it('describes the page’s decision, and says so when it was withdrawn or absent', () => {
    const rows = Object.fromEntries(pageRows(page));
    expect(rows).toMatchObject({
      Origin: 'https://example.com',
      Mode: 'multipath',
      Why: 'page over θ1',
      'Decided by': 'host, model baseline-seed001 v1',
      Header: 'v=1, mp, t1=256, dl=3',
      'Rule ready': '2.3 ms after navigation start',
    });
    expect(Object.fromEntries(pageRows({ ...page, stale: true })).Mode).toMatch(/withdrawn/);
    expect(Object.fromEntries(pageRows({ ...page, source: 'none', header: null, theta1: null })).Mode).toBe('no header sent');
    expect(pageRows(null)[0]![1]).toMatch(/none yet/);
  });
});

describe('health items', () => {
  const ok = { state: 'ok' as const, detail: '', at: 1 };
  const settings = { prefs: {} as never, optedIn: [], prefsSync: { ...ok, hostPrefs: null }, problem: null };
  const hostReply = (extra: Partial<StatusReply>): StatusReply => ({
    host: 'mpsurf-host',
    version: '0.1.0',
    protocol: 1,
    pid: 1,
    uptime_ms: 1,
    decisions: 0,
    policy: status.policy!,
    paths: [],
    ...extra,
  });
  const items = (extra: Partial<StatusReply>) =>
    healthItems({ status, host: hostReply(extra), hostError: null, settings, reports: ok });

  it('says unknown when the host does not report the browser’s sockets', () => {
    const it = items({}).find((x) => x.title.startsWith('Browser sockets'))!;
    expect(it.level).toBe('unknown');
    expect(it.command).toBe(MPTCPIZE_COMMAND);
  });

  it('warns with the fix when the browser is not under mptcpize, and is quiet when it is', () => {
    const plain = items({ browser_mptcp: { wrapped: false, detail: 'plain TCP' } }).find((x) => x.title.startsWith('Browser sockets'))!;
    expect(plain.level).toBe('warn');
    expect(plain.command).toBe(MPTCPIZE_COMMAND);
    const wrapped = items({ browser_mptcp: { wrapped: true, detail: 'under mptcpize' } }).find((x) => x.title.startsWith('Browser sockets'))!;
    expect(wrapped.level).toBe('ok');
    expect(wrapped.command).toBeUndefined();
  });

  it('reports the helper: running, unreachable with the command to start it, or not configured', () => {
    const helper = (a: StatusReply['actuator']) => items({ actuator: a }).find((x) => x.title.includes('Helper'))!;
    expect(helper({ state: 'connected', backend: 'userspace', detail: '/run/mpsurf/actuator.sock' })).toMatchObject({ level: 'ok', title: 'Helper running (userspace)' });
    expect(helper({ state: 'unavailable', detail: 'connection refused' })).toMatchObject({ level: 'bad', command: HELPER_COMMAND });
    expect(helper({ state: 'not_configured', detail: 'MPSURF_ACTUATOR is not set' })).toMatchObject({ level: 'warn', command: HELPER_COMMAND });
    expect(items({}).some((x) => x.title.includes('Helper'))).toBe(false);
  });
});

describe('cellular usage line', () => {
  const reply = (usage?: StatusReply['usage']): StatusReply => ({
    host: 'mpsurf-host', version: '0.1.0', protocol: 1, pid: 1, uptime_ms: 1, decisions: 0, policy: status.policy!, ...(usage ? { usage } : {}),
  });
  it('shows what the host measured, against the quota when there is one', () => {
    const since = Date.UTC(2026, 10, 1);
    expect(usageText(reply({ interface: 'wwan0', since_ms: since, used_bytes: 1_500_000, quota_bytes: null }), '')).toBe('1.5 MB since 2026-11-01, on wwan0');
    expect(usageText(reply({ interface: 'wwan0', since_ms: since, used_bytes: 1_500_000, quota_bytes: 3_000_000 }), '')).toBe('1.5 MB of 3 MB (50 %) since 2026-11-01, on wwan0');
  });
  it('says why when nothing is measured', () => {
    expect(usageText(null, 'missing')).toMatch(/not measured yet.*missing/);
    expect(usageText(reply(), '')).toMatch(/does not report/);
  });
});

describe('radio state line', () => {
  const reply = (rrc: unknown) =>
    parseStatusReply({ host: 'mpsurf-host', version: '0.1.0', protocol: 1, pid: 1, uptime_ms: 1, decisions: 0, policy: status.policy!, rrc });
  const rrc = { interface: 'wwan0', tech: 'lte', state: 'idle', since_ms: 10_000, source: 'inferred' };
  it('names the state, and what the host weighs when it is unsure', () => {
    expect(rrcText(reply(rrc), 12_000)).toBe('idle on wwan0 (LTE, inferred) for 2 s');
    const spread = [{ state: 'idle', since_ms: 10_000, p: 0.4 }, { state: 'long_drx', since_ms: 11_000, p: 0.6 }];
    expect(rrcText(reply({ ...rrc, spread }), 12_000)).toBe('idle on wwan0 (LTE, inferred) for 2 s; unsure (traffic no host saw): idle 40 %, long_drx 60 %');
  });
  it('refuses a spread that is not one', () => {
    expect(() => reply({ ...rrc, spread: [{ state: 'idle', since_ms: 1, p: 1.5 }] })).toThrow(/spread\[0\]\.p/);
    expect(() => reply({ ...rrc, spread: 'idle' })).toThrow(/spread: expected an array/);
  });
});

describe('path gauges', () => {
  const reply = (paths: unknown[]) =>
    parseStatusReply({ host: 'mpsurf-host', version: '0.1.0', protocol: 1, pid: 1, uptime_ms: 1, decisions: 0, policy: status.policy!, paths });
  const path = { name: 'wwan0', kind: 'cellular', up: true, addrs: [], rtt_ms: 70, down_bps: 9.2e6, up_bps: null, loss: null, rtt_source: 'passive' };
  it('says how old a rate is when the host says so, and nothing when it does not', () => {
    const down = (p: object) => pathViews(reply([p]))?.[0]?.gauges.find((g) => g.label === 'Down')?.value;
    expect(down({ ...path, down_age_ms: 12_400 })).toBe('9.2 Mbit/s, measured 12 s ago');
    expect(down({ ...path, down_age_ms: 300_000 })).toBe('9.2 Mbit/s, measured 5 min ago');
    expect(down({ ...path, down_age_ms: 200 })).toBe('9.2 Mbit/s, measured now');
    expect(down(path)).toBe('9.2 Mbit/s');
    expect(down({ ...path, down_bps: null, down_age_ms: 5000 })).toBe(NOT_MEASURED);
  });
  it('refuses an age that is not a sane integer', () => {
    for (const bad of [-1, 1.5, 'soon', 1e15]) expect(() => reply([{ ...path, down_age_ms: bad }])).toThrow(ProtocolError);
  });
});
