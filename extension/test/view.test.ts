import { describe, expect, it } from 'vitest';
import type { HostStatus } from '../src/host';
import type { TabRecord } from '../src/pages';
import { bytes, hostRows, pageRows } from '../src/view';

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
