// declarativeNetRequest session rules that set the Multipath-Policy header.
//
// Chrome computes a request's DNR actions before the request leaves, so a decision that arrives asynchronously is
// too late for the request that triggered it. Hence the layers, highest priority first:
//   override (a user's per-site choice, on every request to that host and its subdomains) > origin (the host's decision for the request's own
//   origin) > tab (the decision for the page, on the page's sub-resources) > network (the network-wide policy,
//   always installed while the host is connected, so even the first request of a navigation carries a header).
// When several modifyHeaders rules set the same header, the highest priority one wins and lower ones cannot touch it
// (Chrome DNR "Matching precedence"). Without a host no header rule exists at all.
//
// While multipath is paused (the user's pause, no consent yet, a data limit reached, roaming) every rule says
// `mp=?0` (header.ts withoutMultipath): the host's decisions are single path then anyway, but the network rule
// (which the first request to a new site carries) and the per-site "always" rules would otherwise still say `mp`.
//
// The user's header scope (prefs.ts) filters what is installed: "all" installs every layer; "never" nothing;
// "opt_in" only origin rules for origins that sent Accept-Multipath-Policy: ?1 (their decision, or the network
// policy until there is one) and the user's overrides, never the network or tab rules, which reach other sites.
//
// RuleBook keeps the wanted rule set in memory and reconciles the browser to it with one atomic updateSessionRules
// call per round, so a navigation's origin and tab rules land together.

import { HEADER_NAME, withoutMultipath } from './header';
import type { HeaderScope } from './prefs';

// Rule ids: one fixed id and four ranges, with room for Chrome's 5,000 session rules
// (chrome.declarativeNetRequest.MAX_NUMBER_OF_SESSION_RULES, developer.chrome.com/docs/extensions/reference/api/declarativeNetRequest):
// 1 + 1,000 + 2,000 + 1,000 + 1,000 = 5,001 ids, of which at most 4,001 are used at once (an opted-in origin has
// either an origin rule or an opt-in rule, and opt-in rules exist only when network and tab rules do not).
export const NETWORK_RULE_ID = 1;
export const TAB_RULE_IDS = { first: 1_000, last: 1_999 } as const;
export const ORIGIN_RULE_IDS = { first: 10_000, last: 11_999 } as const;
export const OVERRIDE_RULE_IDS = { first: 20_000, last: 20_999 } as const;
/** Opted-in origins without a decision of their own, under the "opt_in" scope: the network policy's header. */
export const OPT_IN_RULE_IDS = { first: 21_000, last: 21_999 } as const;

export const PRIORITY_NETWORK = 1;
export const PRIORITY_TAB = 2;
export const PRIORITY_ORIGIN = 3;
export const PRIORITY_OVERRIDE = 4;

/** Least recently decided origins lose their rule beyond this; the network rule then covers them. */
export const MAX_ORIGIN_RULES = ORIGIN_RULE_IDS.last - ORIGIN_RULE_IDS.first + 1;
export const MAX_TAB_RULES = TAB_RULE_IDS.last - TAB_RULE_IDS.first + 1;

/** Every type but main_frame, listed because an omitted resourceTypes would still leave some out. */
export const SUBRESOURCE_TYPES = [
  'sub_frame',
  'stylesheet',
  'script',
  'image',
  'font',
  'object',
  'xmlhttprequest',
  'ping',
  'csp_report',
  'media',
  'websocket',
  'webtransport',
  'webbundle',
  'other',
] as const;
export type ResourceType = 'main_frame' | (typeof SUBRESOURCE_TYPES)[number];
/** main_frame must be named: a rule without resourceTypes matches everything except main_frame. */
export const ALL_TYPES: readonly ResourceType[] = ['main_frame', ...SUBRESOURCE_TYPES];

/** The subset of chrome.declarativeNetRequest.Rule that MPSurf uses. */
export interface DnrRule {
  id: number;
  priority: number;
  action: {
    type: 'modifyHeaders';
    requestHeaders: { header: string; operation: 'set'; value: string }[];
  };
  condition: {
    urlFilter?: string;
    tabIds?: number[];
    requestDomains?: string[];
    resourceTypes: ResourceType[];
  };
}

export interface DnrUpdate {
  removeRuleIds: number[];
  addRules: DnrRule[];
}

function setHeader(id: number, priority: number, value: string, condition: DnrRule['condition']): DnrRule {
  return {
    id,
    priority,
    action: { type: 'modifyHeaders', requestHeaders: [{ header: HEADER_NAME, operation: 'set', value }] },
    condition,
  };
}

/** The network-wide rule: every request of every type, main frames included. */
export function networkRule(header: string): DnrRule {
  return setHeader(NETWORK_RULE_ID, PRIORITY_NETWORK, header, { resourceTypes: [...ALL_TYPES] });
}

/** The page's decision on the sub-resources a tab loads. Main frames belong to the origin rules. */
export function tabRule(id: number, tabId: number, header: string): DnrRule {
  checkIn(id, TAB_RULE_IDS);
  if (!Number.isInteger(tabId) || tabId < 0) throw new RangeError(`tab rule: ${tabId} is not a tab id`);
  return setHeader(id, PRIORITY_TAB, header, { tabIds: [tabId], resourceTypes: [...SUBRESOURCE_TYPES] });
}

/**
 * The urlFilter matching every URL of exactly this http(s) origin, or null when the origin cannot be expressed
 * safely. The trailing "/" stops "https://a.com" from matching "https://a.com.evil.net"; URLs reach DNR in canonical
 * form (lower-case host, punycode, default port dropped), the same form an origin from URL.origin has. A "*" in a
 * host would be a urlFilter wildcard, so such origins get no rule. (wss: URLs of the same site are not matched; the
 * tab and network rules cover them.)
 */
export function originFilter(origin: string): string | null {
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return null;
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== origin) return null;
  if (/[*^|\s]/.test(origin) || !/^[\x21-\x7e]+$/.test(origin)) return null;
  return `|${origin}/`;
}

/** The decision for an origin, on every request to it, main frame included. */
export function originRule(id: number, origin: string, header: string): DnrRule {
  checkIn(id, ORIGIN_RULE_IDS);
  const urlFilter = originFilter(origin);
  if (urlFilter === null) throw new RangeError(`origin rule: ${JSON.stringify(origin)} is not a plain http(s) origin`);
  return setHeader(id, PRIORITY_ORIGIN, header, { urlFilter, resourceTypes: [...ALL_TYPES] });
}

/**
 * A user's rule for a host: every request to it or its subdomains (requestDomains), main frames included, at the
 * highest priority. `host` must come from prefs.normaliseHost.
 */
export function overrideRule(id: number, host: string, header: string): DnrRule {
  checkIn(id, OVERRIDE_RULE_IDS);
  if (host === '' || /[^a-z0-9.\-_[\]:]/.test(host)) throw new RangeError(`override rule: ${JSON.stringify(host)} is not a normalised host`);
  return setHeader(id, PRIORITY_OVERRIDE, header, { requestDomains: [host], resourceTypes: [...ALL_TYPES] });
}

/** An opted-in origin's rule under the "opt_in" scope while it has no decision: same shape as an origin rule. */
export function optInRule(id: number, origin: string, header: string): DnrRule {
  checkIn(id, OPT_IN_RULE_IDS);
  const urlFilter = originFilter(origin);
  if (urlFilter === null) throw new RangeError(`opt-in rule: ${JSON.stringify(origin)} is not a plain http(s) origin`);
  return setHeader(id, PRIORITY_ORIGIN, header, { urlFilter, resourceTypes: [...ALL_TYPES] });
}

function checkIn(id: number, range: { first: number; last: number }): void {
  if (!Number.isInteger(id) || id < range.first || id > range.last) {
    throw new RangeError(`rule id ${id} is outside ${range.first} … ${range.last}`);
  }
}

/** Hands out ids from one range; freed ids are reused first. */
export class IdAllocator {
  private next: number;
  private readonly free: number[] = [];
  constructor(private readonly range: { first: number; last: number }) {
    this.next = range.first;
  }
  alloc(): number | null {
    const id = this.free.pop();
    if (id !== undefined) return id;
    if (this.next > this.range.last) return null;
    return this.next++;
  }
  release(id: number): void {
    checkIn(id, this.range);
    this.free.push(id);
  }
}

/**
 * Keys (origins or tab ids) mapped to rule ids, least recently used first. When the range is used up, the least
 * recently used key gives its id to the new one.
 */
class LruIds<K> {
  private readonly ids = new Map<K, number>();
  private readonly alloc: IdAllocator;
  constructor(range: { first: number; last: number }) {
    this.alloc = new IdAllocator(range);
  }
  /** The id for key, marking it most recent. `evicted` is the key that lost its id, if any. */
  use(key: K): { id: number; evicted?: K } {
    const have = this.ids.get(key);
    if (have !== undefined) {
      this.ids.delete(key);
      this.ids.set(key, have);
      return { id: have };
    }
    let id = this.alloc.alloc();
    let evicted: K | undefined;
    if (id === null) {
      const oldest = this.ids.entries().next().value;
      if (oldest === undefined) throw new Error('rule ids exhausted with nothing to evict');
      [evicted, id] = oldest;
      this.ids.delete(evicted);
    }
    this.ids.set(key, id);
    return evicted === undefined ? { id } : { id, evicted };
  }
  drop(key: K): number | undefined {
    const id = this.ids.get(key);
    if (id === undefined) return undefined;
    this.ids.delete(key);
    this.alloc.release(id);
    return id;
  }
  get(key: K): number | undefined {
    return this.ids.get(key);
  }
  keys(): K[] {
    return [...this.ids.keys()];
  }
  get size(): number {
    return this.ids.size;
  }
}

export interface RuleBackend {
  /** One atomic chrome.declarativeNetRequest.updateSessionRules call. */
  update(u: DnrUpdate): Promise<void>;
  /** chrome.declarativeNetRequest.getSessionRules. */
  read(): Promise<DnrRule[]>;
}

/** The wanted session rules, and the one place that changes the browser's. */
export class RuleBook {
  private readonly wanted = new Map<number, DnrRule>();
  /** What the browser holds, as far as we know: rule id → JSON of the rule. */
  private installed = new Map<number, string>();
  private readonly origins = new LruIds<string>(ORIGIN_RULE_IDS);
  private readonly tabs = new LruIds<number>(TAB_RULE_IDS);
  private overrides: DnrRule[] = [];
  private scope: HeaderScope = 'all';
  private optedIn: string[] = [];
  /** Multipath withheld on every rule; paused until told otherwise, as nothing is multipath before consent. */
  private paused = true;
  private round: Promise<void> | null = null;
  private dirty = false;
  /** Update calls made, and the last failure; for status and tests. */
  updates = 0;
  lastError: string | null = null;

  constructor(private readonly backend: RuleBackend) {}

  /** Starts from the browser's current rules: whatever is not wanted goes at the next sync. */
  async adopt(): Promise<void> {
    this.installed = new Map((await this.backend.read()).map((r) => [r.id, JSON.stringify(r)]));
  }

  setNetwork(header: string | null): void {
    if (header === null) this.wanted.delete(NETWORK_RULE_ID);
    else this.wanted.set(NETWORK_RULE_ID, networkRule(header));
  }

  /** Installs (or replaces) the rule for origin; returns its id, or null when the origin cannot have one. */
  setOrigin(origin: string, header: string): number | null {
    if (originFilter(origin) === null) return null;
    const { id } = this.origins.use(origin);
    this.wanted.set(id, originRule(id, origin, header));
    return id;
  }

  removeOrigin(origin: string): void {
    const id = this.origins.drop(origin);
    if (id !== undefined) this.wanted.delete(id);
  }

  setTab(tabId: number, header: string): number {
    const { id } = this.tabs.use(tabId);
    this.wanted.set(id, tabRule(id, tabId, header));
    return id;
  }

  removeTab(tabId: number): void {
    const id = this.tabs.drop(tabId);
    if (id !== undefined) this.wanted.delete(id);
  }

  /** Drops every origin and tab rule (their decisions no longer hold), keeping the network rule. */
  clearDecisions(): void {
    for (const o of this.origins.keys()) this.removeOrigin(o);
    for (const t of this.tabs.keys()) this.removeTab(t);
  }

  /** Drops every header rule: the state without a host. */
  clearAll(): void {
    this.clearDecisions();
    this.setNetwork(null);
    this.overrides = [];
  }

  /** The user's per-site rules, each with the header it sets; replaces the previous set. */
  setOverrides(list: readonly { host: string; header: string }[]): void {
    const n = OVERRIDE_RULE_IDS.last - OVERRIDE_RULE_IDS.first + 1;
    if (list.length > n) throw new RangeError(`at most ${n} override rules`);
    this.overrides = list.map((o, i) => overrideRule(OVERRIDE_RULE_IDS.first + i, o.host, o.header));
  }

  /** Where the header goes, and (for "opt_in") which origins asked for it, most recent last. */
  setScope(scope: HeaderScope, optedIn: readonly string[] = []): void {
    this.scope = scope;
    const n = OPT_IN_RULE_IDS.last - OPT_IN_RULE_IDS.first + 1;
    this.optedIn = optedIn.filter((o) => originFilter(o) !== null).slice(-n);
  }

  get headerScope(): HeaderScope {
    return this.scope;
  }

  /** Whether every rule withholds multipath (the gate in caps.ts). */
  setPaused(paused: boolean): void {
    this.paused = paused;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** withoutMultipath, remembered: a few distinct values serve thousands of rules. */
  private readonly withheldCache = new Map<string, string>();
  private withheld(value: string): string {
    let v = this.withheldCache.get(value);
    if (v === undefined) {
      v = withoutMultipath(value);
      if (this.withheldCache.size > 256) this.withheldCache.clear();
      this.withheldCache.set(value, v);
    }
    return v;
  }

  /** The rules the browser should hold: the wanted layers filtered by the scope, plus the overrides. */
  private effective(): Map<number, DnrRule> {
    const out = new Map<number, DnrRule>();
    if (this.scope === 'never') return out;
    if (this.scope === 'all') {
      for (const [id, r] of this.wanted) out.set(id, r);
    } else {
      const network = this.wanted.get(NETWORK_RULE_ID);
      let next = OPT_IN_RULE_IDS.first;
      for (const origin of this.optedIn) {
        const id = this.origins.get(origin);
        const rule = id === undefined ? undefined : this.wanted.get(id);
        if (rule !== undefined && id !== undefined) out.set(id, rule);
        else if (network !== undefined) {
          const header = network.action.requestHeaders[0]?.value;
          if (header !== undefined) out.set(next, optInRule(next++, origin, header));
        }
      }
    }
    for (const r of this.overrides) out.set(r.id, r);
    if (this.paused) {
      for (const [id, r] of out) {
        const requestHeaders = r.action.requestHeaders.map((h) => ({ ...h, value: this.withheld(h.value) }));
        out.set(id, { ...r, action: { ...r.action, requestHeaders } });
      }
    }
    return out;
  }

  originRuleId(origin: string): number | undefined {
    return this.origins.get(origin);
  }

  tabRuleId(tabId: number): number | undefined {
    return this.tabs.get(tabId);
  }

  /** Whether the browser holds rule id exactly as currently wanted. */
  isInstalled(id: number): boolean {
    const want = this.effective().get(id);
    return want !== undefined && this.installed.get(id) === JSON.stringify(want);
  }

  wantedRules(): DnrRule[] {
    return [...this.effective().values()].sort((a, b) => a.id - b.id);
  }

  get originCount(): number {
    return this.origins.size;
  }

  get tabCount(): number {
    return this.tabs.size;
  }

  /**
   * Brings the browser to the wanted rules. Calls made while a round is in flight share the next round, so a burst
   * of changes costs one or two updateSessionRules calls. Resolves once the state wanted at call time was tried;
   * failures are recorded in lastError, never thrown.
   */
  sync(): Promise<void> {
    this.dirty = true;
    if (this.round === null) {
      this.round = this.rounds().finally(() => {
        this.round = null;
      });
    }
    return this.round;
  }

  private async rounds(): Promise<void> {
    while (this.dirty) {
      this.dirty = false;
      await this.pushDiff();
    }
  }

  private async pushDiff(): Promise<void> {
    const removeRuleIds: number[] = [];
    const addRules: DnrRule[] = [];
    const json = new Map<number, string>();
    for (const [id, rule] of this.effective()) json.set(id, JSON.stringify(rule));
    for (const [id, have] of this.installed) {
      if (json.get(id) !== have) removeRuleIds.push(id);
    }
    for (const [id, want] of json) {
      if (this.installed.get(id) !== want) addRules.push(JSON.parse(want) as DnrRule);
    }
    if (removeRuleIds.length === 0 && addRules.length === 0) return;
    removeRuleIds.sort((a, b) => a - b);
    this.updates++;
    try {
      // Chrome removes removeRuleIds first, then adds: a rule can be replaced under the same id in one call.
      await this.backend.update({ removeRuleIds, addRules });
      for (const id of removeRuleIds) this.installed.delete(id);
      for (const r of addRules) this.installed.set(r.id, json.get(r.id) as string);
      this.lastError = null;
    } catch (e) {
      // The update is atomic: nothing changed. Re-read to be sure, and leave the retry to the next change rather
      // than loop on a rule Chrome refuses.
      this.lastError = e instanceof Error ? e.message : String(e);
      try {
        await this.adopt();
      } catch {
        // Keep the old belief; the next round sends the whole difference again.
      }
    }
  }
}
