// Every browser API call the extension makes goes through this module, so the rest of the code is plain logic that
// the unit tests run without a browser. It is also the one place that knows which browser runs the extension: the
// same build runs in Chromium (a service worker) and in Firefox (an event page), and where the two differ this
// module does what each one can (`gecko` below):
//   - the route to the relay: a PAC script in Chromium, proxy.onRequest per request in Firefox (pac.ts has the rule);
//   - declarativeNetRequest resource types: Firefox knows neither "webtransport" nor "webbundle" and refuses a rule
//     that names one, so they are left out of the rules it gets;
//   - webRequest: Firefox has no "extraHeaders" option (it shows every header without it) and names a request's
//     initiator by its originUrl rather than an `initiator` origin.
//
// Most calls use webextension-polyfill's promise API (in Firefox it is the browser's own `browser`). Some go to
// chrome.* directly in Chromium: declarativeNetRequest, whose polyfill typings follow Firefox (no
// "webtransport"/"webbundle" resource types) while the polyfill passes Chrome's promise-returning functions through
// untouched anyway; proxy.settings and onAuthRequired's asyncBlocking, which the polyfill does not wrap; and
// runtime.lastError, which is how Chrome says why a native port closed and which the polyfill does not carry over to
// ports.

import browser, { type Runtime } from 'webextension-polyfill';
import { EXITED_FIREFOX, type NativePort } from './host';
import type { BadgeView } from './pages';
import { proxyInfoFor, scriptOf, type RouteTable } from './pac';
import type { DnrRule, DnrUpdate, ResourceType, RuleBackend } from './rules';

/** Firefox (Gecko) runs this extension; otherwise a Chromium-family browser does. Its pages are moz-extension: URLs. */
export const gecko: boolean = browser.runtime.getURL('/').startsWith('moz-extension:');

/** The browser's family, for what the extension shows and logs. */
export function browserName(): 'firefox' | 'chromium' {
  return gecko ? 'firefox' : 'chromium';
}

export function connectNative(name: string): NativePort {
  const port = browser.runtime.connectNative(name);
  return {
    post: (m) => port.postMessage(m),
    disconnect: () => port.disconnect(),
    onMessage: (listener) => port.onMessage.addListener((m: unknown) => listener(m)),
    onDisconnect: (listener) =>
      port.onDisconnect.addListener((p) => {
        // Read inside the listener: Chrome sets lastError only for its duration.
        const chromeError = gecko ? undefined : globalThis.chrome?.runtime?.lastError?.message;
        const portError = (p as { error?: { message?: string } | null }).error?.message;
        // Firefox sets Port.error only when the port failed; a host that exited leaves it null.
        listener(chromeError ?? portError ?? (gecko ? EXITED_FIREFOX : undefined));
      }),
  };
}

/** Resource types Chromium's declarativeNetRequest knows and Firefox's does not (its schema refuses the rule). */
const NOT_IN_GECKO: ReadonlySet<ResourceType> = new Set<ResourceType>(['webtransport', 'webbundle']);

/** A rule as Firefox takes it: the same, without the resource types it does not know (nothing of that type exists there). */
function forGecko(r: DnrRule): DnrRule {
  return { ...r, condition: { ...r.condition, resourceTypes: r.condition.resourceTypes.filter((t) => !NOT_IN_GECKO.has(t)) } };
}

export const sessionRules: RuleBackend = gecko
  ? {
      update: (u: DnrUpdate) =>
        browser.declarativeNetRequest.updateSessionRules({
          removeRuleIds: u.removeRuleIds,
          addRules: u.addRules.map(forGecko) as unknown as browser.DeclarativeNetRequest.Rule[],
        }),
      read: async () => (await browser.declarativeNetRequest.getSessionRules()) as unknown as DnrRule[],
    }
  : {
      update: (u: DnrUpdate) => chrome.declarativeNetRequest.updateSessionRules(u as chrome.declarativeNetRequest.UpdateRuleOptions),
      read: async () => (await chrome.declarativeNetRequest.getSessionRules()) as unknown as DnrRule[],
    };

/** Sets the badge of one tab (or the default badge). A tab can close under us; that is not an error worth raising. */
export function setBadge(tabId: number | undefined, view: BadgeView): void {
  const tab = tabId === undefined ? {} : { tabId };
  Promise.all([
    browser.action.setBadgeText({ ...tab, text: view.text }),
    browser.action.setBadgeBackgroundColor({ ...tab, color: view.color }),
    browser.action.setTitle({ ...tab, title: view.title }),
  ]).catch(() => undefined);
}

export interface NavigationDetails {
  tabId: number;
  frameId: number;
  url: string;
}

/** Top-level navigations (frameId 0) of any scheme: a tab leaving http(s) must lose its decision too. */
export function onMainFrameNavigation(listener: (d: NavigationDetails) => void): void {
  browser.webNavigation.onBeforeNavigate.addListener((d) => {
    if (d.frameId === 0) listener(d);
  });
}

export function onMainFrameCompleted(listener: (d: NavigationDetails) => void): void {
  browser.webNavigation.onCompleted.addListener((d) => {
    if (d.frameId === 0) listener(d);
  }, { url: [{ schemes: ['http', 'https'] }] });
}

export function onTabRemoved(listener: (tabId: number) => void): void {
  browser.tabs.onRemoved.addListener((tabId) => listener(tabId));
}

export async function activeTabId(): Promise<number | undefined> {
  const [tab] = await browser.tabs.query({ active: true, currentWindow: true });
  return tab?.id;
}

export async function loadSession(key: string): Promise<unknown> {
  const got = await browser.storage.session.get(key);
  return got[key];
}

export function saveSession(key: string, value: unknown): Promise<void> {
  return browser.storage.session.set({ [key]: value });
}

export function extensionVersion(): string {
  return browser.runtime.getManifest().version;
}

export function saveLocal(key: string, value: unknown): Promise<void> {
  return browser.storage.local.set({ [key]: value });
}

export async function loadLocal(keys: string[]): Promise<Record<string, unknown>> {
  return browser.storage.local.get(keys);
}

export function runtimeId(): string {
  return browser.runtime.id;
}

export function openOptionsPage(): Promise<void> {
  return browser.runtime.openOptionsPage();
}

/**
 * Main-frame responses carrying Accept-Multipath-Policy, with the response's origin and the header's value. A
 * non-blocking listener: it only reads, and MV3 allows that with the "webRequest" permission and host permissions.
 */
export function onOptInHeader(header: string, listener: (origin: string, value: string) => void): void {
  const want = header.toLowerCase();
  browser.webRequest.onHeadersReceived.addListener(
    (d) => {
      const h = d.responseHeaders?.find((x) => x.name.toLowerCase() === want);
      if (h?.value === undefined) return;
      try {
        listener(new URL(d.url).origin, h.value);
      } catch {
        // A URL webRequest gave us always parses; nothing to do if not.
      }
    },
    { urls: ['http://*/*', 'https://*/*'], types: ['main_frame'] },
    ['responseHeaders'],
  );
}

/**
 * Every response that started in a tab, with the address it came from (`ip` is absent for cached responses) and
 * the origin that asked for it (`initiator`). Non-blocking and read-only, like onOptInHeader.
 */
export function onResponseAddress(listener: (tabId: number, url: string, ip: string | undefined, initiator: string | undefined) => void): void {
  browser.webRequest.onResponseStarted.addListener((d) => listener(d.tabId, d.url, d.ip, initiatorOf(d)), { urls: ['http://*/*', 'https://*/*'] });
}

/**
 * The origin that asked for a request: Chromium's `initiator`; in Firefox, which has none, the origin of its
 * `originUrl` (the document or resource that made the request).
 */
function initiatorOf(d: { initiator?: string; originUrl?: string }): string | undefined {
  if (d.initiator !== undefined || !gecko || d.originUrl === undefined) return d.initiator;
  try {
    const o = new URL(d.originUrl).origin;
    return o === 'null' ? undefined : o;
  } catch {
    return undefined;
  }
}

/**
 * Every response that started in a tab, with its status, whether it came from the cache, and its Content-Length
 * as sent (announce.ts). Non-blocking and read-only, like onOptInHeader.
 */
export function onResponseLength(
  listener: (r: { tab: number; url: string; initiator?: string; fromCache: boolean; status: number; contentLength?: string }) => void,
): void {
  browser.webRequest.onResponseStarted.addListener(
    (d) => {
      const h = d.responseHeaders?.find((x) => x.name.toLowerCase() === 'content-length');
      listener({ tab: d.tabId, url: d.url, initiator: initiatorOf(d), fromCache: d.fromCache, status: d.statusCode, contentLength: h?.value });
    },
    { urls: ['http://*/*', 'https://*/*'] },
    ['responseHeaders'],
  );
}

export interface Sender {
  id?: string;
  url?: string;
  frameId?: number;
  tab?: { id?: number };
}

/** True only for messages from this extension's own pages (the popup), never from other extensions or web pages. */
export function isOwnPage(sender: Sender): boolean {
  const base = browser.runtime.getURL('/');
  return sender.id === browser.runtime.id && typeof sender.url === 'string' && sender.url.startsWith(base);
}

/** runtime.onMessage; the handler answers with a promise, or undefined to stay silent. */
export function onMessage(handler: (message: unknown, sender: Sender) => Promise<unknown> | undefined): void {
  browser.runtime.onMessage.addListener((message: unknown, sender: Runtime.MessageSender) => handler(message, sender));
}

export function sendMessage(message: object): Promise<unknown> {
  return browser.runtime.sendMessage(message);
}

// Downloads (downloads.ts): Chrome's download events, cancelling Chrome's copy, and the request's credentials for
// one URL.

/**
 * Why this browser cannot hand downloads to the host, or null when it can. Chromium and desktop Firefox both have
 * downloads.onCreated, onChanged and cancel; a browser without them (Firefox for Android) keeps every download to
 * itself, and the listeners below are then not registered rather than failing the background page.
 */
export function downloadsUnsupported(): string | null {
  const d = (browser as { downloads?: Partial<typeof browser.downloads> }).downloads;
  if (d?.onCreated === undefined || d.onChanged === undefined || typeof d.cancel !== 'function') {
    return `${gecko ? 'this Firefox' : 'this browser'} has no downloads API to hand a download over with`;
  }
  return null;
}

export function onDownloadCreated(listener: (item: import('./downloads').ChromeDownload) => void): void {
  if (downloadsUnsupported() !== null) return;
  browser.downloads.onCreated.addListener((item) =>
    listener({
      id: item.id,
      url: item.url,
      finalUrl: (item as { finalUrl?: string }).finalUrl,
      filename: item.filename,
      totalBytes: item.totalBytes,
      state: item.state,
      incognito: item.incognito,
      byExtensionId: item.byExtensionId,
      danger: item.danger,
      referrer: (item as { referrer?: string }).referrer ?? '',
    }),
  );
}

export function onDownloadChanged(listener: (delta: { id: number; filename?: string; totalBytes?: number; state?: string; danger?: string }) => void): void {
  if (downloadsUnsupported() !== null) return;
  browser.downloads.onChanged.addListener((d) =>
    listener({ id: d.id, filename: d.filename?.current, totalBytes: d.totalBytes?.current, state: d.state?.current, danger: d.danger?.current }),
  );
}

export function cancelDownload(id: number): Promise<void> {
  return browser.downloads.cancel(id);
}

/** The browser's unpartitioned cookies for url; downloads.ts picks those the browser would send (cookieHeaderFor). */
export async function cookiesFor(url: string): Promise<import('./downloads').BrowserCookie[]> {
  const all = await browser.cookies.getAll({ url });
  return all.map((c) => ({ name: c.name, value: c.value, path: c.path, sameSite: c.sameSite }));
}

/**
 * Feeds `held` the Authorization headers of the browser's requests that can become a download (navigations and
 * downloads' own requests), and only while it is enabled: the listener is added when downloads are handed over and
 * removed when they are not, so that no request's credentials are read otherwise. Read-only and non-blocking.
 */
export function watchAuthorization(held: import('./downloads').Credentials): (on: boolean) => void {
  const listener = (d: browser.WebRequest.OnSendHeadersDetailsType): void => {
    const h = d.requestHeaders?.find((x) => x.name.toLowerCase() === 'authorization');
    if (h?.value !== undefined) held.seen(d.url, h.value, Date.now());
  };
  return (on) => {
    held.enable(on);
    const listening = browser.webRequest.onSendHeaders.hasListener(listener);
    if (on && !listening) {
      browser.webRequest.onSendHeaders.addListener(
        listener,
        { urls: ['https://*/*'], types: ['main_frame', 'sub_frame', 'other'] },
        // Chromium hides Authorization without "extraHeaders"; Firefox shows it anyway and refuses the option.
        (gecko ? ['requestHeaders'] : ['requestHeaders', 'extraHeaders']) as browser.WebRequest.OnSendHeadersOptions[],
      );
    } else if (!on && listening) browser.webRequest.onSendHeaders.removeListener(listener);
  };
}

export function userAgent(): string {
  return globalThis.navigator?.userAgent ?? '';
}

// Firefox: the table proxy.onRequest answers from, for every request, from the listener's first call on.
let geckoRoutes: RouteTable | null = null;
let geckoListening = false;

/**
 * Routes requests by `table` from now on, or clears the extension's proxy setting (null: everything DIRECT).
 * Chromium: a PAC script for the regular profile, not mandatory (a script Chromium cannot run means DIRECT, never no
 * network). Firefox: proxy.onRequest answers each request from the table (pac.ts proxyInfoFor), the same rule.
 */
export async function setRoutes(table: RouteTable | null): Promise<void> {
  if (gecko) {
    geckoRoutes = table;
    return;
  }
  if (table === null) {
    await chrome.proxy.settings.clear({ scope: 'regular' });
    return;
  }
  await chrome.proxy.settings.set({ value: { mode: 'pac_script', pacScript: { data: scriptOf(table), mandatory: false } }, scope: 'regular' });
}

/**
 * Firefox: registers the proxy.onRequest listener that answers from setRoutes's table. Registered at the event
 * page's start (a listener added later would not wake it). A request the listener cannot answer goes DIRECT, as a
 * PAC script Chromium cannot run does. Nothing in Chromium, which routes by its PAC.
 *
 * Only requests made for a tab take the table's route; Firefox's own (remote settings, add-on and certificate
 * updates: tabId -1) go DIRECT, as without MPSurf. A PAC script cannot tell them apart, so in Chromium they take
 * the table's route; in Firefox the user's cellular bytes go only to the pages MPSurf decides for.
 */
export function listenForRoutes(log: (line: string) => void): void {
  if (!gecko || geckoListening) return;
  geckoListening = true;
  if (browser.proxy?.onRequest === undefined) {
    // Not in desktop Firefox, which has it: say so rather than stop the event page; every request stays DIRECT.
    log('proxy: this Firefox has no proxy.onRequest; pages load directly, never through the relay');
    return;
  }
  browser.proxy.onRequest.addListener((d) => proxyInfoFor(d.url, d.tabId >= 0 ? geckoRoutes : null), { urls: ['<all_urls>'] });
  browser.proxy.onError.addListener((e) => log(`proxy: ${(e as { message?: string }).message ?? String(e)}`));
}

export interface AuthChallenge {
  requestId: string;
  isProxy: boolean;
  challenger: { host: string; port: number };
}

/**
 * Answers authentication challenges: credentials from `answer`, or nothing (the browser then does what it would
 * without MPSurf). asyncBlocking with the webRequestAuthProvider permission, as MV3 allows.
 */
export function onAuthRequired(answer: (c: AuthChallenge) => { username: string; password: string } | null): void {
  chrome.webRequest.onAuthRequired.addListener(
    (details, callback) => {
      const creds = answer({ requestId: details.requestId, isProxy: details.isProxy, challenger: details.challenger });
      callback?.(creds === null ? {} : { authCredentials: creds });
      return undefined;
    },
    { urls: ['<all_urls>'] },
    ['asyncBlocking'],
  );
}

/** runtime.onInstalled with its reason ("install", "update", ...). */
export function onInstalled(listener: (reason: string) => void): void {
  browser.runtime.onInstalled.addListener((d) => listener(d.reason));
}

/** Opens one of the extension's own pages in a new tab. */
export async function openExtensionPage(path: string): Promise<void> {
  await browser.tabs.create({ url: browser.runtime.getURL(path) });
}
