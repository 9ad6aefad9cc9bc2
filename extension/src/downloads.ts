// Large downloads handed to the host, which fetches them over WiFi and cellular at once (MP-H2; PROTOCOL.md §4
// Downloads). Chrome starts every download itself; once its final file name is known and the file is large enough,
// the download is offered to the host. Chrome's own download is cancelled only when the host says `running` (its
// first response checked out); whatever else happens, Chrome's download goes on untouched. Only a download Chrome
// holds as safe is offered (its danger verdict; one that turns dangerous before the host runs it is taken back).
// The request's cookies are those the browser itself would send with it (cookieHeaderFor), read for that URL only;
// an Authorization header is held only while handing downloads over is on (Credentials); both are sent with that
// one offer and kept nowhere.
//
// Nothing here touches the browser: browser.ts supplies the calls, so the tests run this with fakes.

import { normaliseOrigin } from './protocol/decide';
import type { DownloadOffer, DownloadState } from './protocol/downloads';

/** What Chrome says of a download (chrome.downloads.DownloadItem, the fields used). */
export interface ChromeDownload {
  id: number;
  url: string;
  finalUrl?: string;
  filename: string;
  totalBytes: number;
  state: string;
  incognito: boolean;
  byExtensionId?: string;
  /** Chrome's verdict (chrome.downloads DangerType): only "safe" is handed over. */
  danger: string;
  /** The page the download came from ("" when none: typed, or its referrer withheld). */
  referrer?: string;
}

/** A cookie of the download's URL as the browser keeps it (chrome.cookies.Cookie, the fields used). */
export interface BrowserCookie {
  name: string;
  value: string;
  path: string;
  sameSite: string;
}

/** A download as the extension keeps it (storage.local; no cookies, no headers). */
export interface DownloadRecord {
  id: string;
  chromeId: number;
  url: string;
  /** ChromeDownload.referrer: which cookies the browser would send (cookieHeaderFor). */
  referrer?: string;
  origin: string;
  file: string;
  size: number;
  /** Chrome's own download was cancelled: from then on the host's copy is the only one. */
  chromeCanceled: boolean;
  state: DownloadState | null;
  at: number;
}

export type SiteRule = 'always' | 'never' | 'auto';

export interface DownloadDeps {
  /** The user's switch (options page): off by default. */
  enabled(): boolean;
  /** The smallest download worth offering, in bytes (θ1 of the policy in force); null while there is no host. */
  threshold(): number | null;
  siteRule(origin: string): SiteRule;
  offer(o: DownloadOffer): Promise<DownloadState>;
  control(id: string, action: 'pause' | 'resume' | 'cancel'): Promise<DownloadState>;
  discard(file: string): Promise<void>;
  /** The browser's cookies for url (unpartitioned, as cookies.getAll gives them). */
  cookies(url: string): Promise<BrowserCookie[]>;
  /** An Authorization header the browser sent for url recently, if any, handed out once (Credentials.take). */
  authorization(url: string): string | undefined;
  userAgent(): string;
  cancelChrome(chromeId: number): Promise<void>;
  save(records: DownloadRecord[]): void;
  now(): number;
  log(line: string): void;
}

const WAIT_FOR_NAME = 'no final file name yet';

/** Records kept for the popup and for resuming after a restart. */
export const MAX_RECORDS = 50;

export class Downloads {
  private readonly records = new Map<string, DownloadRecord>();
  private readonly offered = new Set<number>();
  /** Chrome ids seen in onCreated, waiting for their final file name. */
  private readonly pending = new Map<number, ChromeDownload>();

  constructor(private readonly d: DownloadDeps) {}

  /** chrome.downloads.onCreated. */
  created(item: ChromeDownload): Promise<void> {
    this.pending.set(item.id, { ...item });
    return this.consider(item.id);
  }

  /** chrome.downloads.onChanged: the fields that changed. */
  changed(delta: { id: number; filename?: string; totalBytes?: number; state?: string; danger?: string }): Promise<void> {
    if (delta.danger !== undefined && delta.danger !== 'safe' && this.offered.has(delta.id)) return this.takeBack(delta.id, delta.danger);
    const item = this.pending.get(delta.id);
    if (item === undefined) return Promise.resolve();
    if (delta.danger !== undefined) item.danger = delta.danger;
    if (delta.filename !== undefined) item.filename = delta.filename;
    if (delta.totalBytes !== undefined) item.totalBytes = delta.totalBytes;
    if (delta.state !== undefined) item.state = delta.state;
    if (item.state !== 'in_progress') {
      this.pending.delete(delta.id);
      return Promise.resolve();
    }
    return this.consider(delta.id);
  }

  /** Chrome judged an offered download dangerous (a Safe Browsing verdict, say) before the host ran it: the host
   * drops its copy and Chrome's, which Chrome holds for the user to decide on, stays. After `running` Chrome's copy
   * is gone, and with it Chrome's verdicts. */
  private async takeBack(chromeId: number, danger: string): Promise<void> {
    const rec = this.records.get(`c${chromeId}`);
    if (rec === undefined || rec.chromeCanceled) return;
    this.records.delete(rec.id);
    this.persist();
    this.d.log(`download ${rec.id} stays with Chrome: Chrome holds it as ${danger}`);
    await this.d.control(rec.id, 'cancel').catch((e: unknown) => this.d.log(`download ${rec.id}: cancelling the host's copy: ${String(e)}`));
  }

  /** Why a Chrome download is not offered, or null when it is to be. */
  whyNot(item: ChromeDownload): string | null {
    if (!this.d.enabled()) return 'handing downloads to MPSurf is off';
    if (item.state !== 'in_progress') return `Chrome's download is ${item.state}`;
    // Chrome's verdict: a dangerous type waiting for "Keep", a Safe Browsing or enterprise verdict, a scan under
    // way, or a value added later. "accepted" too: the user accepted Chrome's copy, the one that was judged.
    if (item.danger !== 'safe') return `Chrome holds it as ${item.danger}`;
    if (item.incognito) return 'incognito downloads stay with the browser';
    if (item.byExtensionId) return 'started by an extension';
    const url = item.finalUrl || item.url;
    if (!url.startsWith('https://')) return 'not an https download';
    const threshold = this.d.threshold();
    if (threshold === null) return 'the host is not connected';
    if (!(item.totalBytes > 0)) return 'the server did not say the size';
    if (item.totalBytes < threshold) return `smaller than ${threshold} bytes`;
    if (!item.filename.startsWith('/')) return WAIT_FOR_NAME;
    const origin = normaliseOrigin(new URL(url).origin);
    if (origin === null) return 'not an http(s) origin';
    if (this.d.siteRule(origin) === 'never') return 'your site rule says never';
    return null;
  }

  private async consider(chromeId: number): Promise<void> {
    const item = this.pending.get(chromeId);
    if (item === undefined || this.offered.has(chromeId)) return;
    const why = this.whyNot(item);
    if (why !== null) {
      // Only a missing file name can still change (Chrome determines it after onCreated, or asks the user).
      if (why !== WAIT_FOR_NAME) this.pending.delete(chromeId);
      return;
    }
    this.offered.add(chromeId);
    this.pending.delete(chromeId);
    const url = item.finalUrl || item.url;
    const rec: DownloadRecord = {
      id: `c${chromeId}`,
      chromeId,
      url,
      referrer: item.referrer ?? '',
      origin: new URL(url).origin,
      file: item.filename,
      size: item.totalBytes,
      chromeCanceled: false,
      state: null,
      at: this.d.now(),
    };
    this.records.set(rec.id, rec);
    await this.send(rec, false);
  }

  /** Sends the offer; the headers are read now, for this URL, and dropped with the request. */
  private async send(rec: DownloadRecord, resume: boolean): Promise<void> {
    let st: DownloadState;
    try {
      const headers: DownloadOffer['headers'] = {};
      const cookie = cookieHeaderFor(await this.d.cookies(rec.url), rec.url, rec.referrer ?? '');
      if (cookie) headers.cookie = cookie;
      const auth = this.d.authorization(rec.url);
      if (auth) headers.authorization = auth;
      headers['user-agent'] = this.d.userAgent();
      st = await this.d.offer({ id: rec.id, url: rec.url, origin: rec.origin, size: rec.size, file: rec.file, headers, ...(resume ? { resume } : {}) });
    } catch (e) {
      this.d.log(`download ${rec.id}: not handed over: ${(e as Error).message}`);
      if (!rec.chromeCanceled) {
        this.records.delete(rec.id); // Chrome's own download goes on; nothing to show
      } else if (rec.state) {
        rec.state = { ...rec.state, state: 'failed', reason: `the host could not resume it: ${(e as Error).message}` };
      }
      this.persist();
      return;
    }
    this.pushed(st);
  }

  /** A `download` push, or a reply carrying a DownloadState. */
  pushed(st: DownloadState): void {
    const rec = this.records.get(st.id);
    if (rec === undefined) return;
    rec.state = st;
    rec.at = this.d.now();
    if (st.state === 'declined' && !rec.chromeCanceled) {
      this.d.log(`download ${rec.id} stays with Chrome: ${st.reason}`);
      this.records.delete(rec.id);
    } else if (st.state === 'running' && !rec.chromeCanceled) {
      rec.chromeCanceled = true;
      this.d.cancelChrome(rec.chromeId).catch((e: unknown) => this.d.log(`download ${rec.id}: cancelling Chrome's copy: ${String(e)}`));
      this.d.log(`download ${rec.id} runs in the host over both links; Chrome's copy cancelled`);
    } else if (st.state === 'failed' && !rec.chromeCanceled) {
      this.d.log(`download ${rec.id} stays with Chrome: ${st.reason}`);
      this.records.delete(rec.id);
    }
    this.persist();
  }

  /** Pause, resume or cancel from the popup. A download the host no longer knows (it restarted) is offered again
   * to resume, or its partial file discarded. */
  async act(id: string, action: 'pause' | 'resume' | 'cancel'): Promise<void> {
    const rec = this.records.get(id);
    if (rec === undefined) throw new Error(`no download ${id}`);
    try {
      this.pushed(await this.d.control(id, action));
    } catch (e) {
      if (!/no download/.test((e as Error).message)) throw e;
      if (action === 'resume') await this.send(rec, true);
      else if (action === 'cancel') {
        await this.d.discard(rec.file);
        if (rec.state) rec.state = { ...rec.state, state: 'canceled', reason: 'canceled' };
        this.persist();
      }
    }
  }

  /** The host (re)connected: downloads that were running when it stopped resume from their partial files. */
  async hostConnected(): Promise<void> {
    for (const rec of [...this.records.values()]) {
      const s = rec.state?.state;
      if (rec.chromeCanceled && (s === 'running' || s === 'starting')) {
        this.d.log(`download ${rec.id}: resuming after the host stopped`);
        await this.send(rec, true);
      }
    }
  }

  restore(saved: unknown): void {
    if (!Array.isArray(saved)) return;
    for (const r of saved.slice(-MAX_RECORDS)) {
      if (r && typeof r === 'object' && typeof r.id === 'string' && typeof r.file === 'string' && typeof r.url === 'string') {
        this.records.set(r.id, r as DownloadRecord);
      }
    }
  }

  list(): DownloadRecord[] {
    return [...this.records.values()].sort((a, b) => b.at - a.at).map((r) => ({ ...r, state: r.state && { ...r.state } }));
  }

  private persist(): void {
    const all = [...this.records.values()].sort((a, b) => a.at - b.at);
    while (all.length > MAX_RECORDS) this.records.delete(all.shift()!.id);
    this.d.save(this.list());
  }
}

/**
 * The Cookie header the browser would send with the download's own request (RFC 6265bis §5.8.3): its cookies for
 * that URL, longer paths first, but a SameSite=Strict one only when the request came from the same site. A
 * download's request is a navigation, so Lax and unrestricted cookies go; a Strict one goes when its referrer is
 * on the download's own host over https. Same host is narrower than same site (Chrome also sends them from a sibling
 * host of the same registrable domain, which needs the Public Suffix List to tell): such a download may then fail in
 * the host, and stays with Chrome. No referrer (typed, or withheld by the page) counts as elsewhere.
 */
export function cookieHeaderFor(cookies: readonly BrowserCookie[], url: string, referrer: string): string {
  let sameSite = false;
  try {
    const to = new URL(url);
    const from = new URL(referrer);
    sameSite = from.protocol === 'https:' && to.protocol === 'https:' && from.hostname === to.hostname;
  } catch {
    sameSite = false;
  }
  return cookies
    .filter((c) => c.sameSite !== 'strict' || sameSite)
    .sort((a, b) => b.path.length - a.path.length)
    .map((c) => `${c.name}=${c.value}`)
    .join('; ');
}

/** How long, and how many, Authorization headers are held for a download that may follow them. */
const CREDENTIALS_MS = 60_000;
const CREDENTIALS_KEPT = 32;

/**
 * Authorization headers the browser sent, held in memory so that a download behind HTTP authentication can carry
 * its own to the host: only while handing downloads over is on (nothing is held, and browser.ts listens to no
 * request, otherwise), each for a minute at most, and handed out once, for the exact URL that becomes a download.
 */
export class Credentials {
  private on = false;
  private readonly held = new Map<string, { value: string; at: number }>();

  /** Downloads handed over on or off; off forgets every header held. */
  enable(on: boolean): void {
    this.on = on;
    if (!on) this.held.clear();
  }

  enabled(): boolean {
    return this.on;
  }

  /** A request to url carried this Authorization header at time now (ms). */
  seen(url: string, value: string, now: number): void {
    if (!this.on) return;
    this.held.delete(url);
    this.held.set(url, { value, at: now });
    while (this.held.size > CREDENTIALS_KEPT) this.held.delete(this.held.keys().next().value as string);
  }

  /** The header for url, once; undefined when none was seen within the last minute. */
  take(url: string, now: number): string | undefined {
    for (const [u, e] of this.held) if (now - e.at >= CREDENTIALS_MS) this.held.delete(u);
    const e = this.held.get(url);
    this.held.delete(url);
    return this.on ? e?.value : undefined;
  }

  size(): number {
    return this.held.size;
  }
}

/** The user's site rule for an origin: the most specific override whose host is the origin's host or a parent of
 * it (as the host's own lookup does), else auto. */
export function ruleFor(overrides: readonly { host: string; rule: SiteRule }[], origin: string): SiteRule {
  let host: string;
  try {
    host = new URL(origin).hostname;
  } catch {
    return 'auto';
  }
  let best: { host: string; rule: SiteRule } | undefined;
  for (const o of overrides) {
    if ((host === o.host || host.endsWith(`.${o.host}`)) && (!best || o.host.length > best.host.length)) best = o;
  }
  return best?.rule ?? 'auto';
}
