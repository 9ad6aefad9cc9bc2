// How many bytes a page's responses have announced (Content-Length), so that a decision that waits for θ1 bytes
// lets the cellular subflow join as soon as the headers say that much will come, not once it has all arrived over
// WiFi (PROTOCOL.md §4 Announce). Beside a 2 Mbit/s WiFi, large pages had asked for 200 kB of responses 0.4 s into
// the load and received them 1.1-1.2 s into it. Nothing here touches the browser.

import { MAX_ANNOUNCED } from './protocol/peers';

export interface AnnouncePage {
  origin: string;
  nav: string;
  /** Only a page the host decided has a θ1 to reach. */
  decided: boolean;
  /** The decision's θ1: null for never. */
  theta1: number | null;
}

export interface AnnounceDeps {
  /** The tab's current page, or undefined when it has none. */
  pageOf: (tab: number) => AnnouncePage | undefined;
  send: (origin: string, tab: number, nav: string, bytes: number) => void;
}

/** One response as webRequest saw it start. */
export interface ResponseSeen {
  tab: number;
  url: string;
  /** The origin that asked for it (webRequest `initiator`). */
  initiator?: string;
  fromCache: boolean;
  status: number;
  /** The Content-Length header's value, as sent; undefined when there was none. */
  contentLength?: string;
}

interface Tally {
  nav: string;
  bytes: number;
  sent: boolean;
}

/** A Content-Length is 1*DIGIT (RFC 9110 §8.6); anything else, or a length past MAX_ANNOUNCED, counts nothing. */
export function contentLength(v: string | undefined): number {
  if (v === undefined || !/^\d{1,15}$/.test(v.trim())) return 0;
  const n = Number(v.trim());
  return n <= MAX_ANNOUNCED ? n : 0;
}

export class Announcer {
  private readonly tally = new Map<number, Tally>();

  constructor(private readonly d: AnnounceDeps) {}

  /**
   * One response that started in a tab. The page origin's own responses count, and what the page itself asked of
   * other origins (its peers, which the host puts in the same θ1 group); a cached response, a 304 or a 204
   * transfers no body and counts nothing. Once the sum reaches the decision's θ1 the host is told, once per page.
   */
  saw(r: ResponseSeen): void {
    if (r.tab < 0 || r.fromCache || r.status === 304 || r.status === 204) return;
    const n = contentLength(r.contentLength);
    if (n === 0) return;
    const page = this.d.pageOf(r.tab);
    if (!page) return;
    try {
      const u = new URL(r.url);
      if (u.origin !== page.origin && r.initiator !== page.origin) return;
    } catch {
      return;
    }
    let t = this.tally.get(r.tab);
    if (!t || t.nav !== page.nav) {
      t = { nav: page.nav, bytes: 0, sent: false };
      this.tally.set(r.tab, t);
    }
    t.bytes = Math.min(t.bytes + n, MAX_ANNOUNCED);
    if (t.sent || !page.decided || page.theta1 === null || page.theta1 <= 0 || t.bytes < page.theta1) return;
    t.sent = true;
    this.d.send(page.origin, r.tab, page.nav, t.bytes);
  }

  forget(tab: number): void {
    this.tally.delete(tab);
  }
}
