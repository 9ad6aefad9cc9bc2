// What the extension knows and does per tab: a main-frame navigation asks the host for a decision on the page's
// origin, the decision becomes an origin rule and a tab rule (RuleBook), and the tab's badge says what the page gets.
// Host and policy changes invalidate the decisions. Timestamps (performance.now(), ms) are kept per navigation so
// tests can measure how long a page goes without its own rule.

import { headerValue } from './header';
import type { HostStatus, RequestError } from './host';
import { urlPath, type Basis, type Decision, type DecideArgs, type InputValue, type ModelRef, type Policy, type SizePrediction, type Term } from './protocol/decide';
import type { RuleBook } from './rules';

export type Source = 'host' | 'fallback' | 'none';

/** The last decision for a tab, as plain JSON. */
export interface TabRecord {
  tab: number;
  nav: string;
  origin: string;
  /** host: the host decided; fallback: the host failed and the safe default (single path) applies; none: no host. */
  source: Source;
  /** True once the rules this record describes were withdrawn (host gone, policy changed, service worker restart). */
  stale: boolean;
  multipath: boolean;
  theta1: number | null;
  theta2: number | null;
  deadline_ms: number | null;
  reason: string;
  model: ModelRef | null;
  inputs: Record<string, InputValue> | null;
  /** The model's explanation, page-size prediction and assumed protocol, when the host sent them. */
  terms?: Term[];
  size?: SizePrediction;
  protocol?: string;
  /** What the decision rested on (measured links, priors, a rule), when the host said. */
  basis?: Basis;
  /** The Multipath-Policy value installed for this page, null when none. */
  header: string | null;
  navStartedAt: number;
  decidedAt: number | null;
  ruleInstalledAt: number | null;
  completedAt: number | null;
}

export interface NavTimings {
  nav: string;
  tab: number;
  origin: string;
  source: Source;
  navStartedAt: number;
  decidedAt: number | null;
  ruleInstalledAt: number | null;
  completedAt: number | null;
}

export interface BadgeView {
  text: string;
  color: string;
  title: string;
}

export const BADGE_MP = '#1a7f37';
export const BADGE_SP = '#0969da';
export const BADGE_OFF = '#6e7781';

/** The part of the multipath gate (caps.ts) the badge shows: paused, and the sentence saying why. */
export interface PauseView {
  paused: boolean;
  message: string;
}

/**
 * What the toolbar shows for a tab with this record (or for tabs without one, with `rec` undefined). While
 * multipath is paused (or not yet agreed to) every tab shows "off": no page gets multipath then, whatever it was
 * decided before.
 */
export function badgeFor(status: HostStatus, rec?: TabRecord, pause?: PauseView | null): BadgeView {
  if (status.host !== 'connected' || status.policy === null) {
    return { text: 'off', color: BADGE_OFF, title: `MPSurf: off, no header is sent (host ${status.host}: ${status.detail})` };
  }
  if (pause?.paused) return { text: 'off', color: BADGE_OFF, title: `MPSurf: ${pause.message}` };
  if (rec !== undefined && !rec.stale && rec.source !== 'none') {
    const what = rec.multipath ? 'multipath' : 'single path';
    return {
      text: rec.multipath ? 'MP' : 'SP',
      color: rec.multipath ? BADGE_MP : BADGE_SP,
      title: `MPSurf: ${what} for ${rec.origin}: ${rec.reason}`,
    };
  }
  const p = status.policy;
  const what = p.multipath ? 'multipath' : 'single path';
  return {
    text: p.multipath ? 'MP' : 'SP',
    color: p.multipath ? BADGE_MP : BADGE_SP,
    title: `MPSurf: ${what} by the network-wide policy (no decision for this page): ${p.reason}`,
  };
}

export interface PagesDeps {
  host: {
    status(): HostStatus;
    decide(args: DecideArgs): Promise<Decision>;
    /** Resolves once the host is connected (true) or cannot be (false), within timeoutMs. */
    whenConnected?(timeoutMs: number): Promise<boolean>;
  };
  rules: RuleBook;
  /** performance.now() in the service worker. */
  now(): number;
  /** Sets a tab's badge, or the default badge when tabId is undefined. Must not throw. */
  badge(tabId: number | undefined, view: BadgeView): void;
  /** Whether multipath is paused now (caps.ts gate); absent: never paused. */
  pause?(): PauseView | null;
  /** Persists the records (storage.session) so a restarted service worker can fix the badges. */
  save?(snapshot: PagesSnapshot): void;
  log?(line: string): void;
  /** Timers bound how long a load report waits for its page's decision (decided). */
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(t: unknown): void;
}

export interface PagesSnapshot {
  counter: number;
  tabs: TabRecord[];
}

const RECENT_NAVS = 256;

/**
 * How long a navigation waits for a host that is still connecting before it takes the safe default: a stopped
 * service worker that a navigation wakes connects again in about 0.3 s, and reliability case 9 bounds it at 1 s.
 */
export const CONNECT_WAIT_MS = 1_000;

/**
 * How long a load report waits for its page's decision. A navigation has its record within CONNECT_WAIT_MS plus
 * the decide request's own timeout (host.ts), so the wait normally ends well before this; the bound is for a
 * decision that never comes, so a held report cannot outlive it.
 */
export const REPORT_HOLD_MS = 5_000;
/** At most this many reports wait at once (one per tab that is loading); more are not held. */
export const MAX_HELD_REPORTS = 64;

/** How a wait for a decision ended: the record is there (or never will be), the wait ran out, too many wait. */
export type Wait = 'ready' | 'late' | 'full';

/** A load report waiting for the decision of its tab's newest navigation. */
interface Held {
  tab: number;
  release(how?: Wait): void;
}

export class Pages {
  private counter = 0;
  private readonly tabs = new Map<number, TabRecord>();
  /** The newest navigation begun in each tab; replies for older ones do not touch the tab. */
  private readonly latest = new Map<number, NavTimings>();
  private readonly recent: NavTimings[] = [];
  private readonly held = new Set<Held>();

  constructor(private readonly d: PagesDeps) {}

  /** webNavigation.onBeforeNavigate for a tab's main frame. Resolves when the page's rules are in place. */
  async begin(tabId: number, url: string): Promise<void> {
    const navStartedAt = this.d.now();
    let origin: string;
    try {
      const u = new URL(url);
      origin = u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : '';
    } catch {
      origin = '';
    }
    if (origin === '' || origin === 'null') {
      // Not an http(s) page: it gets no decision, and the previous page's is withdrawn.
      this.forget(tabId);
      await this.d.rules.sync();
      return;
    }
    this.counter++;
    const nav = `${tabId}-${this.counter}`;
    const timing: NavTimings = {
      nav,
      tab: tabId,
      origin,
      source: 'none',
      navStartedAt,
      decidedAt: null,
      ruleInstalledAt: null,
      completedAt: null,
    };
    this.remember(timing);
    this.latest.set(tabId, timing);
    // A report still waiting for the previous navigation's decision waits no more: that page is gone.
    this.release(tabId);
    let status = this.d.host.status();
    if (status.host === 'connecting' && this.d.host.whenConnected) {
      // The service worker (re)started with this navigation: its host is on the way, and the navigation gets a
      // decision rather than none.
      await this.d.host.whenConnected(CONNECT_WAIT_MS);
      status = this.d.host.status();
    }
    if (status.host !== 'connected' || status.policy === null) {
      this.d.rules.removeTab(tabId);
      this.setRecord(none(timing, `no host (${status.host}: ${status.detail}); no header is sent`));
      await this.d.rules.sync();
      return;
    }

    let rec: TabRecord;
    try {
      const path = urlPath(url);
      const decision = await this.d.host.decide(path === undefined ? { origin, tab: tabId, nav } : { origin, tab: tabId, nav, path });
      timing.decidedAt = this.d.now();
      timing.source = 'host';
      rec = fromDecision(timing, decision);
    } catch (e) {
      timing.decidedAt = this.d.now();
      const err = e as RequestError;
      const now = this.d.host.status();
      if (err.kind === 'disconnected' || now.host !== 'connected' || now.policy === null) {
        rec = none(timing, `no host (${now.host}: ${now.detail}); no header is sent`);
      } else {
        timing.source = 'fallback';
        rec = fallback(timing, now.policy, err.message);
      }
    }

    const current = this.latest.get(tabId) === timing;
    const connected = this.d.host.status().host === 'connected';
    let ruleId: number | null | undefined = null;
    if (connected && rec.header !== null) {
      // A decision for an origin holds for that origin even when the tab has moved on.
      ruleId = this.d.rules.setOrigin(origin, rec.header);
      if (current && tabId >= 0) {
        const tabRule = this.d.rules.setTab(tabId, rec.header);
        ruleId ??= tabRule;
      }
    } else if (current) {
      this.d.rules.removeTab(tabId);
    }
    if (current) this.setRecord(rec);
    await this.d.rules.sync();
    if (ruleId !== null && ruleId !== undefined && this.d.rules.isInstalled(ruleId)) {
      timing.ruleInstalledAt = this.d.now();
      rec.ruleInstalledAt = timing.ruleInstalledAt;
      if (current) this.saved();
    }
  }

  /** webNavigation.onCompleted for a tab's main frame. */
  completed(tabId: number, url: string): void {
    const rec = this.tabs.get(tabId);
    if (rec === undefined) return;
    let origin = '';
    try {
      origin = new URL(url).origin;
    } catch {
      return;
    }
    if (origin !== rec.origin || rec.completedAt !== null) return;
    rec.completedAt = this.d.now();
    const t = this.recent.find((n) => n.nav === rec.nav);
    if (t) t.completedAt = rec.completedAt;
    this.saved();
  }

  /**
   * Resolves once the tab's newest navigation to origin has its record: at once when it has one (or the tab has no
   * navigation to origin under way), else when its decision (or the safe default) is recorded, the navigation is
   * superseded or the tab closes. A page can finish loading, and its content script report the load, before the
   * host's decide reply arrives; its report waits here for the record it belongs to instead of being dropped.
   * Bounded: 'late' after REPORT_HOLD_MS, 'full' at once when MAX_HELD_REPORTS already wait.
   */
  decided(tabId: number, origin: string): Promise<Wait> {
    const pending = this.latest.get(tabId);
    if (pending === undefined || pending.origin !== origin || this.tabs.get(tabId)?.nav === pending.nav) return Promise.resolve('ready');
    if (this.held.size >= MAX_HELD_REPORTS) return Promise.resolve('full');
    return new Promise((resolve) => {
      const h: Held = {
        tab: tabId,
        release: (how = 'ready') => {
          if (!this.held.delete(h)) return;
          this.d.clearTimer(timer);
          resolve(how);
        },
      };
      const timer = this.d.setTimer(() => h.release('late'), REPORT_HOLD_MS);
      this.held.add(h);
    });
  }

  /** How many load reports wait for a decision now. */
  heldReports(): number {
    return this.held.size;
  }

  /** tabs.onRemoved. */
  async closed(tabId: number): Promise<void> {
    this.tabs.delete(tabId);
    this.latest.delete(tabId);
    this.release(tabId);
    this.d.rules.removeTab(tabId);
    this.saved();
    await this.d.rules.sync();
  }

  /**
   * The host's status changed. Without a host every header rule goes (the safe default: no multipath, no header);
   * with one, the network rule follows the policy in policyChanged.
   */
  async hostChanged(status: HostStatus): Promise<void> {
    if (status.host !== 'connected') {
      this.d.rules.clearAll();
      this.invalidate();
    }
    this.refreshBadges(status);
    await this.d.rules.sync();
  }

  /** A new network-wide policy (or none). Decisions made under the old one no longer hold. */
  async policyChanged(policy: Policy | null): Promise<void> {
    this.d.rules.clearDecisions();
    this.d.rules.setNetwork(policy === null ? null : headerValue(policy));
    this.invalidate();
    this.refreshBadges(this.d.host.status());
    await this.d.rules.sync();
  }

  refreshBadges(status: HostStatus): void {
    const pause = this.d.pause?.() ?? null;
    this.d.badge(undefined, badgeFor(status, undefined, pause));
    for (const rec of this.tabs.values()) this.d.badge(rec.tab, badgeFor(status, rec, pause));
  }

  /** Takes over records saved by a previous service worker; their rules are gone, so they are stale. */
  restore(s: unknown): void {
    if (s === null || typeof s !== 'object') return;
    const snap = s as Partial<PagesSnapshot>;
    if (typeof snap.counter === 'number' && Number.isSafeInteger(snap.counter) && snap.counter > this.counter) {
      this.counter = snap.counter;
    }
    if (!Array.isArray(snap.tabs)) return;
    for (const r of snap.tabs as unknown[]) {
      if (!isRecord(r) || this.tabs.has(r.tab)) continue;
      this.tabs.set(r.tab, { ...r, stale: true, header: null });
    }
  }

  record(tabId: number): TabRecord | undefined {
    const r = this.tabs.get(tabId);
    return r && structuredClone(r);
  }

  /** The tab's page in brief, without copying its record: webRequest asks for it on every response. */
  current(tabId: number): Pick<TabRecord, 'origin' | 'nav' | 'source' | 'stale' | 'theta1'> | undefined {
    const r = this.tabs.get(tabId);
    return r && { origin: r.origin, nav: r.nav, source: r.source, stale: r.stale, theta1: r.theta1 };
  }

  /** Last record per tab, keyed by tab id. */
  decisions(): Record<string, TabRecord> {
    const out: Record<string, TabRecord> = {};
    for (const [tab, r] of this.tabs) out[String(tab)] = structuredClone(r);
    return out;
  }

  navs(): NavTimings[] {
    return this.recent.map((n) => ({ ...n }));
  }

  /** The most recent navigation to origin. */
  navTimings(origin: string): NavTimings | null {
    for (let i = this.recent.length - 1; i >= 0; i--) {
      const n = this.recent[i];
      if (n !== undefined && n.origin === origin) return { ...n };
    }
    return null;
  }

  private forget(tabId: number): void {
    this.latest.delete(tabId);
    this.release(tabId);
    if (!this.tabs.has(tabId)) return;
    this.tabs.delete(tabId);
    this.d.rules.removeTab(tabId);
    this.d.badge(tabId, badgeFor(this.d.host.status(), undefined, this.d.pause?.() ?? null));
    this.saved();
  }

  private setRecord(rec: TabRecord): void {
    this.tabs.set(rec.tab, rec);
    this.d.badge(rec.tab, badgeFor(this.d.host.status(), rec, this.d.pause?.() ?? null));
    this.saved();
    // Reports held for this navigation go on now (held ones are always for the tab's newest navigation).
    if (this.latest.get(rec.tab)?.nav === rec.nav) this.release(rec.tab);
  }

  /** Lets the tab's held load reports go on (to the record the tab has now). */
  private release(tabId: number): void {
    for (const h of [...this.held]) if (h.tab === tabId) h.release();
  }

  private invalidate(): void {
    for (const r of this.tabs.values()) {
      r.stale = true;
      r.header = null;
    }
    this.saved();
  }

  private remember(t: NavTimings): void {
    this.recent.push(t);
    if (this.recent.length > RECENT_NAVS) this.recent.shift();
  }

  private saved(): void {
    this.d.save?.({ counter: this.counter, tabs: [...this.tabs.values()] });
  }
}

function fromDecision(t: NavTimings, d: Decision): TabRecord {
  return {
    tab: t.tab,
    nav: t.nav,
    origin: d.origin,
    source: 'host',
    stale: false,
    multipath: d.multipath,
    theta1: d.theta1,
    theta2: d.theta2,
    deadline_ms: d.deadline_ms,
    reason: d.reason,
    model: d.model,
    inputs: d.inputs,
    ...(d.terms ? { terms: d.terms } : {}),
    ...(d.size ? { size: d.size } : {}),
    ...(d.protocol ? { protocol: d.protocol } : {}),
    ...(d.basis ? { basis: d.basis } : {}),
    header: headerValue(d),
    navStartedAt: t.navStartedAt,
    decidedAt: t.decidedAt,
    ruleInstalledAt: null,
    completedAt: null,
  };
}

/** The host failed to decide: single path, with the network policy's other values, as the safe default. */
function fallback(t: NavTimings, p: Policy, why: string): TabRecord {
  const safe = { multipath: false, theta1: null, theta2: p.theta2, deadline_ms: p.deadline_ms };
  return {
    tab: t.tab,
    nav: t.nav,
    origin: t.origin,
    source: 'fallback',
    stale: false,
    ...safe,
    reason: `no decision from the host (${why}); single path as the safe default`,
    model: null,
    inputs: null,
    header: headerValue(safe),
    navStartedAt: t.navStartedAt,
    decidedAt: t.decidedAt,
    ruleInstalledAt: null,
    completedAt: null,
  };
}

function none(t: NavTimings, reason: string): TabRecord {
  return {
    tab: t.tab,
    nav: t.nav,
    origin: t.origin,
    source: 'none',
    stale: false,
    multipath: false,
    theta1: null,
    theta2: null,
    deadline_ms: null,
    reason,
    model: null,
    inputs: null,
    header: null,
    navStartedAt: t.navStartedAt,
    decidedAt: t.decidedAt,
    ruleInstalledAt: null,
    completedAt: null,
  };
}

function isRecord(r: unknown): r is TabRecord {
  if (r === null || typeof r !== 'object') return false;
  const x = r as Record<string, unknown>;
  return (
    typeof x.tab === 'number' &&
    Number.isInteger(x.tab) &&
    typeof x.nav === 'string' &&
    typeof x.origin === 'string' &&
    typeof x.reason === 'string' &&
    typeof x.multipath === 'boolean' &&
    (x.source === 'host' || x.source === 'fallback' || x.source === 'none')
  );
}
