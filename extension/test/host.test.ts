import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  BACKOFF_MAX_MS,
  DECIDE_TIMEOUT_MS,
  HELLO_TIMEOUT_MS,
  HostLink,
  RequestError,
  backoffDelay,
  classifyDisconnect,
  EXITED_FIREFOX,
  type HostStatus,
} from '../src/host';
import type { Policy } from '../src/protocol/decide';
import { ErrorCode } from '../src/protocol/envelope';
import { FakePort } from './fakes';

const NOT_FOUND = 'Specified native messaging host not found.';
const EXITED = 'Native host has exited.';

const policy: Policy = {
  revision: 1,
  multipath: true,
  theta1: 200_000,
  theta2: null,
  deadline_ms: 3000,
  reason: 'both paths up',
  model: { id: 'baseline-seed001', version: 1 },
};

function helloReply(id: number, p: Policy = policy) {
  return { v: 1, id, type: 'hello', ok: true, body: { host: 'mpsurf-host', version: '0.1.0', protocol: 1, policy: p } };
}

/** A HostLink on fake ports; `ports` holds every port it opened, in order. */
function setup() {
  const ports: FakePort[] = [];
  const statuses: HostStatus[] = [];
  const policies: (Policy | null)[] = [];
  const link = new HostLink({
    connect: () => {
      const p = new FakePort();
      ports.push(p);
      return p;
    },
    version: '0.1.0',
    events: { status: (s) => statuses.push(s), policy: (p) => policies.push(p) },
  });
  const live = () => ports.filter((p) => p.connected);
  /** Answers the hello on the newest port. */
  const greet = (p: Policy = policy) => {
    const port = ports.at(-1)!;
    const hello = port.sent.find((m) => m.type === 'hello')!;
    port.deliver(helloReply(hello.id as number, p));
  };
  return { link, ports, statuses, policies, live, greet };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('backoff and disconnect reasons', () => {
  it('starts at 200 ms, doubles, and stops at 30 s', () => {
    const schedule = Array.from({ length: 12 }, (_, i) => backoffDelay(i));
    expect(schedule).toEqual([200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000, 30000]);
    expect(backoffDelay(1000)).toBe(BACKOFF_MAX_MS);
    expect(() => backoffDelay(-1)).toThrow(RangeError);
  });

  it('maps Chrome’s messages to statuses', () => {
    expect(classifyDisconnect(NOT_FOUND).host).toBe('missing');
    // Firefox's wordings: a host it cannot find, and a port closed without an error (browser.ts).
    expect(classifyDisconnect('No such native application org.mpsurf.host').host).toBe('missing');
    expect(classifyDisconnect('No such native application org.mpsurf.host; and more').host).toBe('error');
    expect(classifyDisconnect(EXITED_FIREFOX).host).toBe('exited');
    expect(classifyDisconnect('This extension does not have permission to use native application org.mpsurf.host').host).toBe('error');
    expect(classifyDisconnect(EXITED).host).toBe('exited');
    expect(classifyDisconnect('Access to the specified native messaging host is forbidden.')).toEqual({
      host: 'error',
      detail: 'Access to the specified native messaging host is forbidden.',
    });
    expect(classifyDisconnect(undefined).host).toBe('error');
  });
});

describe('HostLink', () => {
  it('says hello on connect and is connected with the policy from the reply', () => {
    const { link, ports, policies, greet } = setup();
    link.start();
    expect(link.status().host).toBe('connecting');
    expect(ports).toHaveLength(1);
    expect(ports[0]!.sent[0]).toEqual({
      v: 1,
      id: 1,
      type: 'hello',
      body: { client: 'mpsurf-extension', version: '0.1.0', protocols: [1] },
    });
    greet();
    const s = link.status();
    expect(s).toMatchObject({ host: 'connected', hostVersion: '0.1.0', policy, reconnects: 0, lastDecisionAt: 0 });
    expect(policies).toEqual([policy]);
  });

  it('whenConnected resolves when the host is connected, or at once with what it is, or false after the wait', async () => {
    const { link, greet } = setup();
    link.start();
    const waiting = link.whenConnected(1_000);
    greet();
    expect(await waiting).toBe(true);
    expect(await link.whenConnected(1_000)).toBe(true);
    link.stop();
    expect(await link.whenConnected(1_000)).toBe(false);
    const other = setup();
    other.link.start();
    const still = other.link.whenConnected(50);
    await vi.advanceTimersByTimeAsync(60);
    expect(await still).toBe(false);
  });

  it('answers decide with a validated decision and records when', async () => {
    const { link, ports, greet } = setup();
    link.start();
    greet();
    vi.setSystemTime(1_700_000_000_000);
    const pending = link.decide({ origin: 'https://example.com', tab: 4, nav: '4-1' });
    const req = ports[0]!.last();
    expect(req).toMatchObject({ v: 1, type: 'decide', body: { origin: 'https://example.com', tab: 4, nav: '4-1' } });
    const { revision: _r, ...fields } = policy;
    ports[0]!.deliver({
      v: 1,
      id: req.id,
      type: 'decide',
      ok: true,
      body: { ...fields, origin: 'https://example.com', tab: 4, nav: '4-1', inputs: {} },
    });
    await expect(pending).resolves.toMatchObject({ origin: 'https://example.com', multipath: true });
    expect(link.status().lastDecisionAt).toBe(1_700_000_000_000);
  });

  it('gives up on a decide after 2 s, and ignores the late reply', async () => {
    const { link, ports, greet } = setup();
    link.start();
    greet();
    const pending = link.decide({ origin: 'https://example.com', tab: 4, nav: '4-1' });
    const id = ports[0]!.last().id;
    const settled = expect(pending).rejects.toMatchObject({ kind: 'timeout' });
    vi.advanceTimersByTime(DECIDE_TIMEOUT_MS - 1);
    vi.advanceTimersByTime(1);
    await settled;
    ports[0]!.deliver({ v: 1, id, type: 'decide', ok: true, body: {} });
    expect(link.late).toBe(1);
    expect(link.status().host).toBe('connected');
  });

  it('turns a host error into a RequestError with the §6 code', async () => {
    const { link, ports, greet } = setup();
    link.start();
    greet();
    const pending = link.decide({ origin: 'https://a.example', tab: 1, nav: '1-1' });
    const id = ports[0]!.last().id;
    ports[0]!.deliver({ v: 1, id, type: 'decide', ok: false, error: { code: 9, name: 'bad_origin', message: 'no' } });
    const e = (await pending.catch((x: unknown) => x)) as RequestError;
    expect(e).toBeInstanceOf(RequestError);
    expect(e.kind).toBe('host');
    expect(e.wire?.code).toBe(ErrorCode.BadOrigin);
  });

  it('refuses a decision for another tab or origin as a bad reply', async () => {
    const { link, ports, greet } = setup();
    link.start();
    greet();
    const pending = link.decide({ origin: 'https://a.example', tab: 1, nav: '1-1' });
    const { revision: _r, ...fields } = policy;
    ports[0]!.deliver({
      v: 1,
      id: ports[0]!.last().id,
      type: 'decide',
      ok: true,
      body: { ...fields, origin: 'https://b.example', tab: 1, nav: '1-1', inputs: {} },
    });
    await expect(pending).rejects.toMatchObject({ kind: 'bad_reply' });
    expect(link.rejected).toBe(1);
  });

  it('rejects requests at once while not connected', async () => {
    const { link } = setup();
    await expect(link.decide({ origin: 'https://a.example', tab: 1, nav: '1' })).rejects.toMatchObject({ kind: 'disconnected' });
    link.start();
    await expect(link.decide({ origin: 'https://a.example', tab: 1, nav: '1' })).rejects.toMatchObject({ kind: 'disconnected' });
  });

  it.each([
    [NOT_FOUND, 'missing'],
    [EXITED, 'exited'],
    ['Error when communicating with the native messaging host.', 'error'],
  ] as const)('a port closed with "%s" gives status %s, fails pending requests and drops the policy', async (msg, state) => {
    const { link, ports, policies, greet } = setup();
    link.start();
    greet();
    const pending = link.decide({ origin: 'https://a.example', tab: 1, nav: '1' });
    ports[0]!.close(msg);
    await expect(pending).rejects.toMatchObject({ kind: 'disconnected' });
    const s = link.status();
    expect(s.host).toBe(state);
    expect(s.detail).toContain(msg);
    expect(s.policy).toBeNull();
    expect(s.hostVersion).toBeNull();
    expect(policies).toEqual([policy, null]);
  });

  it('reconnects with backoff, one port at a time, and resets the backoff after a hello', () => {
    const { link, ports, live, greet } = setup();
    link.start();
    // The host is missing: every attempt fails at once.
    const gaps: number[] = [];
    for (let i = 0; i < 9; i++) {
      ports.at(-1)!.close(NOT_FOUND);
      const n = ports.length;
      let waited = 0;
      while (ports.length === n) {
        vi.advanceTimersByTime(100);
        waited += 100;
        expect(live().length).toBeLessThanOrEqual(1);
      }
      gaps.push(waited);
    }
    expect(gaps).toEqual([200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000]);
    expect(link.status().reconnects).toBe(9);
    greet();
    expect(link.status().host).toBe('connected');
    ports.at(-1)!.close(EXITED);
    vi.advanceTimersByTime(199);
    expect(ports).toHaveLength(10);
    vi.advanceTimersByTime(1);
    expect(ports).toHaveLength(11);
    expect(live()).toHaveLength(1);
  });

  it('status walks connecting → connected → exited → connecting → missing', () => {
    const { link, ports, statuses, greet } = setup();
    link.start();
    greet();
    ports[0]!.close(EXITED);
    vi.advanceTimersByTime(200);
    ports[1]!.close(NOT_FOUND);
    const walk = statuses.map((s) => s.host).filter((h, i, a) => i === 0 || a[i - 1] !== h);
    expect(walk).toEqual(['connecting', 'connected', 'exited', 'connecting', 'missing']);
    expect(link.status().detail).toMatch(/not installed/);
  });

  it('drops a host that does not answer hello within the hello timeout, and disconnects its port', () => {
    const { link, ports } = setup();
    link.start();
    vi.advanceTimersByTime(HELLO_TIMEOUT_MS);
    expect(link.status()).toMatchObject({ host: 'error' });
    expect(link.status().detail).toMatch(/hello/);
    expect(ports[0]!.connected).toBe(false);
    vi.advanceTimersByTime(200);
    expect(ports).toHaveLength(2);
  });

  it('drops a host whose hello reply is malformed or an error', () => {
    const { link, ports } = setup();
    link.start();
    ports[0]!.deliver({ ...helloReply(1), body: { host: 'mpsurf-host', version: '0.1.0', protocol: 1, policy: { revision: 1 } } });
    expect(link.status().host).toBe('error');
    expect(link.status().detail).toMatch(/bad hello reply: hello\.policy/);
    vi.advanceTimersByTime(200);
    const hello = ports[1]!.last();
    ports[1]!.deliver({ v: 1, id: hello.id, type: 'hello', ok: false, error: { code: 6, name: 'unsupported_version', message: 'x' } });
    expect(link.status().host).toBe('error');
    expect(link.status().detail).toMatch(/unsupported_version/);
  });

  it('takes policy pushes with a newer revision only, and validates them', () => {
    const { link, ports, policies, greet } = setup();
    link.start();
    greet();
    const push = (p: unknown) => ports[0]!.deliver({ v: 1, type: 'policy', push: true, body: p });
    const p2 = { ...policy, revision: 2, multipath: false, reason: 'cellular path down' };
    push(p2);
    push({ ...policy, revision: 2, reason: 'same revision again' });
    push({ ...policy, revision: 1 });
    push({ ...policy, revision: 3, deadline_ms: 1 });
    push({ ...policy, revision: 3, theta1: 'lots' });
    expect(policies).toEqual([policy, p2]);
    expect(link.status().policy).toEqual(p2);
    expect(link.rejected).toBe(2);
  });

  it('ignores garbage, unknown pushes and replies to nobody without dropping the host', () => {
    const { link, ports, greet } = setup();
    link.start();
    greet();
    for (const m of [null, 'x', [], { v: 2 }, { v: 1, type: 'news', push: true, body: {} }, { v: 1, id: 999, type: 'decide', ok: true, body: {} }]) {
      ports[0]!.deliver(m);
    }
    ports[0]!.deliver({ v: 1, id: 0, type: 'error', ok: false, error: { code: 4, name: 'bad_json', message: 'x' } });
    expect(link.status().host).toBe('connected');
  });

  it('ignores events from a port it has replaced', () => {
    const { link, ports, greet } = setup();
    link.start();
    ports[0]!.close(EXITED);
    vi.advanceTimersByTime(200);
    greet();
    ports[0]!.close('late close of the old port');
    ports[0]!.deliver(helloReply(1, { ...policy, revision: 9 }));
    expect(link.status()).toMatchObject({ host: 'connected', policy });
  });

  it('stop() disconnects and never reconnects', () => {
    const { link, ports, greet } = setup();
    link.start();
    greet();
    link.stop();
    expect(ports[0]!.connected).toBe(false);
    vi.advanceTimersByTime(60_000);
    expect(ports).toHaveLength(1);
  });
});
