import { describe, expect, it } from 'vitest';
import { HEADER_NAME } from '../src/header';
import {
  ALL_TYPES,
  IdAllocator,
  MAX_ORIGIN_RULES,
  MAX_TAB_RULES,
  NETWORK_RULE_ID,
  ORIGIN_RULE_IDS,
  OVERRIDE_RULE_IDS,
  PRIORITY_NETWORK,
  PRIORITY_ORIGIN,
  PRIORITY_OVERRIDE,
  PRIORITY_TAB,
  RuleBook,
  SUBRESOURCE_TYPES,
  TAB_RULE_IDS,
  networkRule,
  originFilter,
  originRule,
  overrideRule,
  tabRule,
} from '../src/rules';
import { parseHeader } from '../src/header';
import { FakeSessionRules, agreed } from './fakes';

const H = 'v=1, mp, t1=256, dl=3';
const H2 = 'v=1, mp=?0, t1=256, dl=3';

describe('rule builders', () => {
  it('orders the layers network < tab < origin < override', () => {
    expect(PRIORITY_NETWORK).toBeLessThan(PRIORITY_TAB);
    expect(PRIORITY_TAB).toBeLessThan(PRIORITY_ORIGIN);
    expect(PRIORITY_ORIGIN).toBeLessThan(PRIORITY_OVERRIDE);
  });

  it('keeps id ranges apart and the total under Chrome’s 5,000 session rules', () => {
    const ranges = [TAB_RULE_IDS, ORIGIN_RULE_IDS, OVERRIDE_RULE_IDS];
    for (const r of ranges) expect(NETWORK_RULE_ID < r.first || NETWORK_RULE_ID > r.last).toBe(true);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]!.first).toBeGreaterThan(ranges[i - 1]!.last);
    const size = (r: { first: number; last: number }) => r.last - r.first + 1;
    expect(1 + size(TAB_RULE_IDS) + size(ORIGIN_RULE_IDS) + size(OVERRIDE_RULE_IDS)).toBeLessThan(5000);
  });

  it('the network rule sets the header on every type, main_frame included', () => {
    const r = networkRule(H);
    expect(r).toEqual({
      id: NETWORK_RULE_ID,
      priority: PRIORITY_NETWORK,
      action: { type: 'modifyHeaders', requestHeaders: [{ header: HEADER_NAME, operation: 'set', value: H }] },
      condition: { resourceTypes: [...ALL_TYPES] },
    });
    expect(r.condition.resourceTypes).toContain('main_frame');
    expect(r.condition.urlFilter).toBeUndefined();
  });

  it('a tab rule is scoped to its tab and to sub-resources, never main_frame', () => {
    const r = tabRule(TAB_RULE_IDS.first, 7, H);
    expect(r.priority).toBe(PRIORITY_TAB);
    expect(r.condition.tabIds).toEqual([7]);
    expect(r.condition.resourceTypes).toEqual([...SUBRESOURCE_TYPES]);
    expect(r.condition.resourceTypes).not.toContain('main_frame');
    expect(r.condition.resourceTypes).toEqual(expect.arrayContaining(['sub_frame', 'script', 'xmlhttprequest', 'image']));
    expect(() => tabRule(TAB_RULE_IDS.first, -1, H)).toThrow(RangeError);
    expect(() => tabRule(ORIGIN_RULE_IDS.first, 7, H)).toThrow(RangeError);
  });

  it('an origin rule is anchored on the exact origin and covers main_frame', () => {
    const r = originRule(ORIGIN_RULE_IDS.first, 'http://127.0.0.1:8080', H);
    expect(r.priority).toBe(PRIORITY_ORIGIN);
    expect(r.condition.urlFilter).toBe('|http://127.0.0.1:8080/');
    expect(r.condition.resourceTypes).toEqual([...ALL_TYPES]);
    expect(r.condition.tabIds).toBeUndefined();
    expect(() => originRule(TAB_RULE_IDS.first, 'https://a.example', H)).toThrow(RangeError);
  });

  it.each([
    ['https://example.com', '|https://example.com/'],
    ['http://127.0.0.1:8080', '|http://127.0.0.1:8080/'],
    ['https://xn--bcher-kva.example', '|https://xn--bcher-kva.example/'],
    ['http://[::1]:8080', '|http://[::1]:8080/'],
    ['https://Example.com', null],
    ['https://example.com:443', null],
    ['https://example.com/', null],
    ['https://bücher.example', null],
    ['https://a*b.example', null],
    ['ftp://example.com', null],
    ['null', null],
  ])('originFilter(%s) = %s', (origin, want) => {
    expect(originFilter(origin)).toBe(want);
  });

  it('every resource type is listed once', () => {
    expect(new Set(ALL_TYPES).size).toBe(ALL_TYPES.length);
    expect(ALL_TYPES).toHaveLength(15);
  });
});

describe('IdAllocator', () => {
  it('hands out the range in order, reuses freed ids, and says when it is empty', () => {
    const a = new IdAllocator({ first: 10, last: 12 });
    expect([a.alloc(), a.alloc(), a.alloc(), a.alloc()]).toEqual([10, 11, 12, null]);
    a.release(11);
    expect(a.alloc()).toBe(11);
    expect(() => a.release(13)).toThrow(RangeError);
  });
});

describe('RuleBook while multipath is paused', () => {
  it('starts paused: before consent, even the first request to a new site says mp=?0', async () => {
    const fake = new FakeSessionRules();
    const book = new RuleBook(fake);
    expect(book.isPaused).toBe(true);
    book.setNetwork(H);
    await book.sync();
    expect(fake.rules.get(NETWORK_RULE_ID)?.action.requestHeaders[0]?.value).toBe('v=1, mp=?0, t1=0, dl=3');
  });

  it('withholds multipath on every layer (network, origin, tab, a site rule "always", opt-in) and gives it back on resume', async () => {
    const fake = new FakeSessionRules();
    const book = agreed(new RuleBook(fake));
    const always = 'v=1, mp, t1=0, t2=1024, dl=3';
    book.setNetwork(H);
    const o = book.setOrigin('https://example.com', always)!;
    const t = book.setTab(3, always);
    book.setOverrides([{ host: 'always.example', header: always }]);
    await book.sync();
    const values = () => [...fake.rules.values()].map((r) => r.action.requestHeaders[0]!.value);
    expect(values().filter((v) => parseHeader(v).mp)).toHaveLength(4);
    book.setPaused(true);
    await book.sync();
    expect(values()).toHaveLength(4);
    for (const v of values()) expect(parseHeader(v)).toMatchObject({ mp: false, t1: 0 });
    // What describes the user (patience, a cellular cap) stays.
    expect(fake.rules.get(o)?.action.requestHeaders[0]?.value).toBe('v=1, mp=?0, t1=0, t2=1024, dl=3');
    expect(book.isInstalled(o) && book.isInstalled(t)).toBe(true);
    book.setPaused(false);
    await book.sync();
    expect(fake.rules.get(OVERRIDE_RULE_IDS.first)).toEqual(overrideRule(OVERRIDE_RULE_IDS.first, 'always.example', always));
    book.setScope('opt_in', ['https://asked.example']);
    book.setPaused(true);
    await book.sync();
    expect(values().every((v) => !parseHeader(v).mp)).toBe(true);
  });
});

describe('RuleBook', () => {
  it('installs an origin rule and a tab rule in one atomic update', async () => {
    const fake = new FakeSessionRules();
    const book = agreed(new RuleBook(fake));
    book.setNetwork(H);
    await book.sync();
    const o = book.setOrigin('https://example.com', H2)!;
    const t = book.setTab(3, H2);
    await book.sync();
    expect(fake.calls).toHaveLength(2);
    expect(fake.calls[1]).toEqual({ removeRuleIds: [], addRules: [originRule(o, 'https://example.com', H2), tabRule(t, 3, H2)] });
    expect(fake.ids()).toEqual([NETWORK_RULE_ID, t, o]);
    expect(book.isInstalled(o) && book.isInstalled(t)).toBe(true);
  });

  it('replaces a changed rule under the same id in one call, and sends nothing when nothing changed', async () => {
    const fake = new FakeSessionRules();
    const book = agreed(new RuleBook(fake));
    const id = book.setOrigin('https://example.com', H)!;
    await book.sync();
    expect(book.setOrigin('https://example.com', H2)).toBe(id);
    await book.sync();
    expect(fake.calls[1]).toEqual({ removeRuleIds: [id], addRules: [originRule(id, 'https://example.com', H2)] });
    await book.sync();
    expect(fake.calls).toHaveLength(2);
  });

  it('coalesces changes made while an update is in flight into one more call', async () => {
    const fake = new FakeSessionRules();
    fake.hold = true;
    const book = agreed(new RuleBook(fake));
    book.setNetwork(H);
    const first = book.sync();
    await Promise.resolve();
    for (let i = 0; i < 10; i++) book.setOrigin(`https://s${i}.example`, H);
    const second = book.sync();
    const third = book.sync();
    expect(fake.calls).toHaveLength(1);
    fake.release();
    await new Promise((r) => setTimeout(r, 0));
    fake.release();
    await Promise.all([first, second, third]);
    expect(fake.calls).toHaveLength(2);
    expect(fake.calls[1]!.addRules).toHaveLength(10);
    expect(fake.rules.size).toBe(11);
  });

  it('caps origin rules, evicting the least recently decided origin', async () => {
    const fake = new FakeSessionRules();
    const book = agreed(new RuleBook(fake));
    for (let i = 0; i < MAX_ORIGIN_RULES; i++) book.setOrigin(`https://s${i}.example`, H);
    book.setOrigin('https://s0.example', H2); // s0 becomes the most recent; s1 is now the oldest
    const fresh = book.setOrigin('https://new.example', H);
    await book.sync();
    expect(book.originCount).toBe(MAX_ORIGIN_RULES);
    expect(book.originRuleId('https://s1.example')).toBeUndefined();
    expect(book.originRuleId('https://s0.example')).toBeDefined();
    expect(fake.rules.get(fresh!)!.condition.urlFilter).toBe('|https://new.example/');
    expect(fake.rules.size).toBe(MAX_ORIGIN_RULES);
  });

  it('caps tab rules the same way', () => {
    const book = agreed(new RuleBook(new FakeSessionRules()));
    for (let i = 0; i <= MAX_TAB_RULES; i++) book.setTab(i, H);
    expect(book.tabCount).toBe(MAX_TAB_RULES);
    expect(book.tabRuleId(0)).toBeUndefined();
    expect(book.tabRuleId(MAX_TAB_RULES)).toBeDefined();
  });

  it('removes a closed tab’s rule and frees its id', async () => {
    const fake = new FakeSessionRules();
    const book = agreed(new RuleBook(fake));
    const a = book.setTab(1, H);
    book.setTab(2, H);
    await book.sync();
    book.removeTab(1);
    await book.sync();
    expect(fake.calls[1]).toEqual({ removeRuleIds: [a], addRules: [] });
    expect(book.setTab(3, H)).toBe(a);
  });

  it('clearDecisions keeps the network rule; clearAll leaves no header rule at all', async () => {
    const fake = new FakeSessionRules();
    const book = agreed(new RuleBook(fake));
    book.setNetwork(H);
    book.setOrigin('https://example.com', H);
    book.setTab(1, H);
    await book.sync();
    book.clearDecisions();
    await book.sync();
    expect(fake.ids()).toEqual([NETWORK_RULE_ID]);
    book.setOrigin('https://example.com', H);
    book.clearAll();
    await book.sync();
    expect(fake.rules.size).toBe(0);
  });

  it('adopt() takes over leftover rules, which the next sync removes', async () => {
    const fake = new FakeSessionRules();
    await fake.update({ removeRuleIds: [], addRules: [networkRule(H), originRule(ORIGIN_RULE_IDS.first + 5, 'https://old.example', H)] });
    const book = agreed(new RuleBook(fake));
    await book.adopt();
    await book.sync();
    expect(fake.rules.size).toBe(0);
  });

  it('records a refused update, resynchronises from the browser, and recovers at the next change', async () => {
    const fake = new FakeSessionRules();
    const book = agreed(new RuleBook(fake));
    book.setNetwork(H);
    fake.failNext = 'Rule with id 1: invalid header value';
    await book.sync();
    expect(book.lastError).toMatch(/invalid header/);
    expect(fake.rules.size).toBe(0);
    expect(book.isInstalled(NETWORK_RULE_ID)).toBe(false);
    book.setOrigin('https://example.com', H);
    await book.sync();
    expect(book.lastError).toBeNull();
    expect(fake.rules.size).toBe(2);
  });

  it('refuses origins that cannot be matched exactly', () => {
    const book = agreed(new RuleBook(new FakeSessionRules()));
    expect(book.setOrigin('https://a*b.example', H)).toBeNull();
    expect(book.originCount).toBe(0);
  });
});
