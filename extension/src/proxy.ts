// Routing to the user's MPTCP proxy: keeps the host's relay status and each host's route (through the relay, or
// DIRECT when its decision says multipath would not pay), and hands the browser the route table (pac.ts) that sends
// every other https host through the relay (Chromium as a PAC script, Firefox per request); answers the relay's 407
// with its per-process credentials; takes the proxy out of the routes the moment the host reports it down, and puts
// it back once a test through it succeeds. Plain logic behind small dependencies, so vitest runs it.

import type { Route } from './caps';
import { pacHost, requestRoute, routeTable, type RouteTable } from './pac';
import type { Decision } from './protocol/decide';
import type { ProxyStatus, ProxyTestResult } from './protocol/proxy';

/**
 * Whether a decided origin's connections are worth the relay: not when θ1 is never (a site rule, a pause, a cap,
 * h3, the battery floor: no cellular subflow would come), nor when the page's size is known and lies below θ1 (the
 * model expects no connection to pass it). A page of unknown size is, since the relay holds it on WiFi until θ1.
 * It mirrors the host's rule (native-host/protocol WorthRelay), both checked against native-host/vectors/relay.json,
 * so that what the extension routes DIRECT from a decide reply on is what the host then lists as direct.
 */
export function worthRelay(d: Pick<Decision, 'multipath' | 'theta1' | 'size'>): boolean {
  if (d.theta1 === null) return false;
  return d.multipath || d.size?.known !== true;
}

export interface ProxyDeps {
  /** Routes requests by the table from now on, or clears the extension's proxy setting (null: all DIRECT). */
  apply(table: RouteTable | null): Promise<void>;
  /** Asks the host to test the proxy (proxy_test); rejects when the host cannot be asked. */
  test(): Promise<ProxyTestResult>;
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(t: unknown): void;
  log?(line: string): void;
}

/** How often a proxy reported down is tried again while the PAC leaves it out. */
export const RETRY_DOWN_MS = 30_000;

export interface ProxyView {
  route: Route;
  status: ProxyStatus | null;
  /** The PAC sends https sites through the relay. */
  active: boolean;
  /** Why the PAC sends nothing to the proxy although a proxy is set, with when that began. */
  fallback: { reason: string; since: number } | null;
  /** Hosts that go DIRECT because their decision says multipath would not pay. */
  direct: number;
  pacError: string | null;
  lastTest: ProxyTestResult | null;
}

export class ProxyRouter {
  private status: ProxyStatus | null = null;
  private route: Route = 'decided';
  private paused = true; // until told otherwise: nothing goes to the proxy before consent
  private readonly decided = new Map<string, boolean>(); // host -> through the relay, most recent last
  private unreachable = new Set<string>(); // hosts the proxy could not reach: DIRECT whatever their decisions
  private installed: string | undefined = undefined; // the applied table as JSON; undefined: never set
  private fallback: ProxyView['fallback'] = null;
  private pacError: string | null = null;
  private retry: unknown = null;
  private lastTest: ProxyTestResult | null = null;
  private syncing: Promise<void> = Promise.resolve();
  /** Proxy-auth challenges answered per request, so that wrong credentials are not replayed forever. */
  private readonly answered = new Map<string, number>();

  constructor(private readonly d: ProxyDeps) {}

  /** The host's proxy status (reply or push), or null when the host is gone. */
  statusChanged(s: ProxyStatus | null): Promise<void> {
    const wasUp = this.status?.state !== 'down';
    this.status = s;
    if (s !== null) {
      this.unreachable = new Set(s.unreachable.map(pacHost).filter((h): h is string => h !== null));
      for (const h of s.direct) this.remember(h, false);
      for (const h of s.routes) this.remember(h, true);
    }
    const down = s !== null && (s.state === 'down' || s.state === 'error');
    if (down && (wasUp || this.fallback === null)) {
      this.fallback = { reason: `the proxy is ${s.state}: ${s.detail}; every site goes DIRECT`, since: this.d.now() };
      this.d.log?.(this.fallback.reason);
      this.scheduleRetry();
    } else if (!down) {
      this.fallback = null;
      this.cancelRetry();
    }
    return this.sync();
  }

  /** A decision for an origin: its host goes DIRECT while the decision is not worth the relay (worthRelay). */
  decision(origin: string, via: boolean): Promise<void> {
    const h = hostOf(origin);
    if (h === null) return Promise.resolve();
    const had = this.decided.get(h);
    this.remember(h, via);
    return had === via ? Promise.resolve() : this.sync();
  }

  /**
   * A page's other hosts (its CDNs: a third of a large page's bytes) take the page's route, as their connections
   * take its decision in the kernel; nothing when the page's own route is not known.
   */
  follow(origin: string, hosts: Iterable<string>): Promise<void> {
    const page = hostOf(origin);
    const via = page === null ? undefined : this.decided.get(page);
    if (via === undefined) return Promise.resolve();
    let changed = false;
    for (const raw of hosts) {
      const h = pacHost(raw);
      if (h === null) continue;
      changed ||= this.decided.get(h) !== via;
      this.remember(h, via);
    }
    return changed ? this.sync() : Promise.resolve();
  }

  setRoute(route: Route): Promise<void> {
    this.route = route;
    return this.sync();
  }

  setPaused(paused: boolean): Promise<void> {
    this.paused = paused;
    return this.sync();
  }

  /** Whether a page at origin goes through the proxy now: the route table's answer for its URL. */
  viaProxy(origin: string): boolean {
    let t: RouteTable | null;
    try {
      t = this.wanted();
      return t !== null && requestRoute(`${origin}/`, new URL(origin).hostname, t.all, t.direct);
    } catch {
      return false;
    }
  }

  /**
   * The answer to an authentication challenge: the relay's credentials for a challenge from the relay's own address,
   * at most twice per request (a second challenge means the relay changed under the browser), nothing otherwise.
   */
  auth(requestId: string, isProxy: boolean, challenger: { host: string; port: number }): { username: string; password: string } | null {
    const r = this.status?.relay;
    if (!isProxy || r === null || r === undefined || challenger.host !== r.host || challenger.port !== r.port) return null;
    const n = (this.answered.get(requestId) ?? 0) + 1;
    this.answered.set(requestId, n);
    if (this.answered.size > 1_000) this.answered.delete(this.answered.keys().next().value as string);
    if (n > 2) return null;
    return { username: r.user, password: r.password };
  }

  view(): ProxyView {
    return {
      route: this.route,
      status: this.status && structuredClone(this.status),
      active: this.active(),
      fallback: this.fallback && { ...this.fallback },
      direct: [...this.decided.values()].filter((v) => !v).length,
      pacError: this.pacError,
      lastTest: this.lastTest && { ...this.lastTest },
    };
  }

  /** Records a test run from the options page; a success after a failure brings the proxy back. */
  tested(r: ProxyTestResult): Promise<void> {
    this.lastTest = r;
    if (r.ok && this.fallback !== null && this.status !== null) {
      this.status = { ...this.status, state: 'up', detail: r.detail };
      this.fallback = null;
      this.cancelRetry();
    }
    return this.sync();
  }

  /** The route table wanted now, or null for no proxy. Throws when the host's relay is not one to route to. */
  wanted(): RouteTable | null {
    if (!this.active()) return null;
    const relay = this.status?.relay ?? null;
    const direct = [...this.decided].filter(([, via]) => !via).map(([h]) => h);
    direct.push(...this.unreachable); // last: the newest, kept whatever the bound
    return routeTable({ relay, direct, all: this.route === 'all' });
  }

  /** Applies the wanted table if it changed; serialised so that settings land in order. */
  sync(): Promise<void> {
    this.syncing = this.syncing.then(async () => {
      let table: RouteTable | null;
      try {
        table = this.wanted();
      } catch (e) {
        this.pacError = (e as Error).message;
        table = null;
      }
      const key = JSON.stringify(table);
      if (key === this.installed) return;
      try {
        await this.d.apply(table);
        this.installed = key;
        this.pacError = null;
      } catch (e) {
        this.pacError = `the proxy setting could not be changed: ${(e as Error).message}`;
        this.d.log?.(this.pacError);
      }
    });
    return this.syncing;
  }

  private active(): boolean {
    const s = this.status;
    return !this.paused && this.route !== 'off' && s !== null && s.relay !== null && this.fallback === null && s.state !== 'down' && s.state !== 'error';
  }

  private remember(host: string, multipath: boolean): void {
    const h = pacHost(host);
    if (h === null) return;
    this.decided.delete(h);
    this.decided.set(h, multipath);
    if (this.decided.size > 5_000) this.decided.delete(this.decided.keys().next().value as string);
  }

  private scheduleRetry(): void {
    if (this.retry !== null) return;
    this.retry = this.d.setTimer(() => {
      this.retry = null;
      if (this.fallback === null) return;
      this.d
        .test()
        .then((r) => this.tested(r))
        .catch((e: unknown) => this.d.log?.(`proxy test: ${(e as Error).message}`))
        .finally(() => {
          if (this.fallback !== null) this.scheduleRetry();
        });
    }, RETRY_DOWN_MS);
  }

  private cancelRetry(): void {
    if (this.retry !== null) this.d.clearTimer(this.retry);
    this.retry = null;
  }
}

/** The PAC's form of an origin's host, or null. */
function hostOf(origin: string): string | null {
  try {
    return pacHost(new URL(origin).hostname);
  } catch {
    return null;
  }
}
