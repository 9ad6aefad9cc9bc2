import { describe, expect, it } from 'vitest';
import { parseHeader } from '../src/header';
import { RequestError, type HostStatus } from '../src/host';
import {
  DEFAULT_PREFS,
  exportSettings,
  loadPrefs,
  normaliseHost,
  normalisePrefs,
  parseOptIn,
  parseSettingsFile,
  updateOptIns,
  withOverride,
  PrefsError,
  type Prefs,
} from '../src/prefs';
import { NETWORK_RULE_ID, OPT_IN_RULE_IDS, OVERRIDE_RULE_IDS, PRIORITY_OVERRIDE, RuleBook, overrideRule } from '../src/rules';
import { Settings } from '../src/settings';
import type { Policy } from '../src/protocol/decide';
import type { Request } from '../src/protocol/envelope';
import { FakeSessionRules, agreed } from './fakes';

describe('normaliseHost', () => {
  it.each([
    ['example.com', 'example.com'],
    ['  Example.COM ', 'example.com'],
    ['Bücher.example', 'xn--bcher-kva.example'],
    ['https://www.example.com/some/page?q=1', 'www.example.com'],
    ['127.0.0.1', '127.0.0.1'],
    ['localhost', 'localhost'],
    ['[::1]', '[::1]'],
  ])('%s → %s', (input, want) => {
    expect(normaliseHost(input)).toBe(want);
  });

  it.each([
    ['', /enter a site/],
    ['bad host', /space/],
    ['*.example.com', /wildcards/],
    ['ftp://example.com', /only http and https/],
    ['example.com:8080', /every port/],
    ['example.com/path', /did you mean example.com/],
    ['user@example.com', /user name/],
    ['-bad-.example', /not a valid host name/],
    ['a..b', /empty label|not a valid/],
    [`${'a'.repeat(64)}.example`, /longer than 63/],
    ['exa mple', /space/],
    ['http://', /not a valid host name/],
  ])('rejects %j', (input, msg) => {
    expect(() => normaliseHost(input)).toThrow(PrefsError);
    expect(() => normaliseHost(input)).toThrow(msg);
  });
});

describe('normalisePrefs', () => {
  const good: Prefs = { ...DEFAULT_PREFS, overrides: [] };

  it('accepts the defaults and normalises override hosts, last entry wins, auto dropped', () => {
    expect(normalisePrefs(good)).toEqual(good);
    const p = normalisePrefs({
      ...good,
      overrides: [
        { host: 'A.example', rule: 'always' },
        { host: 'b.example', rule: 'never' },
        { host: 'a.example', rule: 'never' },
        { host: 'b.example', rule: 'auto' },
      ],
    });
    expect(p.overrides).toEqual([{ host: 'a.example', rule: 'never' }]);
  });

  it.each([
    [{ mode: 'turbo' }, /^mode:/],
    [{ deadline_ms: 999 }, /^deadline_ms: 999 is outside/],
    [{ deadline_ms: 60_001 }, /^deadline_ms/],
    [{ deadline_ms: 1500.5 }, /whole number/],
    [{ battery_floor_percent: 101 }, /^battery_floor_percent/],
    [{ charging_unlimited: 'yes' }, /^charging_unlimited/],
    [{ quota_bytes: -1 }, /^quota_bytes/],
    [{ billing_day: 0 }, /^billing_day/],
    [{ header_scope: 'some' }, /^header_scope/],
    [{ overrides: 'x' }, /^overrides: expected a list/],
    [{ overrides: [{ host: 'a b', rule: 'never' }] }, /^overrides\[0\]\.host: .*space/],
    [{ overrides: [{ host: 'a.example', rule: 'maybe' }] }, /^overrides\[0\]\.rule/],
  ])('rejects %j, naming the field', (change, msg) => {
    expect(() => normalisePrefs({ ...good, ...change })).toThrow(msg);
  });

  it('requires every field unless filling from defaults', () => {
    const { mode: _mode, ...partial } = good;
    expect(() => normalisePrefs(partial)).toThrow(/^mode: missing/);
    expect(normalisePrefs(partial, true).mode).toBe(DEFAULT_PREFS.mode);
  });

  it('caps the number of site rules', () => {
    const many = Array.from({ length: 1001 }, (_, i) => ({ host: `s${i}.example`, rule: 'never' }));
    expect(() => normalisePrefs({ ...good, overrides: many })).toThrow(/at most 1000/);
  });

  it('loadPrefs falls back to the defaults and says why', () => {
    expect(loadPrefs(undefined)).toEqual({ prefs: DEFAULT_PREFS, problem: null });
    const bad = loadPrefs({ mode: 'turbo' });
    expect(bad.prefs).toEqual(DEFAULT_PREFS);
    expect(bad.problem).toMatch(/mode/);
  });

  it('withOverride sets and removes one host', () => {
    const one = withOverride([], 'Bücher.example', 'never');
    expect(one).toEqual([{ host: 'xn--bcher-kva.example', rule: 'never' }]);
    expect(withOverride(one, 'xn--bcher-kva.example', 'auto')).toEqual([]);
  });
});

describe('settings file', () => {
  const prefs: Prefs = { ...DEFAULT_PREFS, mode: 'performance', quota_bytes: 5e9, overrides: [{ host: 'a.example', rule: 'always' }] };

  it('round-trips', () => {
    expect(parseSettingsFile(exportSettings(prefs, new Date(0)))).toEqual(prefs);
  });

  it('fills fields an older file lacks', () => {
    const text = JSON.stringify({ format: 'mpsurf-settings', version: 1, prefs: { mode: 'battery_saver' } });
    expect(parseSettingsFile(text)).toEqual({ ...DEFAULT_PREFS, mode: 'battery_saver' });
  });

  it.each([
    ['not json', /not JSON/],
    ['[]', /not an MPSurf settings file/],
    ['null', /not an MPSurf settings file/],
    ['{"format":"other","version":1,"prefs":{}}', /format "other"/],
    ['{"format":"mpsurf-settings","version":2,"prefs":{}}', /version 2 is not supported/],
    ['{"format":"mpsurf-settings","version":1,"prefs":{"deadline_ms":5}}', /invalid: deadline_ms/],
    ['{"format":"mpsurf-settings","version":1,"prefs":{"overrides":[{"host":"*.x","rule":"never"}]}}', /overrides\[0\]\.host/],
    ['{"format":"mpsurf-settings","version":1}', /invalid: prefs: expected an object/],
    [' '.repeat(300 * 1024), /larger than/],
  ])('rejects a bad file: %j', (text, msg) => {
    expect(() => parseSettingsFile(text)).toThrow(msg);
  });
});

describe('Accept-Multipath-Policy', () => {
  it('reads an sf-boolean and nothing else', () => {
    expect(parseOptIn('?1')).toBe(true);
    expect(parseOptIn(' ?0 ')).toBe(false);
    for (const v of [undefined, '', '1', 'true', '?1, ?0', '?2']) expect(parseOptIn(v)).toBeNull();
  });

  it('remembers per origin, most recent last, and forgets on ?0', () => {
    let l = updateOptIns([], 'https://a.example', true);
    l = updateOptIns(l, 'https://b.example', true);
    l = updateOptIns(l, 'https://a.example', true);
    expect(l).toEqual(['https://b.example', 'https://a.example']);
    expect(updateOptIns(l, 'https://b.example', false)).toEqual(['https://a.example']);
    expect(updateOptIns(l, 'https://b.example', null)).toEqual(l);
  });
});

describe('override and scope rules', () => {
  it('an override rule covers the host on every type at the highest priority', () => {
    const r = overrideRule(OVERRIDE_RULE_IDS.first, 'xn--bcher-kva.example', 'v=1, mp=?0, t1=256, dl=3');
    expect(r.priority).toBe(PRIORITY_OVERRIDE);
    expect(r.condition.requestDomains).toEqual(['xn--bcher-kva.example']);
    expect(r.condition.resourceTypes).toContain('main_frame');
    expect(() => overrideRule(OVERRIDE_RULE_IDS.first, 'Bücher.example', 'x')).toThrow(/not a normalised host/);
    expect(() => overrideRule(1, 'a.example', 'x')).toThrow(/outside/);
  });

  async function book(scope: 'all' | 'opt_in' | 'never', optedIn: string[] = []) {
    const fake = new FakeSessionRules();
    const rules = agreed(new RuleBook(fake));
    rules.setNetwork('v=1, mp, t1=256, dl=3');
    rules.setOrigin('https://decided.example', 'v=1, mp=?0, t1=256, dl=3');
    rules.setTab(7, 'v=1, mp=?0, t1=256, dl=3');
    rules.setOverrides([{ host: 'o.example', header: 'v=1, mp=?0, t1=256, dl=3' }]);
    rules.setScope(scope, optedIn);
    await rules.sync();
    return { fake, rules };
  }

  it('"all" installs every layer and the overrides', async () => {
    const { fake } = await book('all');
    expect(fake.ids()).toEqual([NETWORK_RULE_ID, 1000, 10_000, OVERRIDE_RULE_IDS.first]);
  });

  it('"never" installs no header rule at all, overrides included', async () => {
    const { fake } = await book('never');
    expect(fake.ids()).toEqual([]);
  });

  it('"opt_in" installs only opted-in origins (their decision, else the network header) and overrides', async () => {
    const { fake, rules } = await book('opt_in', ['https://decided.example', 'https://asked.example', 'not an origin']);
    expect(fake.ids()).toEqual([10_000, OVERRIDE_RULE_IDS.first, OPT_IN_RULE_IDS.first]);
    const optIn = fake.rules.get(OPT_IN_RULE_IDS.first);
    expect(optIn?.condition.urlFilter).toBe('|https://asked.example/');
    expect(optIn?.action.requestHeaders[0]?.value).toBe('v=1, mp, t1=256, dl=3');
    expect(fake.rules.get(10_000)?.action.requestHeaders[0]?.value).toBe('v=1, mp=?0, t1=256, dl=3');
    // Switching back restores everything in one update.
    rules.setScope('all');
    await rules.sync();
    expect(fake.ids()).toEqual([NETWORK_RULE_ID, 1000, 10_000, OVERRIDE_RULE_IDS.first]);
  });

  it('clearAll (no host) drops the overrides too', async () => {
    const { fake, rules } = await book('all');
    rules.clearAll();
    await rules.sync();
    expect(fake.ids()).toEqual([]);
  });
});

describe('Settings', () => {
  const policy: Policy = { revision: 1, multipath: true, theta1: 200_000, theta2: null, deadline_ms: 3000, reason: 'r', model: { id: 'm', version: 1 } };
  const connected: HostStatus = { host: 'connected', detail: '', since: 0, hostVersion: '0.1.0', policy, lastDecisionAt: 0, reconnects: 0 };

  function setup(answer: (req: Request) => unknown) {
    const fake = new FakeSessionRules();
    const rules = agreed(new RuleBook(fake));
    const saved: Record<string, unknown> = {};
    const sent: Request[] = [];
    const settings = new Settings({
      rules,
      host: {
        status: () => connected,
        request: async <T,>(build: (id: number) => Request, parse: (b: unknown) => T) => {
          const req = build(1);
          sent.push(req);
          return parse(answer(req));
        },
      },
      save: async (k, v) => {
        saved[k] = v;
      },
    });
    settings.policyChanged(policy);
    return { fake, settings, saved, sent };
  }

  it('applies overrides as rules at once, stores and sends the prefs', async () => {
    const { fake, settings, saved, sent } = setup((req) => ({ applied: true, prefs: req.body }));
    const view = await settings.set({ ...DEFAULT_PREFS, overrides: [{ host: 'Bücher.example', rule: 'never' }, { host: 'a.example', rule: 'always' }] });
    expect(view.prefsSync.state).toBe('ok');
    expect((saved.prefs as Prefs).overrides[0]?.host).toBe('xn--bcher-kva.example');
    expect(sent.at(-1)?.type).toBe('prefs');
    const headers = [...fake.rules.values()].map((r) => [r.condition.requestDomains?.[0], parseHeader(r.action.requestHeaders[0]?.value ?? '').mp]);
    expect(headers).toEqual([
      ['xn--bcher-kva.example', false],
      ['a.example', true],
    ]);
  });

  it('keeps the prefs in the browser and says so when the host does not know "prefs"', async () => {
    const { settings, saved } = setup(() => {
      throw new RequestError('host', 'unknown_type: prefs', { code: 7, name: 'unknown_type', message: 'prefs' });
    });
    const view = await settings.set({ ...DEFAULT_PREFS, mode: 'battery_saver' });
    expect(view.prefsSync.state).toBe('unsupported');
    expect(view.prefsSync.detail).toMatch(/does not support preferences yet/);
    expect((saved.prefs as Prefs).mode).toBe('battery_saver');
  });

  it('rejects invalid prefs without changing anything', async () => {
    const { settings, saved } = setup(() => ({ applied: true, prefs: {} }));
    await expect(settings.set({ ...DEFAULT_PREFS, billing_day: 40 })).rejects.toThrow(/billing_day/);
    expect(saved).toEqual({});
    expect(settings.current()).toEqual(DEFAULT_PREFS);
  });

  it('assembles log_export chunks until the cursor is null, and reports an old host plainly', async () => {
    const chunks = [
      { format: 'csv', data: 'a\n', rows: 1, cursor: 'c1' },
      { format: 'csv', data: 'b\n', rows: 1, cursor: null },
    ];
    let i = 0;
    const { settings, sent } = setup(() => chunks[i++]);
    expect(await settings.exportLog('csv')).toEqual({ data: 'a\nb\n', rows: 2, chunks: 2 });
    expect(sent.map((r) => r.body?.cursor)).toEqual([undefined, 'c1']);

    const old = setup(() => {
      throw new RequestError('host', 'unknown_type', { code: 7, name: 'unknown_type', message: '' });
    });
    await expect(old.settings.exportLog('jsonl')).rejects.toThrow(/does not support the decision log yet/);
    await expect(old.settings.deleteLog()).rejects.toThrow(/does not support the decision log yet/);
  });
});
