// Which hosts and addresses each tab's page actually reached (webRequest's `ip`), sent to the host in small
// batches so that the page's connections to third parties, and to addresses the host's own resolver would not
// have named, follow the page's decision in the kernel (PROTOCOL.md §4 Peers). Nothing here touches the browser.

import { MAX_PEERS, type Peer } from './protocol/peers';

/** New pairs seen within this long go out in one request: a page's first responses arrive in a burst. */
export const PEERS_FLUSH_MS = 10;
/** Pairs remembered per page; past this a page's further hosts are not reported (the host keeps 64 per origin). */
export const PEERS_PER_PAGE = 4 * MAX_PEERS;

export interface PageRef {
  origin: string;
  nav: string;
  /** Only a page the host decided has a decision its peers can follow. */
  decided: boolean;
}

export interface PeersDeps {
  /** The tab's current page, or undefined when it has none. */
  pageOf: (tab: number) => PageRef | undefined;
  send: (origin: string, tab: number, peers: Peer[]) => void;
  setTimer: (fn: () => void, ms: number) => unknown;
}

interface Seen {
  nav: string;
  pairs: Set<string>;
}

export class Peers {
  private readonly seen = new Map<number, Seen>();
  private readonly pending = new Map<number, { origin: string; peers: Peer[] }>();
  private timer: unknown = null;

  constructor(private readonly d: PeersDeps) {}

  /**
   * One response that started in tab `tab`: its URL, the address it came from (undefined from the cache) and the
   * origin that asked for it (webRequest `initiator`). Only the page origin's own requests count: its document and
   * what the page itself loads, not what a frame of another origin inside it loads, which follows that origin.
   */
  saw(tab: number, url: string, ip: string | undefined, initiator?: string): void {
    if (tab < 0 || !ip) return;
    const page = this.d.pageOf(tab);
    if (!page?.decided) return;
    let host: string;
    try {
      const u = new URL(url);
      if (u.protocol !== 'https:' && u.protocol !== 'http:') return;
      if (u.origin !== page.origin && initiator !== page.origin) return;
      host = u.hostname;
    } catch {
      return;
    }
    let s = this.seen.get(tab);
    if (!s || s.nav !== page.nav) {
      // A new page: its peers follow its own decision, so report them again.
      s = { nav: page.nav, pairs: new Set() };
      this.seen.set(tab, s);
      this.pending.delete(tab);
    }
    const key = `${host} ${ip}`;
    if (s.pairs.has(key) || s.pairs.size >= PEERS_PER_PAGE) return;
    s.pairs.add(key);
    let p = this.pending.get(tab);
    if (!p) {
      p = { origin: page.origin, peers: [] };
      this.pending.set(tab, p);
    }
    p.peers.push({ host, ip });
    if (this.timer === null) this.timer = this.d.setTimer(() => this.flush(), PEERS_FLUSH_MS);
  }

  /** Sends what is pending, at most MAX_PEERS per request. */
  flush(): void {
    this.timer = null;
    for (const [tab, p] of this.pending) {
      for (let i = 0; i < p.peers.length; i += MAX_PEERS) this.d.send(p.origin, tab, p.peers.slice(i, i + MAX_PEERS));
    }
    this.pending.clear();
  }

  /** The tab closed. */
  forget(tab: number): void {
    this.seen.delete(tab);
    this.pending.delete(tab);
  }
}
