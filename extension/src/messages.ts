// Messages between the popup and the service worker.

import type { HostStatus } from './host';
import type { BadgeView, TabRecord } from './pages';

export interface PopupQuery {
  type: 'popup-state';
  tabId: number | null;
}

export interface PopupState {
  status: HostStatus;
  page: TabRecord | null;
  badge: BadgeView;
}

export function popupQuery(tabId: number | undefined): PopupQuery {
  return { type: 'popup-state', tabId: tabId ?? null };
}

export function isPopupQuery(m: unknown): m is PopupQuery {
  if (m === null || typeof m !== 'object') return false;
  const q = m as Record<string, unknown>;
  return q.type === 'popup-state' && (q.tabId === null || (typeof q.tabId === 'number' && Number.isInteger(q.tabId)));
}
