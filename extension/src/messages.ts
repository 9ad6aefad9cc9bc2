// Messages between the extension's pages (popup, options) and the service worker.

import type { HostStatus } from './host';
import type { BadgeView, TabRecord } from './pages';
import type { ProxySettings } from './protocol/proxy';
import type { InstallKind, StatusReply } from './protocol/status';
import type { MultipathView } from './multipath';
import type { ProxyView } from './proxy';
import type { LoadPoint } from './reports';
import type { SettingsView, Support } from './settings';

export interface PopupQuery {
  type: 'popup-state';
  tabId: number | null;
}

export interface PopupState {
  status: HostStatus;
  page: TabRecord | null;
  badge: BadgeView;
  /** The host's own status reply (paths, RRC, store when it measures them); null with `hostError` when unavailable. */
  host: StatusReply | null;
  hostError: string | null;
  settings: SettingsView;
  loads: LoadPoint[];
  reports: Support;
  proxy?: ProxyView;
  multipath?: MultipathView;
  /** This tab's page goes through the user's MPTCP proxy. */
  viaProxy?: boolean;
  /** The browser's --user-data-dir as a host last reported it (null: the default profile; absent: never known). */
  profileDir?: string | null;
  /** How the host was installed as a host last reported it (absent: never known), for the fixes shown without one. */
  install?: InstallKind;
  /** The browser the extension runs in, for the commands the popup suggests. */
  browser?: 'chromium' | 'firefox';
}

export type PageRequest =
  | PopupQuery
  | { type: 'settings-get' }
  | { type: 'settings-set'; prefs: unknown }
  | { type: 'log-export'; format: 'csv' | 'jsonl' }
  | { type: 'log-delete' }
  | { type: 'downloads-get' }
  | { type: 'downloads-enable'; enabled: boolean }
  | { type: 'download-act'; id: string; action: 'pause' | 'resume' | 'cancel' }
  | { type: 'multipath-set'; settings: unknown }
  | { type: 'multipath-pause'; paused: boolean }
  | { type: 'consent' }
  | { type: 'proxy-set'; settings: ProxySettings }
  | { type: 'proxy-clear' }
  | { type: 'proxy-test' };

export interface SettingsState {
  settings: SettingsView;
  status: HostStatus;
  host: StatusReply | null;
  hostError: string | null;
  log: Support;
  proxy?: ProxyView;
  multipath?: MultipathView;
}

export type PageReply<T> = { ok: true; value: T } | { ok: false; error: string };

export function popupQuery(tabId: number | undefined): PopupQuery {
  return { type: 'popup-state', tabId: tabId ?? null };
}

export function isPopupQuery(m: unknown): m is PopupQuery {
  if (m === null || typeof m !== 'object') return false;
  const q = m as Record<string, unknown>;
  return q.type === 'popup-state' && (q.tabId === null || (typeof q.tabId === 'number' && Number.isInteger(q.tabId)));
}

export function isPageRequest(m: unknown): m is PageRequest {
  if (isPopupQuery(m)) return true;
  if (m === null || typeof m !== 'object') return false;
  const q = m as Record<string, unknown>;
  switch (q.type) {
    case 'settings-get':
    case 'log-delete':
    case 'consent':
    case 'proxy-clear':
    case 'proxy-test':
      return true;
    case 'multipath-set':
      return 'settings' in q;
    case 'multipath-pause':
      return typeof q.paused === 'boolean';
    case 'proxy-set': {
      const x = q.settings as Record<string, unknown> | null;
      return x !== null && typeof x === 'object' && ['server', 'user', 'password', 'pin'].every((k) => typeof x[k] === 'string');
    }
    case 'settings-set':
      return 'prefs' in q;
    case 'log-export':
      return q.format === 'csv' || q.format === 'jsonl';
    case 'downloads-get':
      return true;
    case 'downloads-enable':
      return typeof q.enabled === 'boolean';
    case 'download-act':
      return typeof q.id === 'string' && (q.action === 'pause' || q.action === 'resume' || q.action === 'cancel');
    default:
      return false;
  }
}
