// The answers to the extension's own pages (popup, options, downloads page, first-run page): one request each
// (messages.ts), answered from the service worker's parts.

import * as b from './browser';
import type { Counters } from './counters';
import type { Downloads } from './downloads';
import type { HostLink } from './host';
import type { PageReply, PageRequest, PopupState, SettingsState } from './messages';
import type { Multipath } from './multipath';
import { badgeFor, type Pages } from './pages';
import { parseProxyStatus, parseProxyTest, proxyConfigRequest, proxyTestRequest } from './protocol/proxy';
import type { InstallKind, StatusReply } from './protocol/status';
import type { ProxyRouter } from './proxy';
import type { Settings } from './settings';
import type { DownloadsView } from './view';

/** The service worker's parts, as background.ts wires them. */
export interface Parts {
  host: HostLink;
  pages: Pages;
  settings: Settings;
  multipath: Multipath;
  proxy: ProxyRouter;
  downloads: Downloads;
  counters: Counters;
  /** The downloads page's view. */
  downloadsView(): DownloadsView;
  /** Why this browser keeps its downloads (no downloads API), null when they can be handed over. */
  downloadsUnsupported: string | null;
  /** Hands downloads over to the host, or stops, and keeps the choice. */
  setDownloads(enabled: boolean): Promise<void>;
  /** The host's status reply, or why there is none. */
  hostReply(): Promise<{ host: StatusReply | null; hostError: string | null }>;
  /** The browser's profile directory as the host last reported it (undefined: never). */
  profileDir(): string | null | undefined;
  /** How the host was installed as it last reported it (undefined: never). */
  installKind(): InstallKind | undefined;
  /**
   * Settles once the stored preferences, downloads and limits are back in the parts. A page can wake a stopped
   * service worker with its request: answered before the restore, it would read defaults, and a change it makes
   * would then be overwritten by the restore.
   */
  restored: Promise<void>;
}

async function settingsState(p: Parts): Promise<SettingsState> {
  return {
    settings: p.settings.view(),
    status: p.host.status(),
    ...(await p.hostReply()),
    log: p.settings.logSupport,
    proxy: p.proxy.view(),
    multipath: p.multipath.view(),
  };
}

/** Answers one of the extension's pages; a failure is an answer too, with its message. */
export async function answer(p: Parts, m: PageRequest): Promise<PageReply<unknown>> {
  const { host, pages, settings, multipath, proxy, downloads, counters } = p;
  try {
    await p.restored;
    switch (m.type) {
      case 'popup-state': {
        const status = host.status();
        const page = (m.tabId === null ? undefined : pages.record(m.tabId)) ?? null;
        // The host's reply first: it may be what tells the profile directory and the install.
        const reply = await p.hostReply();
        const profileDir = p.profileDir();
        const install = p.installKind();
        const state: PopupState = {
          status,
          page,
          badge: badgeFor(status, page ?? undefined, multipath.gate()),
          ...reply,
          settings: settings.view(),
          loads: counters.loads.map((l) => ({ ...l })),
          reports: { ...counters.reportSupport },
          proxy: proxy.view(),
          multipath: multipath.view(),
          viaProxy: page !== null && !page.stale && proxy.viaProxy(page.origin),
          ...(profileDir === undefined ? {} : { profileDir }),
          ...(install === undefined ? {} : { install }),
          browser: b.browserName(),
        };
        return { ok: true, value: state };
      }
      case 'settings-get':
        return { ok: true, value: await settingsState(p) };
      case 'settings-set':
        await settings.set(m.prefs);
        // The monthly plan is part of the preferences: the limits may have moved.
        await multipath.planChanged();
        return { ok: true, value: await settingsState(p) };
      case 'log-export':
        return { ok: true, value: await settings.exportLog(m.format) };
      case 'log-delete':
        await settings.deleteLog();
        return { ok: true, value: await settingsState(p) };
      case 'downloads-get':
        return { ok: true, value: p.downloadsView() };
      case 'downloads-enable':
        if (m.enabled && p.downloadsUnsupported !== null) return { ok: false, error: p.downloadsUnsupported };
        await p.setDownloads(m.enabled);
        return { ok: true, value: p.downloadsView() };
      case 'download-act':
        await downloads.act(m.id, m.action);
        return { ok: true, value: p.downloadsView() };
      case 'multipath-set':
        await multipath.set(m.settings);
        return { ok: true, value: await settingsState(p) };
      case 'multipath-pause':
        await multipath.pause(m.paused);
        return { ok: true, value: await settingsState(p) };
      case 'consent':
        await multipath.consent(Date.now());
        return { ok: true, value: await settingsState(p) };
      case 'proxy-set':
      case 'proxy-clear': {
        const body = m.type === 'proxy-set' ? m.settings : ({ clear: true } as const);
        await proxy.statusChanged(await host.request((id) => proxyConfigRequest(id, body), parseProxyStatus));
        return { ok: true, value: await settingsState(p) };
      }
      case 'proxy-test': {
        const r = await host.request(proxyTestRequest, parseProxyTest, 10_000);
        await proxy.tested(r);
        return { ok: true, value: r };
      }
    }
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}
