import { describe, expect, it } from 'vitest';
import { headerValue } from '../src/header';
import { RequestError, type HostStatus } from '../src/host';
import { BADGE_MP, BADGE_OFF, MAX_HELD_REPORTS, Pages, REPORT_HOLD_MS, badgeFor, type BadgeView } from '../src/pages';
import { buildReport, type ContentSender, type LoadTiming } from '../src/reports';
import type { DecideArgs, Decision, Policy } from '../src/protocol/decide';
import { NETWORK_RULE_ID, PRIORITY_ORIGIN, PRIORITY_TAB, RuleBook } from '../src/rules';
import { FakeSessionRules, agreed } from './fakes';

const policy: Policy = {
  revision: 1,
  multipath: true,
  theta1: 200_000,
  theta2: null,
  deadline_ms: 3000,
  reason: 'both paths up',
  model: { id: 'baseline-seed001', version: 1 },
};
const connected: HostStatus = {
  host: 'connected',
  detail: 'mpsurf-host 0.1.0, protocol 1',
  since: 0,
  hostVersion: '0.1.0',
  policy,
  lastDecisionAt: 0,
  reconnects: 0,
};
const missing: HostStatus = { ...connected, host: 'missing', detail: 'org.mpsurf.host is not installed', policy: null, hostVersion: null };

function decisionFor(a: DecideArgs, change: Partial<Decision> = {}): Decision {
  const { revision: _r, ...fields } = policy;
  return { ...fields, reason: 'page is large', origin: new URL(a.origin).origin, tab: a.tab, nav: a.nav, inputs: {}, ...change };
}

/** Timers the test fires by hand. */
class Timers {
  private readonly live = new Map<number, { fn: () => void; ms: number }>();
  private next = 0;
  set = (fn: () => void, ms: number): unknown => {
    this.live.set(++this.next, { fn, ms });
    return this.next;
  };
  clear = (t: unknown): void => void this.live.delete(t as number);
  /** The delays of the timers still set. */
  pending(): number[] {
    return [...this.live.values()].map((t) => t.ms);
  }
  fireAll(): void {
    const due = [...this.live.values()];
    this.live.clear();
    for (const t of due) t.fn();
  }
}

/** Pages over a real RuleBook on a fake rule store, a scripted host, and a clock the test moves. */
function setup(answer: (a: DecideArgs) => Promise<Decision> = async (a) => decisionFor(a)) {
  let status = connected;
  let clock = 100;
  const timers = new Timers();
  const asked: DecideArgs[] = [];
  const badges = new Map<string, BadgeView>();
  const store = new FakeSessionRules();
  const rules = agreed(new RuleBook(store));
  const saved: unknown[] = [];
  const pages = new Pages({
    host: {
      status: () => status,
      decide: (a) => {
        asked.push(a);
        return answer(a);
      },
    },
    rules,
    now: () => (clock += 5),
    badge: (tab, view) => badges.set(String(tab ?? 'default'), view),
    save: (s) => saved.push(structuredClone(s)),
    setTimer: timers.set,
    clearTimer: timers.clear,
  });
  return {
    pages,
    timers,
    rules,
    store,
    asked,
    badges,
    saved,
    setStatus: (s: HostStatus) => (status = s),
  };
}

describe('Pages', () => {
  it('asks about the origin of a main-frame navigation and installs origin and tab rules with its header', async () => {
    const t = setup(async (a) => decisionFor(a, { multipath: false, theta1: 1_500_000 }));
    t.rules.setNetwork(headerValue(policy));
    await t.pages.begin(7, 'https://example.com/some/page?q=1');
    // The path goes along (never the query): the host learns sizes per page.
    expect(t.asked).toEqual([{ origin: 'https://example.com', tab: 7, nav: '7-1', path: '/some/page' }]);
    // A page expected single path still carries its θ1: multipath is allowed past it.
    const header = headerValue({ theta1: 1_500_000, theta2: null, deadline_ms: 3000 });
    expect(header).toBe('v=1, mp, t1=2048, dl=3');
    const rules = [...t.store.rules.values()];
    expect(rules.find((r) => r.id === NETWORK_RULE_ID)?.action.requestHeaders[0]?.value).toBe(headerValue(policy));
    expect(rules.find((r) => r.priority === PRIORITY_ORIGIN)).toMatchObject({
      condition: { urlFilter: '|https://example.com/' },
      action: { requestHeaders: [{ value: header }] },
    });
    expect(rules.find((r) => r.priority === PRIORITY_TAB)).toMatchObject({
      condition: { tabIds: [7] },
      action: { requestHeaders: [{ value: header }] },
    });
    const d = t.pages.decisions()['7']!;
    expect(d).toMatchObject({ source: 'host', origin: 'https://example.com', multipath: false, theta1: 1_500_000, header, stale: false });
    expect(d.navStartedAt).toBeLessThan(d.decidedAt!);
    expect(d.decidedAt!).toBeLessThan(d.ruleInstalledAt!);
    expect(t.badges.get('7')).toMatchObject({ text: 'SP' });
    expect(t.pages.navTimings('https://example.com')).toMatchObject({ nav: '7-1', source: 'host' });
  });

  it('keeps what the decision rested on when the host says, and nothing when it does not', async () => {
    const t = setup(async (a) => decisionFor(a, a.tab === 1 ? { basis: 'prior' } : {}));
    await t.pages.begin(1, 'https://a.example/');
    await t.pages.begin(2, 'https://b.example/');
    expect(t.pages.decisions()['1']).toMatchObject({ origin: 'https://a.example', basis: 'prior' });
    expect('basis' in t.pages.decisions()['2']!).toBe(false);
  });

  it('numbers navigations so every nav id is new', async () => {
    const t = setup();
    await t.pages.begin(1, 'https://a.example/');
    await t.pages.begin(2, 'https://b.example/');
    await t.pages.begin(1, 'https://c.example/');
    expect(t.asked.map((a) => a.nav)).toEqual(['1-1', '2-2', '1-3']);
  });

  it('a navigation that finds the host connecting (a restarted service worker) waits for it and is decided', async () => {
    const connecting: HostStatus = { ...connected, host: 'connecting', detail: 'starting org.mpsurf.host', policy: null };
    let status = connecting;
    let wake: (c: boolean) => void = () => {};
    const asked: DecideArgs[] = [];
    const rules = agreed(new RuleBook(new FakeSessionRules()));
    const pages = new Pages({
      host: {
        status: () => status,
        decide: async (a) => {
          asked.push(a);
          return decisionFor(a);
        },
        whenConnected: () => new Promise((r) => (wake = r)),
      },
      rules,
      now: () => 1,
      badge: () => {},
      setTimer: () => 0,
      clearTimer: () => {},
    });
    const begun = pages.begin(7, 'https://news.test/a');
    await Promise.resolve();
    expect(asked).toHaveLength(0);
    status = connected;
    wake(true);
    await begun;
    expect(asked.map((a) => a.origin)).toEqual(['https://news.test']);
    expect(pages.record(7)).toMatchObject({ source: 'host', multipath: true });
    expect(pages.current(7)).toEqual({ origin: pages.record(7)!.origin, nav: pages.record(7)!.nav, source: 'host', stale: false, theta1: pages.record(7)!.theta1 });
    expect(pages.current(99)).toBeUndefined();
    // A host that does not come within the wait: the safe default, no header.
    status = connecting;
    const again = pages.begin(8, 'https://other.test/');
    await Promise.resolve();
    wake(false);
    await again;
    expect(pages.record(8)).toMatchObject({ source: 'none', header: null });
  });

  it('without a host: no request, no rule, badge off', async () => {
    const t = setup();
    t.setStatus(missing);
    await t.pages.begin(3, 'http://127.0.0.1:8080/');
    expect(t.asked).toEqual([]);
    expect(t.store.rules.size).toBe(0);
    expect(t.pages.decisions()['3']).toMatchObject({ source: 'none', header: null, multipath: false });
    expect(t.badges.get('3')).toMatchObject({ text: 'off', color: BADGE_OFF });
  });

  it('falls back to single path when the host does not answer in time', async () => {
    const t = setup(() => Promise.reject(new RequestError('timeout', 'no decide reply within 2000 ms')));
    await t.pages.begin(4, 'https://slow.example/');
    const d = t.pages.decisions()['4']!;
    expect(d).toMatchObject({ source: 'fallback', multipath: false });
    expect(d.reason).toMatch(/2000 ms.*single path/);
    expect(d.header).toBe(headerValue({ ...policy, theta1: null }));
    expect([...t.store.rules.values()].every((r) => r.action.requestHeaders[0]!.value.includes('mp=?0'))).toBe(true);
    expect(t.badges.get('4')).toMatchObject({ text: 'SP' });
  });

  it('installs nothing when the host went away during the request', async () => {
    const t = setup(() => {
      t.setStatus(missing);
      return Promise.reject(new RequestError('disconnected', 'Native host has exited.'));
    });
    await t.pages.begin(4, 'https://a.example/');
    expect(t.store.rules.size).toBe(0);
    expect(t.pages.decisions()['4']).toMatchObject({ source: 'none' });
  });

  it('a late reply for an older navigation of the tab installs its origin rule but leaves the tab alone', async () => {
    let releaseFirst: (() => void) | undefined;
    const t = setup((a) =>
      a.nav === '5-1'
        ? new Promise((r) => (releaseFirst = () => r(decisionFor(a, { multipath: false }))))
        : Promise.resolve(decisionFor(a)),
    );
    const first = t.pages.begin(5, 'https://first.example/');
    await t.pages.begin(5, 'https://second.example/');
    releaseFirst!();
    await first;
    expect(t.pages.decisions()['5']).toMatchObject({ origin: 'https://second.example', multipath: true });
    expect(t.badges.get('5')).toMatchObject({ text: 'MP' });
    const tabRule = [...t.store.rules.values()].find((r) => r.priority === PRIORITY_TAB)!;
    expect(tabRule.action.requestHeaders[0]!.value).toMatch(/(^|, )mp(,|$)/);
    expect(t.rules.originRuleId('https://first.example')).toBeDefined();
  });

  it('a tab leaving http(s) loses its decision and tab rule', async () => {
    const t = setup();
    await t.pages.begin(6, 'https://a.example/');
    await t.pages.begin(6, 'chrome://newtab/');
    expect(t.pages.decisions()['6']).toBeUndefined();
    expect(t.rules.tabRuleId(6)).toBeUndefined();
  });

  it('a closed tab loses its record and rule', async () => {
    const t = setup();
    await t.pages.begin(8, 'https://a.example/');
    const id = t.rules.tabRuleId(8)!;
    await t.pages.closed(8);
    expect(t.store.rules.has(id)).toBe(false);
    expect(t.pages.decisions()['8']).toBeUndefined();
  });

  it('the host going away removes every header rule and marks decisions stale', async () => {
    const t = setup();
    t.rules.setNetwork(headerValue(policy));
    await t.pages.begin(1, 'https://a.example/');
    expect(t.store.rules.size).toBe(3);
    t.setStatus(missing);
    await t.pages.hostChanged(missing);
    expect(t.store.rules.size).toBe(0);
    expect(t.pages.decisions()['1']).toMatchObject({ stale: true, header: null });
    expect(t.badges.get('1')).toMatchObject({ text: 'off' });
    expect(t.badges.get('default')).toMatchObject({ text: 'off' });
  });

  it('a new policy replaces the network rule and withdraws the decisions made under the old one', async () => {
    const t = setup();
    await t.pages.policyChanged(policy);
    await t.pages.begin(1, 'https://a.example/');
    const next = { ...policy, revision: 2, multipath: false, reason: 'cellular path down' };
    t.setStatus({ ...connected, policy: next });
    await t.pages.policyChanged(next);
    expect(t.store.ids()).toEqual([NETWORK_RULE_ID]);
    expect(t.store.rules.get(NETWORK_RULE_ID)!.action.requestHeaders[0]!.value).toBe(headerValue(next));
    expect(t.badges.get('1')).toMatchObject({ text: 'SP' });
    expect(t.badges.get('1')!.title).toMatch(/network-wide policy.*cellular path down/);
  });

  it('restores saved records as stale, keeps counting nav ids from where they were, and ignores junk', async () => {
    const t = setup();
    await t.pages.begin(1, 'https://a.example/');
    const snapshot = t.saved.at(-1);
    const u = setup();
    u.pages.restore(snapshot);
    u.pages.restore({ counter: 'x', tabs: [{ tab: 'two' }, null] });
    expect(u.pages.decisions()['1']).toMatchObject({ origin: 'https://a.example', stale: true, header: null });
    await u.pages.begin(2, 'https://b.example/');
    expect(u.asked[0]!.nav).toBe('2-2');
  });
});

const EXT = 'abcdefghijklmnopabcdefghijklmnop';
const timing: LoadTiming = { type: 'load-timing', protocol: 'h2', transfer_bytes: 120_000, plt_ms: 85.04, objects: 3, conns: 1 };
const from = (tab: number, url: string): ContentSender => ({ id: EXT, url, frameId: 0, tab: { id: tab } });

/** A host whose decide replies the test releases one by one, by nav id. */
function heldHost() {
  const replies = new Map<string, () => void>();
  const t = setup((a) => new Promise((r) => replies.set(a.nav, () => r(decisionFor(a, { multipath: a.nav.endsWith('-2') })))));
  return { ...t, reply: (nav: string) => replies.get(nav)!() };
}

/** Settles once the promise has, or after a few turns of the event loop: whether it is still waiting. */
async function waiting(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return !done;
}

describe('load reports and the decisions they belong to', () => {
  it('a page that finishes loading before its decision arrives is reported against that decision', async () => {
    const t = heldHost();
    const begun = t.pages.begin(7, 'https://fast.example/a?q=secret');
    // The content script reports the load while the host has not answered yet.
    const report = buildReport(timing, from(7, 'https://fast.example/a?q=secret'), EXT, t.pages);
    expect(await waiting(report)).toBe(true);
    expect(t.pages.heldReports()).toBe(1);
    t.reply('7-1');
    await begun;
    expect(await report).toEqual({
      report: { origin: 'https://fast.example', tab: 7, nav: '7-1', protocol: 'h2', transfer_bytes: 120_000, plt_ms: 85, multipath: false, path: '/a', objects: 3, conns: 1 },
    });
    expect(t.pages.heldReports()).toBe(0);
    // The hold's timer went with it.
    expect(t.timers.pending()).toEqual([]);
  });

  it('a reload reports against the new navigation, not the one before it', async () => {
    const t = heldHost();
    const first = t.pages.begin(7, 'https://same.example/');
    t.reply('7-1');
    await first;
    const second = t.pages.begin(7, 'https://same.example/');
    const report = buildReport(timing, from(7, 'https://same.example/'), EXT, t.pages);
    expect(await waiting(report)).toBe(true);
    t.reply('7-2');
    await second;
    expect(await report).toMatchObject({ report: { nav: '7-2', multipath: true } });
  });

  it('a decision that never comes holds the report REPORT_HOLD_MS at most, then drops it', async () => {
    const t = heldHost();
    void t.pages.begin(7, 'https://never.example/');
    const report = buildReport(timing, from(7, 'https://never.example/'), EXT, t.pages);
    expect(await waiting(report)).toBe(true);
    expect(t.timers.pending()).toEqual([REPORT_HOLD_MS]);
    t.timers.fireAll();
    expect(await report).toEqual({ drop: `no decision for https://never.example in tab 7 within ${REPORT_HOLD_MS} ms` });
    expect(t.pages.heldReports()).toBe(0);
  });

  it('holds at most MAX_HELD_REPORTS reports; the rest go on at once', async () => {
    const t = heldHost();
    const held: Promise<unknown>[] = [];
    for (let tab = 0; tab <= MAX_HELD_REPORTS; tab++) {
      void t.pages.begin(tab, `https://t${tab}.example/`);
      held.push(buildReport(timing, from(tab, `https://t${tab}.example/`), EXT, t.pages));
    }
    expect(t.pages.heldReports()).toBe(MAX_HELD_REPORTS);
    expect(await held.at(-1)).toEqual({
      drop: `no decision for https://t${MAX_HELD_REPORTS}.example in tab ${MAX_HELD_REPORTS} yet, and ${MAX_HELD_REPORTS} other loads already wait for theirs`,
    });
    t.timers.fireAll();
    await Promise.all(held);
    expect(t.pages.heldReports()).toBe(0);
  });

  it('a tab that navigates on or closes lets its held report go, and a report for another page is not held', async () => {
    const t = heldHost();
    void t.pages.begin(7, 'https://first.example/');
    const r1 = buildReport(timing, from(7, 'https://first.example/'), EXT, t.pages);
    expect(await waiting(r1)).toBe(true);
    void t.pages.begin(7, 'https://second.example/');
    expect(await r1).toMatchObject({ drop: expect.stringMatching(/^no decision for https:\/\/first\.example/) });
    // The tab's navigation under way is to another origin: this report is an older page's, and does not wait.
    expect(await waiting(buildReport(timing, from(7, 'https://first.example/'), EXT, t.pages))).toBe(false);
    const r2 = buildReport(timing, from(7, 'https://second.example/'), EXT, t.pages);
    expect(await waiting(r2)).toBe(true);
    await t.pages.closed(7);
    expect(await r2).toMatchObject({ drop: expect.any(String) });
    expect(t.pages.heldReports()).toBe(0);
    expect(t.timers.pending()).toEqual([]);
  });

  it('a decided page reports at once, and reports from elsewhere are dropped without waiting', async () => {
    const t = setup();
    await t.pages.begin(3, 'https://done.example/p');
    expect(await buildReport(timing, from(3, 'https://done.example/p'), EXT, t.pages)).toMatchObject({ report: { nav: '3-1', path: '/p' } });
    expect(await buildReport(timing, { ...from(3, 'https://done.example/'), id: 'other' }, EXT, t.pages)).toEqual({ drop: 'not from this extension' });
    expect(await buildReport(timing, { ...from(3, 'https://done.example/'), frameId: 2 }, EXT, t.pages)).toEqual({ drop: 'not from a top frame' });
    expect(await buildReport(timing, from(3, 'chrome://newtab/'), EXT, t.pages)).toEqual({ drop: 'not an http(s) page' });
    expect(await buildReport(timing, from(4, 'https://done.example/'), EXT, t.pages)).toEqual({ drop: 'no decision for https://done.example in tab 4' });
  });
});

describe('badgeFor', () => {
  it('says off without a host, the page’s decision when there is one, else the network policy', () => {
    expect(badgeFor(missing).text).toBe('off');
    expect(badgeFor(connected)).toMatchObject({ text: 'MP', color: BADGE_MP });
    expect(badgeFor(connected).title).toMatch(/network-wide/);
    const rec = {
      tab: 1,
      nav: '1-1',
      origin: 'https://a.example',
      source: 'host' as const,
      stale: false,
      multipath: false,
      theta1: 1,
      theta2: null,
      deadline_ms: 3000,
      reason: 'page is small',
      model: null,
      inputs: null,
      header: 'v=1, mp=?0, t1=1, dl=3',
      navStartedAt: 0,
      decidedAt: 1,
      ruleInstalledAt: 2,
      completedAt: null,
    };
    expect(badgeFor(connected, rec)).toMatchObject({ text: 'SP', title: 'MPSurf: single path for https://a.example: page is small' });
    expect(badgeFor(connected, { ...rec, stale: true }).text).toBe('MP');
    expect(badgeFor(missing, rec).text).toBe('off');
  });

  it('says off on every tab while multipath is paused, whatever the page was decided, and why', () => {
    const rec = { tab: 1, nav: '1-1', origin: 'https://a.example', source: 'host' as const, stale: false, multipath: true, theta1: 0, theta2: null, deadline_ms: 3000,
      reason: 'large', model: null, inputs: null, header: 'v=1, mp, t1=0, dl=3', navStartedAt: 0, decidedAt: 1, ruleInstalledAt: 2, completedAt: null };
    const paused = { paused: true, message: 'Multipath is paused: every site uses one path, none goes through the proxy.' };
    expect(badgeFor(connected, rec, paused)).toEqual({ text: 'off', color: BADGE_OFF, title: `MPSurf: ${paused.message}` });
    expect(badgeFor(connected, undefined, paused).text).toBe('off');
    expect(badgeFor(connected, rec, { paused: false, message: 'Multipath is on.' }).text).toBe('MP');
  });
});
