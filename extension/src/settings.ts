// The user's settings at run time: keeps the preferences and the origins that opted in to the header, applies them
// to the header rules at once (scope and overrides), and sends the preferences to the host after every hello and on
// every change. A host that does not know the `prefs` request yet (error 7, unknown_type) is remembered and shown;
// the preferences still apply in the browser, and navigation never waits for any of this.

import { headerValue } from './header';
import { RequestError, type HostStatus } from './host';
import type { Policy } from './protocol/decide';
import { ErrorCode, type Request } from './protocol/envelope';
import { logDeleteRequest, logExportRequest, parseLogChunk, parsePrefsReply, prefsRequest } from './protocol/records';
import { loadPrefs, normalisePrefs, updateOptIns, type Prefs } from './prefs';
import type { RuleBook } from './rules';

/** Where the host stands on one kind of request. */
export interface Support {
  state: 'unknown' | 'ok' | 'unsupported' | 'error';
  detail: string;
  /** Date.now() of the last answer, 0 if none yet. */
  at: number;
}

export interface SettingsView {
  prefs: Prefs;
  optedIn: string[];
  /** Whether the host took the preferences. */
  prefsSync: Support & { hostPrefs: Record<string, unknown> | null };
  problem: string | null;
}

export interface SettingsDeps {
  rules: RuleBook;
  host: {
    status(): HostStatus;
    request<T>(build: (id: number) => Request, parse: (body: unknown) => T, timeoutMs?: number): Promise<T>;
  };
  save(key: string, value: unknown): Promise<void>;
  log?(line: string): void;
}

export const PREFS_KEY = 'prefs';
export const OPT_IN_KEY = 'optedIn';
const LOG_EXPORT_TIMEOUT_MS = 10_000;
/** 512 KiB chunks: 2,000 of them is 1 GiB, far beyond a decision log's retention; a host that loops stops here. */
const MAX_LOG_CHUNKS = 2_000;

/** Whether a failed request means "this host does not know that request type". */
export function isUnsupported(e: unknown): boolean {
  return e instanceof RequestError && e.kind === 'host' && e.wire?.code === ErrorCode.UnknownType;
}

export function unsupportedText(what: string, status: HostStatus): string {
  const v = status.hostVersion === null ? 'mpsurf-host' : `mpsurf-host ${status.hostVersion}`;
  return `${v} does not support ${what} yet; update the host`;
}

export class Settings {
  private prefs: Prefs;
  private optedIn: string[] = [];
  private problem: string | null = null;
  private sync: SettingsView['prefsSync'] = { state: 'unknown', detail: 'not sent yet', at: 0, hostPrefs: null };
  private policy: Policy | null = null;
  /** Bumped on every change so a slow reply to an older push does not overwrite the state of a newer one. */
  private generation = 0;
  logSupport: Support = { state: 'unknown', detail: 'not tried yet', at: 0 };

  constructor(private readonly d: SettingsDeps) {
    this.prefs = loadPrefs(undefined).prefs;
  }

  /** Takes over what storage.local held. */
  restore(storedPrefs: unknown, storedOptIns: unknown): void {
    const { prefs, problem } = loadPrefs(storedPrefs);
    this.prefs = prefs;
    this.problem = problem;
    if (problem) this.d.log?.(problem);
    this.optedIn = Array.isArray(storedOptIns) ? storedOptIns.filter((o): o is string => typeof o === 'string') : [];
  }

  view(): SettingsView {
    return structuredClone({ prefs: this.prefs, optedIn: this.optedIn, prefsSync: this.sync, problem: this.problem });
  }

  current(): Prefs {
    return structuredClone(this.prefs);
  }

  /** Validates, stores, applies and sends new preferences. Throws PrefsError (nothing changes) when invalid. */
  async set(raw: unknown): Promise<SettingsView> {
    const prefs = normalisePrefs(raw);
    this.prefs = prefs;
    this.problem = null;
    await this.d.save(PREFS_KEY, prefs);
    await this.apply();
    await this.push();
    return this.view();
  }

  /** A main-frame response from origin said Accept-Multipath-Policy: ?1 (true) or ?0 (false). */
  async optIn(origin: string, value: boolean): Promise<void> {
    const next = updateOptIns(this.optedIn, origin, value);
    const changed = next.length !== this.optedIn.length || next.some((o, i) => o !== this.optedIn[i]);
    this.optedIn = next;
    if (!changed && value) return;
    await this.d.save(OPT_IN_KEY, next).catch((e: unknown) => this.d.log?.(`storage.local: ${String(e)}`));
    if (this.prefs.header_scope === 'opt_in') await this.apply();
  }

  /** The host (re)connected or went away. */
  async hostChanged(status: HostStatus): Promise<void> {
    if (status.host === 'connected') {
      await this.push();
    } else {
      this.policy = null;
      this.sync = { ...this.sync, state: 'unknown', detail: `host ${status.host}: preferences are kept in the browser` };
    }
  }

  /** A new network-wide policy (or none): override rules carry its values. Call before Pages.policyChanged. */
  policyChanged(policy: Policy | null): void {
    this.policy = policy;
    this.setRules();
  }

  /** Puts scope and overrides into the rule book and syncs it. */
  async apply(): Promise<void> {
    this.setRules();
    await this.d.rules.sync();
  }

  private setRules(): void {
    this.d.rules.setScope(this.prefs.header_scope, this.optedIn);
    const p = this.policy;
    // Without a policy there is no header at all (no host, no multipath); overrides follow the host's values.
    this.d.rules.setOverrides(
      p === null
        ? []
        : this.prefs.overrides.map((o) => ({ host: o.host, header: headerValue({ ...p, theta1: o.rule === 'always' ? 0 : null }) })),
    );
  }

  /** Sends the preferences to the host; records (never throws) the outcome. */
  async push(): Promise<void> {
    const status = this.d.host.status();
    if (status.host !== 'connected') return;
    const gen = ++this.generation;
    const prefs = this.current();
    try {
      const hostPrefs = await this.d.host.request((id) => prefsRequest(id, prefs), parsePrefsReply);
      if (gen !== this.generation) return;
      this.sync = { state: 'ok', detail: 'the host applied these preferences', at: Date.now(), hostPrefs };
    } catch (e) {
      if (gen !== this.generation) return;
      this.sync = isUnsupported(e)
        ? { state: 'unsupported', detail: `${unsupportedText('preferences', status)}; they apply in the browser only`, at: Date.now(), hostPrefs: null }
        : { state: 'error', detail: `the host did not take the preferences: ${(e as Error).message}`, at: Date.now(), hostPrefs: null };
      this.d.log?.(this.sync.detail);
    }
  }

  /** Fetches the whole decision log chunk by chunk. Throws an Error a person can read. */
  async exportLog(format: 'csv' | 'jsonl'): Promise<{ data: string; rows: number; chunks: number }> {
    const status = this.d.host.status();
    let cursor: string | null = null;
    const parts: string[] = [];
    let rows = 0;
    for (let chunks = 1; chunks <= MAX_LOG_CHUNKS; chunks++) {
      let c;
      try {
        const at: string | null = cursor;
        c = await this.d.host.request((id) => logExportRequest(id, format, at), parseLogChunk, LOG_EXPORT_TIMEOUT_MS);
      } catch (e) {
        throw this.logFailure(e, 'exporting the decision log', status);
      }
      this.logSupport = { state: 'ok', detail: 'the host exports its decision log', at: Date.now() };
      parts.push(c.data);
      rows += c.rows;
      if (c.cursor === null) return { data: parts.join(''), rows, chunks };
      if (c.cursor === cursor) throw new Error('the host repeated its export cursor; the export stopped');
      cursor = c.cursor;
    }
    throw new Error(`the export did not end after ${MAX_LOG_CHUNKS} chunks`);
  }

  async deleteLog(): Promise<void> {
    const status = this.d.host.status();
    try {
      await this.d.host.request(logDeleteRequest, (b) => {
        if (b === null || typeof b !== 'object' || (b as { deleted?: unknown }).deleted !== true) throw new Error('log_delete: expected {"deleted": true}');
        return true;
      });
      this.logSupport = { state: 'ok', detail: 'the host deleted its decision log', at: Date.now() };
    } catch (e) {
      throw this.logFailure(e, 'deleting the decision log', status);
    }
  }

  private logFailure(e: unknown, what: string, status: HostStatus): Error {
    if (isUnsupported(e)) {
      this.logSupport = { state: 'unsupported', detail: unsupportedText('the decision log', status), at: Date.now() };
      return new Error(this.logSupport.detail);
    }
    const msg = e instanceof RequestError && e.kind === 'disconnected' ? `the host is not connected (${e.message})` : (e as Error).message;
    this.logSupport = { state: 'error', detail: `${what} failed: ${msg}`, at: Date.now() };
    return new Error(this.logSupport.detail);
  }
}
