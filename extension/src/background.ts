// The service worker's wiring: the browser (browser.ts) to the host connection (host.ts), the header rules
// (rules.ts), the per-tab state (pages.ts) and the rest, each built once here with what it needs. Listeners are
// registered synchronously at the top level, as MV3 requires for events that wake a stopped service worker. What it
// counts is counters.ts's, the answers to the extension's pages dispatch.ts's, what the end-to-end tests read
// testapi.ts's.

import * as b from './browser';
import { HostLink } from './host';
import { Pages } from './pages';
import { HOST_NAME } from './protocol/envelope';
import { announceRequest, parseAnnounceReply, parsePeersReply, peersRequest } from './protocol/peers';
import { parseProxyStatus, parseProxyTest, proxyStatusRequest, proxyTestRequest } from './protocol/proxy';
import { parseReportReply, reportRequest } from './protocol/records';
import type { StatusReply } from './protocol/status';
import { ProxyRouter, worthRelay } from './proxy';
import { MULTIPATH_KEY, Multipath } from './multipath';
import { migrateLimits } from './caps';
import { Peers } from './peers';
import { Announcer } from './announce';
import { RuleBook } from './rules';
import { isPageRequest } from './messages';
import { OPT_IN_HEADER, parseOptIn } from './prefs';
import { buildReport, isLoadTiming } from './reports';
import { OPT_IN_KEY, PREFS_KEY, Settings, isUnsupported, unsupportedText } from './settings';
import { Credentials, Downloads, ruleFor } from './downloads';
import type { DownloadsView } from './view';
import { downloadControlRequest, downloadDiscardRequest, downloadOfferRequest, parseDownloadState } from './protocol/downloads';
import { INSTALL_KINDS, type InstallKind } from './protocol/status';
import { Counters } from './counters';
import { answer, type Parts } from './dispatch';
import { testApi } from './testapi';

const SESSION_KEY = 'pages';

const log = (line: string): void => console.info(`mpsurf: ${line}`);

const rules = new RuleBook(b.sessionRules);
const counters = new Counters();

// HostLink and Pages refer to each other through these closures; both exist before any event can fire.
// eslint-disable-next-line prefer-const
let host: HostLink;
const proxy = new ProxyRouter({
  apply: b.setRoutes,
  test: () => host.request(proxyTestRequest, parseProxyTest, 10_000),
  now: () => Date.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
  log,
});
const multipath = new Multipath({
  host: {
    status: () => host.status(),
    request: (build, parse, timeoutMs) => host.request(build, parse, timeoutMs),
  },
  save: (key, value) => b.saveLocal(key, value),
  proxy,
  plan: () => {
    const p = settings.current();
    return { monthly_bytes: p.quota_bytes, billing_day: p.billing_day };
  },
  // Paused (or not yet agreed to): every header rule says mp=?0 and every badge "off", at once.
  gateChanged: (g) => {
    rules.setPaused(g.paused);
    pages.refreshBadges(host.status());
    return rules.sync();
  },
  log,
});
const pages = new Pages({
  host: {
    status: () => host.status(),
    whenConnected: (ms) => host.whenConnected(ms),
    // Each decision also decides the origin's route: DIRECT once it says multipath would not pay there.
    decide: (args) =>
      host.decide(args).then((d) => {
        void proxy.decision(d.origin, worthRelay(d));
        return d;
      }),
  },
  rules,
  now: () => performance.now(),
  badge: b.setBadge,
  pause: () => multipath.gate(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
  save: (snapshot) => {
    b.saveSession(SESSION_KEY, snapshot).catch((e: unknown) => log(`storage.session: ${String(e)}`));
  },
  log,
});
const settings = new Settings({
  rules,
  host: {
    status: () => host.status(),
    request: (build, parse, timeoutMs) => host.request(build, parse, timeoutMs),
  },
  save: (key, value) => b.saveLocal(key, value),
  log,
});
// Large downloads handed to the host (downloads.ts); off until the user turns it on in the options page.
const DOWNLOADS_KEY = 'downloads';
const DOWNLOADS_ON_KEY = 'downloads_enabled';
let downloadsEnabled = false;
// Authorization headers are read only while downloads are handed over (Credentials, browser.ts).
const credentials = new Credentials();
const watchCredentials = b.watchAuthorization(credentials);
function setDownloadsEnabled(on: boolean): void {
  downloadsEnabled = on;
  watchCredentials(on);
}
async function setDownloads(on: boolean): Promise<void> {
  setDownloadsEnabled(on);
  await b.saveLocal(DOWNLOADS_ON_KEY, on);
}
const downloads = new Downloads({
  // While multipath is paused nothing is handed over: the host would only decline it.
  enabled: () => downloadsEnabled && !multipath.gate().paused,
  threshold: () => host.status().policy?.theta1 ?? null,
  siteRule: (origin) => ruleFor(settings.view().prefs.overrides, origin),
  offer: (o) => host.request((id) => downloadOfferRequest(id, o), parseDownloadState, 5_000),
  control: (id, action) => host.request((rid) => downloadControlRequest(rid, id, action), parseDownloadState, 5_000),
  discard: (file) => host.request((rid) => downloadDiscardRequest(rid, file), parseDownloadState).then(() => undefined),
  cookies: (url) => b.cookiesFor(url),
  authorization: (url) => credentials.take(url, Date.now()),
  userAgent: b.userAgent,
  cancelChrome: (id) => b.cancelDownload(id),
  save: (records) => {
    b.saveLocal(DOWNLOADS_KEY, records).catch((e: unknown) => log(`storage.local: ${String(e)}`));
  },
  now: () => Date.now(),
  log,
});
b.onDownloadCreated((item) => void downloads.created(item));
b.onDownloadChanged((delta) => void downloads.changed(delta));
const downloadsUnsupported = b.downloadsUnsupported();
if (downloadsUnsupported !== null) log(`downloads stay with the browser: ${downloadsUnsupported}`);

function downloadsView(): DownloadsView {
  const g = multipath.gate();
  return {
    enabled: downloadsEnabled,
    host: host.connected,
    threshold: host.connected ? (host.status().policy?.theta1 ?? null) : null,
    paused: g.paused ? g.message : null,
    downloads: downloads.list(),
  };
}

host = new HostLink({
  connect: () => b.connectNative(HOST_NAME),
  version: b.extensionVersion(),
  events: {
    status: (s) => {
      // "connecting" is announced by the reconnect line already.
      if (s.host !== 'connecting') log(`host ${s.host}: ${s.detail}`);
      // First: the pause state reaches the host before any decide can (requests are answered in order).
      void multipath.hostChanged(s);
      void pages.hostChanged(s);
      void settings.hostChanged(s);
      if (s.host === 'connected') {
        void downloads.hostConnected();
        void refreshHost();
      } else void proxy.statusChanged(null);
    },
    push: (type, body) => {
      if (type !== 'download') return log(`ignored an unknown push "${type}"`);
      try {
        downloads.pushed(parseDownloadState(body));
      } catch (e) {
        log(`ignored a malformed download push: ${(e as Error).message}`);
      }
    },
    proxy: (p) => {
      void proxy.statusChanged(p);
    },
    policy: (p) => {
      if (p) log(`policy revision ${p.revision}: multipath ${p.multipath}, ${p.reason}`);
      settings.policyChanged(p);
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
  peers.forget(tabId);
  announcer.forget(tabId);
  void pages.closed(tabId);
});

// Each page's hosts and addresses, so that its third-party connections follow its decision in the kernel.
const peers = new Peers({
  pageOf: (tab) => {
    const r = pages.current(tab);
    return r && { origin: r.origin, nav: r.nav, decided: r.source === 'host' && !r.stale };
  },
  send: (origin, tab, list) => {
    // The page's other hosts (its CDNs, a third of a large page's bytes) take its route to the proxy too, from
    // their next request on, as they take its decision in the kernel.
    const page = pages.current(tab);
    if (page !== undefined && page.origin === origin && !page.stale) {
      void proxy.follow(origin, list.map((p) => p.host));
    }
    if (!counters.peers.supported || !host.connected) return;
    host
      .request((id) => peersRequest(id, origin, tab, list), parsePeersReply)
      .then((r) => {
        counters.peers.sent++;
        const refused = r.refused.length > 0 ? ` (${r.refused.length} refused, ${r.refused[0]!.host}: ${r.refused[0]!.why})` : '';
        counters.peers.last = `${origin}: ${r.addrs} addresses${refused}, ${r.actuation}`;
      })
      .catch((e: unknown) => {
        // An older host without `peers`: stop asking. Anything else is logged; the page goes on either way.
        if (isUnsupported(e)) counters.peers.supported = false;
        else log(`peers of ${origin}: ${(e as Error).message}`);
      });
  },
  setTimer: (fn, ms) => setTimeout(fn, ms),
});
b.onResponseAddress((tabId, url, ip, initiator) => peers.saw(tabId, url, ip, initiator));

// Once a page's responses announce θ1 bytes, its cellular subflow need not wait for them to arrive over WiFi.
const announcer = new Announcer({
  pageOf: (tab) => {
    const r = pages.current(tab);
    return r && { origin: r.origin, nav: r.nav, decided: r.source === 'host' && !r.stale, theta1: r.theta1 };
  },
  send: (origin, tab, nav, bytes) => {
    if (!counters.announce.supported || !host.connected) return;
    host
      .request((id) => announceRequest(id, origin, tab, nav, bytes), parseAnnounceReply)
      .then((r) => {
        counters.announce.sent++;
        counters.announce.last = { origin, bytes, ...r };
      })
      .catch((e: unknown) => {
        // An older host without `announce`: stop asking; the helper's θ1 on received bytes still applies.
        if (isUnsupported(e)) counters.announce.supported = false;
        else log(`announce of ${origin}: ${(e as Error).message}`);
      });
  },
});
b.onResponseLength((r) => announcer.saw(r));

// The relay asks the browser to authenticate (407); its per-process credentials come from the host's proxy status.
b.onAuthRequired((c) => proxy.auth(c.requestId, c.isProxy, c.challenger));
// Firefox routes each request as it starts (Chromium by the PAC the router installs).
b.listenForRoutes(log);

b.onInstalled((reason) => {
  if (reason === 'install') b.openExtensionPage('welcome.html').catch((e: unknown) => log(`welcome page: ${String(e)}`));
});

/** The host's status (cellular usage for the caps) and proxy status, now. */
async function refreshHost(): Promise<void> {
  if (!host.connected) return;
  const { host: st } = await hostReply();
  await multipath.usage(st);
  try {
    await proxy.statusChanged(await host.request(proxyStatusRequest, parseProxyStatus));
  } catch (e) {
    if (!isUnsupported(e)) log(`proxy status: ${(e as Error).message}`);
  }
}
// Caps move with use: checked every 30 s while the service worker runs, and after each finished load.
setInterval(() => void refreshHost(), 30_000);

b.onOptInHeader(OPT_IN_HEADER, (origin, value) => {
  const v = parseOptIn(value);
  if (v !== null) void settings.optIn(origin, v);
});

async function loadFinished(message: unknown, sender: b.Sender): Promise<void> {
  if (!isLoadTiming(message)) return;
  const r = await buildReport(message, sender, b.runtimeId(), pages);
  if ('drop' in r) return;
  const { report } = r;
  if (!counters.load(report, Date.now())) return;
  if (!host.connected) return;
  try {
    const { samples } = await host.request((id) => reportRequest(id, report), parseReportReply);
    counters.reportSupport = { state: 'ok', detail: `the host keeps ${samples} loads of ${report.origin}`, at: Date.now() };
  } catch (e) {
    counters.reportSupport = isUnsupported(e)
      ? { state: 'unsupported', detail: unsupportedText('load reports', host.status()), at: Date.now() }
      : { state: 'error', detail: `report failed: ${(e as Error).message}`, at: Date.now() };
  }
  // The load moved cellular bytes: the caps may be reached.
  void refreshHost();
}

// The browser's profile directory as the host last reported it, kept for when the host is gone: the install
// commands the popup shows must reach a browser started with --user-data-dir.
const PROFILE_KEY = 'browser_profile';
let profileDir: string | null | undefined;
// How the host was installed as it last reported it, kept likewise: a packaged host that is gone or failing is
// repaired with the package, not with the source build's commands.
const INSTALL_KEY = 'host_install';
let installKind: InstallKind | undefined;

/** The host's status reply, or why there is none. Short timeout: the popup must open quickly. */
async function hostReply(): Promise<{ host: StatusReply | null; hostError: string | null }> {
  if (!host.connected) return { host: null, hostError: `host ${host.status().host}` };
  try {
    const st = await host.hostStatus(1_000);
    const dir = st.browser_profile?.user_data_dir;
    if (dir !== undefined && dir !== profileDir) {
      profileDir = dir;
      b.saveLocal(PROFILE_KEY, dir).catch((e: unknown) => log(`storage.local: ${String(e)}`));
    }
    if (st.install !== undefined && st.install !== installKind) {
      installKind = st.install;
      b.saveLocal(INSTALL_KEY, st.install).catch((e: unknown) => log(`storage.local: ${String(e)}`));
    }
    return { host: st, hostError: null };
  } catch (e) {
    return { host: null, hostError: (e as Error).message };
  }
}

let markRestored = (): void => undefined;
const restored = new Promise<void>((resolve) => {
  markRestored = resolve;
});

const parts: Parts = {
  restored,
  host,
  pages,
  settings,
  multipath,
  proxy,
  downloads,
  counters,
  downloadsView,
  downloadsUnsupported,
  setDownloads,
  hostReply,
  profileDir: () => profileDir,
  installKind: () => installKind,
};

b.onMessage((message, sender) => {
  if (isLoadTiming(message)) {
    // From a content script in a web page: checked in buildReport, never answered.
    void loadFinished(message, sender);
    return undefined;
  }
  if (!b.isOwnPage(sender)) {
    log(`ignored a message from ${sender.id ?? 'an unknown sender'} ${sender.url ?? ''}`);
    return undefined;
  }
  if (!isPageRequest(message)) return undefined;
  return answer(parts, message);
});

/** Read by the end-to-end tests (testapi.ts). */
const api = testApi({ ...parts, rules, refresh: refreshHost });
(globalThis as unknown as { mpsurf: typeof api }).mpsurf = api;

async function startup(): Promise<void> {
  try {
    pages.restore(await b.loadSession(SESSION_KEY));
  } catch (e) {
    log(`could not restore tab state: ${String(e)}`);
  }
  try {
    const stored = await b.loadLocal([PREFS_KEY, OPT_IN_KEY, DOWNLOADS_KEY, DOWNLOADS_ON_KEY, MULTIPATH_KEY, PROFILE_KEY, INSTALL_KEY]);
    const dir = stored[PROFILE_KEY];
    if (profileDir === undefined && (dir === null || typeof dir === 'string')) profileDir = dir;
    const kind = stored[INSTALL_KEY];
    if (installKind === undefined && INSTALL_KINDS.includes(kind as InstallKind)) installKind = kind as InstallKind;
    // Settings stored before the one data-limit model: the monthly cap joins the plan's monthly limit.
    const limits = migrateLimits(stored[PREFS_KEY], stored[MULTIPATH_KEY]);
    if (limits.multipath !== stored[MULTIPATH_KEY]) {
      await Promise.all([b.saveLocal(PREFS_KEY, limits.prefs), b.saveLocal(MULTIPATH_KEY, limits.multipath)]);
      if (limits.note) log(limits.note);
    }
    settings.restore(limits.prefs, stored[OPT_IN_KEY]);
    setDownloadsEnabled(stored[DOWNLOADS_ON_KEY] === true);
    downloads.restore(stored[DOWNLOADS_KEY]);
    multipath.restore(limits.multipath, limits.note);
  } catch (e) {
    log(`could not read preferences: ${String(e)}`);
    multipath.restore(undefined);
  }
  markRestored();
  settings.policyChanged(null);
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
