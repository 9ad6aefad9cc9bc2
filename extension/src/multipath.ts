// The user's multipath switches at run time: consent, pause, data limits and roaming (caps.ts) turned into one pause
// the host applies to every decision (PROTOCOL.md §4 Pause), into the proxy routing (proxy.ts) and, through
// `gateChanged`, into the header rules and the badge, which say no multipath while paused. The pause goes to the
// host before anything else after each hello, so that no decision is made multipath before consent.

import { RequestError, type HostStatus } from './host';
import { DEFAULT_MULTIPATH, NO_PLAN, gate, loadMultipath, normaliseMultipath, type CellularNow, type Gate, type MultipathSettings, type Plan } from './caps';
import type { Request } from './protocol/envelope';
import { pauseRequest, parsePauseReply } from './protocol/pause';
import type { StatusReply } from './protocol/status';
import type { ProxyRouter } from './proxy';

export const MULTIPATH_KEY = 'multipath';

export interface MultipathView {
  settings: MultipathSettings;
  gate: Gate;
  /** Whether the host took the pause state (false: not yet, or the host does not know `pause`). */
  hostApplied: boolean;
  problem: string | null;
  /** What changed in the stored settings at start-up (an older version's limits, migrated), for the options page. */
  notice: string | null;
}

export interface MultipathDeps {
  host: {
    status(): HostStatus;
    request<T>(build: (id: number) => Request, parse: (body: unknown) => T, timeoutMs?: number): Promise<T>;
  };
  save(key: string, value: unknown): Promise<void>;
  proxy: ProxyRouter;
  /** The monthly plan from the preferences (limit and billing day). */
  plan?(): Plan;
  /**
   * Called with every new gate, before anything is sent: the header rules and badges follow it. A change the
   * user made (consent, pause, settings) resolves only once the returned promise has (the rules are in place).
   */
  gateChanged?(g: Gate): Promise<void> | void;
  log?(line: string): void;
}

/** What the host's status says of cellular use and roaming. */
export function cellularNow(s: StatusReply | null): CellularNow {
  const u = s?.usage;
  return {
    today_bytes: u?.today_bytes ?? null,
    cycle_bytes: u === undefined ? null : u.used_bytes,
    roaming: s?.network?.roaming ?? null,
  };
}

export class Multipath {
  private s: MultipathSettings = { ...DEFAULT_MULTIPATH };
  private now: CellularNow = { today_bytes: null, cycle_bytes: null, roaming: null };
  private g: Gate = gate(this.s, this.now, NO_PLAN);
  private sent: string | null = null; // the pause last acknowledged by the host
  private problem: string | null = null;
  private notice: string | null = null;
  /** Resolved once the stored settings are read: a change made before (a page's early message) waits for it. */
  private restored!: () => void;
  private readonly ready = new Promise<void>((r) => (this.restored = r));

  constructor(private readonly d: MultipathDeps) {}

  /** Takes over what storage.local held (undefined: nothing stored, or it could not be read). */
  restore(stored: unknown, notice: string | null = null): void {
    this.restored();
    const { settings, problem } = loadMultipath(stored);
    this.s = settings;
    this.problem = problem;
    this.notice = notice;
    if (problem) this.d.log?.(problem);
    void this.regate();
    void this.applyProxy();
  }

  /** The preferences changed: the monthly plan may have. */
  planChanged(): Promise<void> {
    return this.update();
  }

  view(): MultipathView {
    return structuredClone({ settings: this.s, gate: this.g, hostApplied: this.sent === key(this.g), problem: this.problem, notice: this.notice });
  }

  gate(): Gate {
    return structuredClone(this.g);
  }

  /** Validates and stores new settings (throws SettingsError with nothing changed when invalid). */
  async set(raw: unknown): Promise<MultipathView> {
    await this.ready;
    const next = normaliseMultipath(raw);
    this.s = next;
    this.problem = null;
    await this.d.save(MULTIPATH_KEY, next);
    await this.update();
    return this.view();
  }

  async consent(at: number): Promise<MultipathView> {
    await this.ready;
    return this.set({ ...this.s, consent_at: at });
  }

  async pause(paused: boolean): Promise<MultipathView> {
    await this.ready;
    return this.set({ ...this.s, paused });
  }

  /** The host (re)connected: its pause state starts afresh. Call first, before anything else is sent. */
  hostChanged(status: HostStatus): Promise<void> {
    this.sent = null;
    if (status.host !== 'connected') return this.applyProxy();
    return this.update();
  }

  /** New usage from the host's status: the caps may have been reached. */
  usage(s: StatusReply | null): Promise<void> {
    this.now = cellularNow(s);
    return this.update();
  }

  private regate(): Promise<void> | void {
    this.g = gate(this.s, this.now, this.d.plan?.() ?? NO_PLAN);
    return this.d.gateChanged?.(this.gate());
  }

  private async update(): Promise<void> {
    const before = this.g;
    const rules = this.regate();
    if (this.g.why !== before.why) this.d.log?.(this.g.message);
    await Promise.all([rules, this.sendPause(), this.applyProxy()]);
  }

  private applyProxy(): Promise<void> {
    return Promise.all([this.d.proxy.setPaused(this.g.paused), this.d.proxy.setRoute(this.s.route)]).then(() => undefined);
  }

  private async sendPause(): Promise<void> {
    if (this.d.host.status().host !== 'connected') return;
    const k = key(this.g);
    if (this.sent === k) return;
    const { paused, why } = this.g;
    try {
      await this.d.host.request((id) => pauseRequest(id, paused, why), parsePauseReply);
      this.sent = k;
    } catch (e) {
      // An older host without `pause`: the extension still keeps multipath out of the PAC; decisions stay the host's.
      const msg = e instanceof RequestError ? e.message : String(e);
      this.d.log?.(`pause not applied by the host: ${msg}`);
    }
  }
}

function key(g: Gate): string {
  return `${g.paused}:${g.why}`;
}
