// The service worker: wires the browser (browser.ts) to the host connection (host.ts), the header rules (rules.ts)
// and the per-tab state (pages.ts). Listeners are registered synchronously at the top level, as MV3 requires for
// events that wake a stopped service worker.

import * as b from './browser';
import { HostLink } from './host';
import { Pages, badgeFor } from './pages';
import { HOST_NAME } from './protocol';
import { RuleBook } from './rules';
import { isPopupQuery, type PopupState } from './messages';

const SESSION_KEY = 'pages';

const log = (line: string): void => console.info(`mpsurf: ${line}`);

const rules = new RuleBook(b.sessionRules);

// HostLink and Pages refer to each other through these closures; both exist before any event can fire.
// eslint-disable-next-line prefer-const
let host: HostLink;
const pages = new Pages({
  host: {
    status: () => host.status(),
    decide: (args) => host.decide(args),
  },
  rules,
  now: () => performance.now(),
  badge: b.setBadge,
  save: (snapshot) => {
    b.saveSession(SESSION_KEY, snapshot).catch((e: unknown) => log(`storage.session: ${String(e)}`));
  },
  log,
});
host = new HostLink({
  connect: () => b.connectNative(HOST_NAME),
  version: b.extensionVersion(),
  events: {
    status: (s) => {
      // "connecting" is announced by the reconnect line already.
      if (s.host !== 'connecting') log(`host ${s.host}: ${s.detail}`);
      void pages.hostChanged(s);
    },
    policy: (p) => {
      if (p) log(`policy revision ${p.revision}: multipath ${p.multipath}, ${p.reason}`);
      void pages.policyChanged(p);
    },
    log,
  },
});

b.onMainFrameNavigation((d) => {
  void pages.begin(d.tabId, d.url);
});
b.onMainFrameCompleted((d) => pages.completed(d.tabId, d.url));
b.onTabRemoved((tabId) => {
  void pages.closed(tabId);
});

b.onMessage((message, sender) => {
  if (!b.isOwnPage(sender)) {
    log(`ignored a message from ${sender.id ?? 'an unknown sender'} ${sender.url ?? ''}`);
    return undefined;
  }
  if (!isPopupQuery(message)) return undefined;
  const status = host.status();
  const page = (message.tabId === null ? undefined : pages.record(message.tabId)) ?? null;
  const state: PopupState = { status, page, badge: badgeFor(status, page ?? undefined) };
  return Promise.resolve(state);
});

/** Read by the end-to-end tests (playwright evaluates these in the service worker); every result is plain JSON. */
const api = {
  status: () => host.status(),
  decisions: () => pages.decisions(),
  rules: async () => await b.sessionRules.read(),
  navs: () => pages.navs(),
  navTimings: (origin: string) => pages.navTimings(origin),
  ruleBook: () => ({ wanted: rules.wantedRules().length, updates: rules.updates, lastError: rules.lastError }),
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
(globalThis as unknown as { mpsurf: typeof api }).mpsurf = api;

async function startup(): Promise<void> {
  try {
    pages.restore(await b.loadSession(SESSION_KEY));
  } catch (e) {
    log(`could not restore tab state: ${String(e)}`);
  }
  try {
    // Rules left by an earlier service worker belong to a host process that is gone: start from none.
    await rules.adopt();
  } catch (e) {
    log(`could not read session rules: ${String(e)}`);
  }
  rules.clearAll();
  await rules.sync();
  pages.refreshBadges(host.status());
  host.start();
}

void startup();
