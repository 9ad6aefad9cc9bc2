// Finished main-frame loads: what the content script measures (content.ts), checked here in the service worker and
// turned into the host's `report` (PROTOCOL.md §4). The origin and the URL's path leave the page, never its query
// or fragment.

import { MAX_HELD_REPORTS, REPORT_HOLD_MS, type TabRecord, type Wait } from './pages';
import { urlPath } from './protocol/decide';
import type { Report } from './protocol/records';

/** The content script's message. */
export interface LoadTiming {
  type: 'load-timing';
  protocol: string;
  transfer_bytes: number;
  plt_ms: number;
  /** Objects and new own-origin connections; an older content script leaves them out. */
  objects?: number;
  conns?: number;
}

const count = (x: unknown): boolean => x === undefined || (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 && x <= 100_000);

export function isLoadTiming(m: unknown): m is LoadTiming {
  if (m === null || typeof m !== 'object') return false;
  const t = m as Record<string, unknown>;
  return (
    t.type === 'load-timing' &&
    typeof t.protocol === 'string' &&
    t.protocol.length <= 16 &&
    typeof t.transfer_bytes === 'number' &&
    Number.isSafeInteger(t.transfer_bytes) &&
    t.transfer_bytes >= 0 &&
    t.transfer_bytes <= 2 ** 40 &&
    typeof t.plt_ms === 'number' &&
    Number.isFinite(t.plt_ms) &&
    t.plt_ms >= 0 &&
    t.plt_ms <= 600_000 &&
    count(t.objects) &&
    count(t.conns)
  );
}

/** What runtime.onMessage says about who sent a message (the fields this module reads). */
export interface ContentSender {
  id?: string;
  url?: string;
  frameId?: number;
  tab?: { id?: number };
}

/** What a report needs of the per-tab state (pages.ts). */
export interface TabDecisions {
  record(tab: number): TabRecord | undefined;
  /** Resolves once the tab's newest navigation to origin has its record (bounded in time). */
  decided(tab: number, origin: string): Promise<Wait>;
}

/**
 * The report for a load, or a reason to drop it. The sender must be this extension's content script in a tab's top
 * frame on an http(s) page, and the tab's current decision must be for that page's origin (otherwise the timing
 * belongs to a page MPSurf did not decide for, or to one that already moved on). A page that finished loading before
 * its decision arrived waits for it, so the load counts for the navigation it belongs to.
 */
export async function buildReport(
  m: LoadTiming,
  sender: ContentSender,
  ownId: string,
  tabs: TabDecisions,
): Promise<{ report: Report } | { drop: string }> {
  if (sender.id !== ownId) return { drop: 'not from this extension' };
  const tab = sender.tab?.id;
  if (tab === undefined || !Number.isInteger(tab) || tab < 0) return { drop: 'not from a tab' };
  if (sender.frameId !== 0) return { drop: 'not from a top frame' };
  let origin: string;
  try {
    const u = new URL(sender.url ?? '');
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return { drop: 'not an http(s) page' };
    origin = u.origin;
  } catch {
    return { drop: 'no page URL' };
  }
  const path = urlPath(sender.url ?? '');
  const wait = await tabs.decided(tab, origin);
  const rec = tabs.record(tab);
  if (rec === undefined || rec.origin !== origin) {
    const why = { ready: '', late: ` within ${REPORT_HOLD_MS} ms`, full: ` yet, and ${MAX_HELD_REPORTS} other loads already wait for theirs` }[wait];
    return { drop: `no decision for ${origin} in tab ${tab}${why}` };
  }
  return {
    report: {
      origin,
      tab,
      nav: rec.nav,
      protocol: m.protocol,
      transfer_bytes: m.transfer_bytes,
      plt_ms: Math.round(m.plt_ms * 10) / 10,
      multipath: rec.source === 'none' ? null : rec.multipath,
      ...(path === undefined ? {} : { path }),
      ...(m.objects === undefined ? {} : { objects: m.objects }),
      ...(m.conns === undefined ? {} : { conns: m.conns }),
    },
  };
}

/** One load as the popup's chart shows it. */
export interface LoadPoint {
  at: number;
  origin: string;
  plt_ms: number;
  transfer_bytes: number;
  protocol: string;
  multipath: boolean | null;
}

export const RECENT_LOADS = 40;
