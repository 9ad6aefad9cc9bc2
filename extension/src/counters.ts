// What the service worker counts of its work with the host, for the popup and the end-to-end tests: the recent
// loads and whether the host takes their reports, and how the peers and announce requests fared. Plain data, so
// vitest can run it.

import type { Report } from './protocol/records';
import { RECENT_LOADS, type LoadPoint } from './reports';
import type { Support } from './settings';

/** The last announce the host answered. */
export interface AnnounceLast {
  origin: string;
  bytes: number;
  joined: boolean;
  why: string;
  actuation: string;
}

/** How one kind of request fared: whether the host takes it (an older one may not), how many went, the last. */
export interface Sent<T> {
  supported: boolean;
  sent: number;
  last: T;
}

export class Counters {
  /** The most recent finished loads, oldest first, at most RECENT_LOADS. */
  readonly loads: LoadPoint[] = [];
  reportSupport: Support = { state: 'unknown', detail: 'no load reported yet', at: 0 };
  readonly peers: Sent<string> = { supported: true, sent: 0, last: '' };
  readonly announce: Sent<AnnounceLast | null> = { supported: true, sent: 0, last: null };
  /** The navs reported already, at most 1,000: a load is reported once. */
  private readonly reported = new Set<string>();

  /** Notes a finished load; false when its navigation was noted already. */
  load(report: Report, now: number): boolean {
    if (this.reported.has(report.nav)) return false;
    this.reported.add(report.nav);
    if (this.reported.size > 1_000) this.reported.delete(this.reported.values().next().value as string);
    this.loads.push({ at: now, origin: report.origin, plt_ms: report.plt_ms, transfer_bytes: report.transfer_bytes, protocol: report.protocol, multipath: report.multipath });
    if (this.loads.length > RECENT_LOADS) this.loads.shift();
    return true;
  }
}
