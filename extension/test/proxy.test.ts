import { describe, expect, it } from 'vitest';
import { ProxyRouter, RETRY_DOWN_MS, worthRelay } from '../src/proxy';
import { scriptOf } from '../src/pac';
import type { ProxyStatus, ProxyTestResult } from '../src/protocol/proxy';
import { vectors } from './vectors';

function status(over: Partial<ProxyStatus> = {}): ProxyStatus {
  return {
    configured: true,
    server: 'proxy.example:8443',
    user: 'mpsurf',
    pin: null,
    file: '/home/u/.config/mpsurf/proxy.json',
    state: 'unknown',
    detail: 'no tunnel yet',
    since_ms: 0,
    software: null,
    relay: { host: '127.0.0.1', port: 40000, user: 'mpsurf', password: 'secret' },
    stats: { tunnels_open: 0, tunnels: 0, failures: 0, tunnels_direct: 0 },
    usage: [],
    routes: [],
    direct: [],
    unreachable: [],
    ...over,
  };
}

function router() {
  const pacs: (string | null)[] = [];
  const timers: { fn: () => void; ms: number }[] = [];
  let test: ProxyTestResult = { ok: true, stage: 'done', detail: 'ok', software: 'squid/5.7', mptcp: true, subflows: 2, cell_subflow: true, helper: 'ok', status: 503, elapsed_ms: 300 };
  const r = new ProxyRouter({
    apply: async (t) => {
      pacs.push(t && scriptOf(t));
    },
    test: async () => test,
    now: () => 1000,
    setTimer: (fn, ms) => {
      timers.push({ fn, ms });
      return timers.length;
    },
    clearTimer: () => undefined,
  });
  return { r, pacs, timers, setTest: (t: ProxyTestResult) => (test = t) };
}

const last = (xs: (string | null)[]) => xs[xs.length - 1];

describe('ProxyRouter', () => {
  it('routes nothing while paused (before consent), then every https host but those not worth the relay', async () => {
    const { r, pacs } = router();
    await r.statusChanged(status());
    await r.decision('https://big.example', true);
    await r.decision('https://small.example', false);
    expect(pacs.every((p) => p === null)).toBe(true);
    await r.setPaused(false);
    const pac = last(pacs) as string;
    expect(pac).toContain('"small.example":1');
    expect(pac).not.toContain('big.example');
    expect(r.viaProxy('https://big.example')).toBe(true);
    expect(r.viaProxy('https://never-seen.example')).toBe(true);
    expect(r.viaProxy('https://small.example')).toBe(false);
    expect(r.viaProxy('https://big.example:8443')).toBe(false);
    expect(r.viaProxy('http://big.example')).toBe(false);
    expect(r.viaProxy('https://printer.local')).toBe(false);
    expect(r.view().direct).toBe(1);
    // A decision flipping to worth it brings the host back to the relay; the PAC stays (every other host uses it).
    await r.decision('https://small.example', true);
    expect(last(pacs)).not.toBeNull();
    expect(last(pacs)).not.toContain('small.example');
    expect(r.viaProxy('https://small.example')).toBe(true);
  });

  it('gives a page’s other hosts the page’s route, and nothing for a page without one', async () => {
    const { r, pacs } = router();
    await r.setPaused(false);
    await r.statusChanged(status());
    await r.decision('https://small.example', false);
    await r.follow('https://small.example', ['cdn.example', 'Img.Example.', '"bad']);
    expect(r.viaProxy('https://cdn.example')).toBe(false);
    expect(r.viaProxy('https://img.example')).toBe(false);
    expect(last(pacs)).toContain('"cdn.example":1');
    await r.follow('https://unknown.example', ['other.example']);
    expect(r.viaProxy('https://other.example')).toBe(true);
    await r.decision('https://big.example', true);
    await r.follow('https://big.example', ['cdn.example']);
    expect(r.viaProxy('https://cdn.example')).toBe(true);
  });

  it('starts from the routes the host remembers, and sends everything with "all"', async () => {
    const { r, pacs } = router();
    await r.setPaused(false);
    await r.statusChanged(status({ routes: ['news.example'], direct: ['tiny.example'] }));
    expect(last(pacs)).toContain('"tiny.example":1');
    expect(r.viaProxy('https://news.example')).toBe(true);
    expect(r.viaProxy('https://tiny.example')).toBe(false);
    await r.setRoute('all');
    expect(last(pacs)).toContain('var ALL = true');
    expect(r.viaProxy('https://anything.example')).toBe(true);
    expect(r.viaProxy('https://tiny.example')).toBe(true);
    await r.setRoute('off');
    expect(last(pacs)).toBeNull();
  });

  it('takes the proxy out at once when the host reports it down, says why, and brings it back after a good test', async () => {
    const { r, pacs, timers } = router();
    await r.setPaused(false);
    await r.statusChanged(status({ routes: ['news.example'] }));
    expect(last(pacs)).not.toBeNull();
    await r.statusChanged(status({ state: 'down', detail: 'connect to the proxy: i/o timeout', routes: ['news.example'] }));
    expect(last(pacs)).toBeNull();
    const v = r.view();
    expect(v.fallback?.reason).toMatch(/down: connect to the proxy: i\/o timeout; every site goes DIRECT/);
    expect(r.viaProxy('https://news.example')).toBe(false);
    expect(timers.map((t) => t.ms)).toEqual([RETRY_DOWN_MS]);
    // The retry's test succeeds: the route is back.
    timers[0]?.fn();
    await new Promise((res) => setTimeout(res, 0));
    await r.sync();
    expect(r.view().fallback).toBeNull();
    expect(last(pacs)).not.toBeNull();
    expect(r.viaProxy('https://news.example')).toBe(true);
  });

  it('keeps the proxy out while tests fail, retrying', async () => {
    const { r, pacs, timers, setTest } = router();
    await r.setPaused(false);
    await r.statusChanged(status({ routes: ['a.example'] }));
    setTest({ ok: false, stage: 'connect', detail: 'refused', software: null, mptcp: false, subflows: 0, cell_subflow: false, helper: '', status: 0, elapsed_ms: 1 });
    await r.statusChanged(status({ state: 'down', detail: 'refused', routes: ['a.example'] }));
    timers[0]?.fn();
    await new Promise((res) => setTimeout(res, 0));
    await new Promise((res) => setTimeout(res, 0));
    expect(last(pacs)).toBeNull();
    expect(timers.length).toBe(2);
  });

  it('answers only the relay’s own challenge, at most twice per request', () => {
    const { r } = router();
    void r.statusChanged(status());
    const relay = { host: '127.0.0.1', port: 40000 };
    expect(r.auth('1', true, relay)).toEqual({ username: 'mpsurf', password: 'secret' });
    expect(r.auth('1', true, relay)).not.toBeNull();
    expect(r.auth('1', true, relay)).toBeNull();
    expect(r.auth('2', false, relay)).toBeNull(); // a site's own 401
    expect(r.auth('3', true, { host: '127.0.0.1', port: 40001 })).toBeNull();
    expect(r.auth('4', true, { host: 'proxy.example', port: 8443 })).toBeNull();
  });

  it('keeps hosts the proxy could not reach DIRECT, whatever their decisions say', async () => {
    const { r, pacs } = router();
    await r.setPaused(false);
    await r.statusChanged(status({ unreachable: ['intranet.example'] }));
    await r.decision('https://intranet.example', true);
    expect(r.viaProxy('https://intranet.example')).toBe(false);
    expect(last(pacs)).toContain('"intranet.example":1');
    // A new host process knows nothing of it: the host goes back to the relay.
    await r.statusChanged(status());
    expect(r.viaProxy('https://intranet.example')).toBe(true);
  });

  // The host's rule (native-host/protocol WorthRelay) on the same cases: what the extension routes DIRECT from a decide
  // reply on is what the host lists as direct.
  it('says which decisions are worth the relay as the host does (vectors/relay.json)', () => {
    const { cases } = vectors<{ cases: { name: string; multipath: boolean; theta1: number | null; size_known: boolean; worth: boolean }[] }>('relay.json');
    expect(cases.length).toBeGreaterThan(0);
    for (const c of cases) {
      const size = { known: c.size_known, median: c.size_known ? 20_000 : null, p90: null, samples: c.size_known ? 1 : 0, source: '' };
      expect(worthRelay({ multipath: c.multipath, theta1: c.theta1, size }), c.name).toBe(c.worth);
    }
  });

  it('says which decisions are worth the relay', () => {
    const size = (known: boolean) => ({ known, median: known ? 20_000 : null, p90: null, samples: known ? 1 : 0, source: '' });
    expect(worthRelay({ multipath: true, theta1: 0, size: size(true) })).toBe(true);
    // Never seen: the relay holds it on WiFi until θ1, and a large page gets its subflow.
    expect(worthRelay({ multipath: false, theta1: 400_000, size: size(false) })).toBe(true);
    expect(worthRelay({ multipath: false, theta1: 400_000 })).toBe(true);
    // Known to stay under θ1, or θ1 never (a site rule, a pause, a cap, h3): DIRECT.
    expect(worthRelay({ multipath: false, theta1: 400_000, size: size(true) })).toBe(false);
    expect(worthRelay({ multipath: false, theta1: null, size: size(false) })).toBe(false);
    expect(worthRelay({ multipath: false, theta1: null })).toBe(false);
  });

  it('routes nothing without a relay (host gone)', async () => {
    const { r, pacs } = router();
    await r.setPaused(false);
    await r.statusChanged(status({ routes: ['a.example'] }));
    await r.statusChanged(null);
    expect(last(pacs)).toBeNull();
    expect(r.auth('1', true, { host: '127.0.0.1', port: 40000 })).toBeNull();
  });
});
