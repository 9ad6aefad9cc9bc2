// Small fakes for unit tests of logic: a session-rule store that behaves like Chrome's for the calls RuleBook
// makes, and a native port.
import type { NativePort } from '../src/host';
import type { DnrRule, DnrUpdate, RuleBackend, RuleBook } from '../src/rules';

/** A rule book as it is once the user has agreed and multipath is not paused (a new one withholds multipath). */
export function agreed(book: RuleBook): RuleBook {
  book.setPaused(false);
  return book;
}

/** Chrome's updateSessionRules semantics that matter here: atomic, removals before additions, unique ids. */
export class FakeSessionRules implements RuleBackend {
  rules = new Map<number, DnrRule>();
  calls: DnrUpdate[] = [];
  failNext: string | null = null;
  /** Delays each update until release() when set, to test overlapping syncs. */
  hold = false;
  private waiting: (() => void)[] = [];

  async update(u: DnrUpdate): Promise<void> {
    this.calls.push(structuredClone(u));
    if (this.hold) await new Promise<void>((r) => this.waiting.push(r));
    if (this.failNext !== null) {
      const msg = this.failNext;
      this.failNext = null;
      throw new Error(msg);
    }
    const next = new Map(this.rules);
    for (const id of u.removeRuleIds) next.delete(id);
    for (const r of u.addRules) {
      if (next.has(r.id)) throw new Error(`Rule with id ${r.id} does not have a unique ID.`);
      next.set(r.id, structuredClone(r));
    }
    if (next.size > 5000) throw new Error('too many session rules');
    this.rules = next;
  }

  async read(): Promise<DnrRule[]> {
    return [...this.rules.values()].map((r) => structuredClone(r));
  }

  release(): void {
    const w = this.waiting;
    this.waiting = [];
    for (const r of w) r();
  }

  ids(): number[] {
    return [...this.rules.keys()].sort((a, b) => a - b);
  }
}

/** A native port whose far end the test plays. */
export class FakePort implements NativePort {
  sent: Record<string, unknown>[] = [];
  connected = true;
  private messageListeners: ((m: unknown) => void)[] = [];
  private disconnectListeners: ((e: string | undefined) => void)[] = [];

  post(message: object): void {
    if (!this.connected) throw new Error('Attempting to use a disconnected port object');
    this.sent.push(structuredClone(message) as Record<string, unknown>);
  }
  disconnect(): void {
    this.connected = false;
  }
  onMessage(l: (m: unknown) => void): void {
    this.messageListeners.push(l);
  }
  onDisconnect(l: (e: string | undefined) => void): void {
    this.disconnectListeners.push(l);
  }

  /** The host sends a message. */
  deliver(m: unknown): void {
    for (const l of this.messageListeners) l(structuredClone(m));
  }
  /** The port closes from the far side with Chrome's lastError message. */
  close(error: string | undefined): void {
    this.connected = false;
    for (const l of this.disconnectListeners) l(error);
  }
  last(): Record<string, unknown> {
    const m = this.sent.at(-1);
    if (m === undefined) throw new Error('nothing sent');
    return m;
  }
}
