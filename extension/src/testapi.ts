// What the end-to-end tests read of the service worker (playwright evaluates these in it, as globalThis.mpsurf);
// every result is plain JSON.

import * as b from './browser';
import type { Parts } from './dispatch';
import { proxyInfoFor, scriptOf } from './pac';
import type { RuleBook } from './rules';

export function testApi(p: Parts & { rules: RuleBook; refresh(): Promise<void> }) {
  const { host, pages, settings, multipath, proxy, downloads, counters, rules } = p;
  return {
    status: () => host.status(),
    decisions: () => pages.decisions(),
    rules: async () => await b.sessionRules.read(),
    navs: () => pages.navs(),
    navTimings: (origin: string) => pages.navTimings(origin),
    ruleBook: () => ({ wanted: rules.wantedRules().length, updates: rules.updates, lastError: rules.lastError }),
    settings: () => settings.view(),
    loads: () => counters.loads.map((l) => ({ ...l })),
    heldReports: () => pages.heldReports(),
    reports: () => ({ ...counters.reportSupport }),
    peers: () => ({ ...counters.peers }),
    announce: () => ({ ...counters.announce }),
    downloads: () => p.downloadsView(),
    setDownloads: (enabled: boolean) => p.setDownloads(enabled),
    downloadAct: (id: string, action: 'pause' | 'resume' | 'cancel') => downloads.act(id, action),
    proxy: () => proxy.view(),
    /** The PAC script Chromium runs for the current routes (Firefox answers per request by the same rule), or null. */
    pac: () => {
      const t = proxy.wanted();
      return t && scriptOf(t);
    },
    /** The route the current table gives a URL, as Firefox's proxy.onRequest answers it. */
    routeFor: (url: string) => proxyInfoFor(url, proxy.wanted()),
    browser: () => b.browserName(),
    multipath: () => multipath.view(),
    /** The end-to-end tests' consent, as the first-run page's button gives it. */
    consent: async () => (await multipath.consent(Date.now())).gate,
    setMultipath: async (s: unknown) => (await multipath.set(s)).gate,
    refresh: () => p.refresh(),
    /** n sequential decide round trips, in ms; no rules are touched. */
    benchDecide: async (n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await host.decide({ origin: 'https://bench.example', tab: -1, nav: `bench-${i + 1}` });
        out.push(performance.now() - t0);
      }
      return out;
    },
  };
}
