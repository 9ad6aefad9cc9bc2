// The one connection to mpsurf-host: a persistent native messaging port (a one-shot message would start a host
// process per request: ~390 ms each, measured with a small host under Chromium), the hello handshake, request ids
// with timeouts, policy pushes, and reconnection with exponential backoff when the host goes away.
//
// Exactly one port exists at a time: the old one is disconnected before a new one is made, and events from a port
// that is no longer current are ignored. So the extension never runs two host processes.

import { decideRequest, parseDecision, parsePolicy, type Decision, type DecideArgs, type Policy } from './protocol/decide';
import { ERROR_NAMES, HOST_NAME, ProtocolError, isKnownErrorCode, nextId, parseIncoming, type Request, type WireError } from './protocol/envelope';
import { parseProxyStatus, type ProxyStatus } from './protocol/proxy';
import { helloRequest, parseHelloReply, parseStatusReply, statusRequest, type StatusReply } from './protocol/status';

/** A native messaging port, reduced to what HostLink needs (browser.ts adapts the real one). */
export interface NativePort {
  post(message: object): void;
  disconnect(): void;
  onMessage(listener: (message: unknown) => void): void;
  /** `error` is runtime.lastError's message when Chrome gave one. */
  onDisconnect(listener: (error: string | undefined) => void): void;
}

export type HostState = 'connected' | 'connecting' | 'missing' | 'exited' | 'error';

export interface HostStatus {
  host: HostState;
  detail: string;
  /** Date.now() when `host` last changed. */
  since: number;
  hostVersion: string | null;
  /** The network-wide policy in force; null whenever the host is not connected. */
  policy: Policy | null;
  /** Date.now() of the last decision received, 0 if none yet. */
  lastDecisionAt: number;
  /** Reconnection attempts since the extension started. */
  reconnects: number;
}

export const DECIDE_TIMEOUT_MS = 2_000;
/** Covers starting the host process as well as the round trip. */
export const HELLO_TIMEOUT_MS = 5_000;
export const BACKOFF_FIRST_MS = 200;
export const BACKOFF_MAX_MS = 30_000;

/** Delay before reconnection attempt number `attempt` (0-based): 200 ms, doubling, capped at 30 s. */
export function backoffDelay(attempt: number): number {
  if (!Number.isInteger(attempt) || attempt < 0) throw new RangeError(`attempt ${attempt}`);
  return attempt >= 20 ? BACKOFF_MAX_MS : Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** attempt);
}

// Chrome's wording for why a native port closed (extensions/browser/api/messaging/native_message_port.cc and
// native_message_process_host.cc), and Firefox's (toolkit/components/extensions/NativeMessaging.sys.mjs), which
// names a host it cannot find and closes the port without an error when the host exits.
const NOT_FOUND = 'Specified native messaging host not found.';
const NOT_FOUND_FIREFOX = /^No such native application [\w.]+$/;
const EXITED = 'Native host has exited.';
/** What browser.ts reports for a port Firefox closed without an error: the host exited or closed its stdout. */
export const EXITED_FIREFOX = 'the host exited (Firefox closed the port without an error)';

/** Maps the browser's message after a port closed (runtime.lastError, Port.error) to a status. */
export function classifyDisconnect(error: string | undefined): { host: 'missing' | 'exited' | 'error'; detail: string } {
  if (error === NOT_FOUND || (error !== undefined && NOT_FOUND_FIREFOX.test(error))) return { host: 'missing', detail: `${HOST_NAME} is not installed: ${error}` };
  if (error === EXITED || error === EXITED_FIREFOX) return { host: 'exited', detail: error };
  return { host: 'error', detail: error ?? 'the port closed without a reason' };
}

/** Why a request did not get a usable answer. */
export class RequestError extends Error {
  override name = 'RequestError';
  constructor(
    readonly kind: 'host' | 'timeout' | 'disconnected' | 'bad_reply' | 'bad_request',
    message: string,
    /** The §6 error for kind "host". */
    readonly wire?: WireError,
  ) {
    super(message);
  }
}

export interface HostEvents {
  /** The status changed (any field but lastDecisionAt). */
  status?(s: HostStatus): void;
  /** A new network-wide policy is in force (hello reply or push), or none (null) because the host went away. */
  policy?(p: Policy | null): void;
  /** A push other than `policy` (e.g. `download`), while connected; its body is unchecked. */
  push?(type: string, body: unknown): void;
  /** Something worth a line in the service worker's console. */
  log?(line: string): void;
  /** The host's relay or proxy changed state (push "proxy", PROTOCOL.md §5). */
  proxy?(s: ProxyStatus): void;
}

export interface HostOptions {
  connect(): NativePort;
  /** The extension's version, sent in hello. */
  version: string;
  events?: HostEvents;
  decideTimeoutMs?: number;
  helloTimeoutMs?: number;
}

interface Pending {
  type: string;
  resolve(body: Record<string, unknown>): void;
  reject(e: RequestError): void;
  timer: ReturnType<typeof setTimeout>;
}

export class HostLink {
  private port: NativePort | null = null;
  private readonly pending = new Map<number, Pending>();
  private lastId = 0;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private stopped = true;
  private st: HostStatus = {
    host: 'connecting',
    detail: 'not started',
    since: Date.now(),
    hostVersion: null,
    policy: null,
    lastDecisionAt: 0,
    reconnects: 0,
  };
  /** Callers of whenConnected, woken when the host is connected or found missing, dead or broken. */
  private waiters: ((connected: boolean) => void)[] = [];
  /** Host messages that failed validation, and replies that came after their request gave up. */
  rejected = 0;
  late = 0;

  constructor(private readonly opts: HostOptions) {}

  status(): HostStatus {
    return { ...this.st, policy: this.st.policy && { ...this.st.policy, model: { ...this.st.policy.model } } };
  }

  get connected(): boolean {
    return this.st.host === 'connected';
  }

  start(): void {
    this.stopped = false;
    this.open();
  }

  /**
   * Resolves true once the host is connected (at once if it is), false when it is found missing, dead or broken,
   * or after timeoutMs while it is still connecting.
   */
  whenConnected(timeoutMs: number): Promise<boolean> {
    if (this.st.host !== 'connecting') return Promise.resolve(this.st.host === 'connected');
    return new Promise((resolve) => {
      const done = (connected: boolean): void => {
        clearTimeout(timer);
        resolve(connected);
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(done);
    });
  }

  /** Closes the port for good (no reconnection). */
  stop(): void {
    this.stopped = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.drop('error', 'stopped', false);
  }

  decide(args: DecideArgs, timeoutMs = this.opts.decideTimeoutMs ?? DECIDE_TIMEOUT_MS): Promise<Decision> {
    return this.call((id) => decideRequest(id, args), timeoutMs).then((body) => {
      let d: Decision;
      try {
        d = parseDecision(body, args);
      } catch (e) {
        this.rejected++;
        throw new RequestError('bad_reply', (e as Error).message);
      }
      this.st.lastDecisionAt = Date.now();
      return d;
    });
  }

  /** Sends a request built by `build` and validates its reply with `parse` (PROTOCOL.md §4's newer types). */
  request<T>(build: (id: number) => Request, parse: (body: unknown) => T, timeoutMs = this.opts.decideTimeoutMs ?? DECIDE_TIMEOUT_MS): Promise<T> {
    return this.call(build, timeoutMs).then((body) => {
      try {
        return parse(body);
      } catch (e) {
        this.rejected++;
        throw new RequestError('bad_reply', (e as Error).message);
      }
    });
  }

  hostStatus(timeoutMs = this.opts.decideTimeoutMs ?? DECIDE_TIMEOUT_MS): Promise<StatusReply> {
    return this.call((id) => statusRequest(id), timeoutMs).then((body) => {
      try {
        return parseStatusReply(body);
      } catch (e) {
        this.rejected++;
        throw new RequestError('bad_reply', (e as Error).message);
      }
    });
  }

  // -------------------------------------------------------------------------------------------------------------

  private open(): void {
    if (this.port !== null) {
      const old = this.port;
      this.port = null;
      old.disconnect();
    }
    this.setStatus({ host: 'connecting', detail: `starting ${HOST_NAME}`, hostVersion: null, policy: null });
    let port: NativePort;
    try {
      port = this.opts.connect();
    } catch (e) {
      // connectNative throws only for a malformed name or a missing permission: a bug, not a missing host.
      this.drop('error', `connectNative failed: ${(e as Error).message}`, true);
      return;
    }
    this.port = port;
    port.onMessage((m) => {
      if (this.port === port) this.receive(m);
    });
    port.onDisconnect((error) => {
      if (this.port !== port) return;
      this.port = null;
      const { host, detail } = classifyDisconnect(error);
      this.drop(host, detail, true);
    });
    // Callbacks rather than a promise: the handshake's state changes happen as the reply arrives, not a microtask later.
    this.send(
      (id) => helloRequest(id, this.opts.version),
      this.opts.helloTimeoutMs ?? HELLO_TIMEOUT_MS,
      (body) => this.greeted(port, body),
      (e) => {
        if (this.port === port) this.drop('error', `hello failed: ${e.message}`, true);
      },
    );
  }

  private greeted(port: NativePort, body: Record<string, unknown>): void {
    if (this.port !== port) return;
    let reply;
    try {
      reply = parseHelloReply(body);
    } catch (e) {
      this.rejected++;
      this.drop('error', `bad hello reply: ${(e as Error).message}`, true);
      return;
    }
    this.attempt = 0;
    this.setStatus({
      host: 'connected',
      detail: `${reply.host} ${reply.version}, protocol ${reply.protocol}`,
      hostVersion: reply.version,
      policy: reply.policy,
    });
    this.opts.events?.policy?.(reply.policy);
  }

  /** Sends a request on the current port; rejects at once when there is none or the host is not connected. */
  private call(build: (id: number) => Request, timeoutMs: number): Promise<Record<string, unknown>> {
    if (!this.connected) {
      return Promise.reject(new RequestError('disconnected', `host ${this.st.host}: ${this.st.detail}`));
    }
    return new Promise((resolve, reject) => this.send(build, timeoutMs, resolve, reject));
  }

  /** Sends one request; exactly one of onReply and onFail is called, onFail after timeoutMs at the latest. */
  private send(
    build: (id: number) => Request,
    timeoutMs: number,
    onReply: (body: Record<string, unknown>) => void,
    onFail: (e: RequestError) => void,
  ): void {
    const port = this.port;
    if (port === null) {
      onFail(new RequestError('disconnected', 'no port'));
      return;
    }
    let id = nextId(this.lastId);
    while (this.pending.has(id)) id = nextId(id);
    this.lastId = id;
    let req: Request;
    try {
      req = build(id);
    } catch (e) {
      onFail(new RequestError('bad_request', `could not build the request: ${(e as Error).message}`));
      return;
    }
    const timer = setTimeout(() => {
      this.pending.delete(id);
      onFail(new RequestError('timeout', `no ${req.type} reply within ${timeoutMs} ms`));
    }, timeoutMs);
    this.pending.set(id, { type: req.type, resolve: onReply, reject: onFail, timer });
    try {
      port.post(req);
    } catch (e) {
      // postMessage throws when the port has just closed; onDisconnect follows.
      clearTimeout(timer);
      this.pending.delete(id);
      onFail(new RequestError('disconnected', `post failed: ${(e as Error).message}`));
    }
  }

  private receive(m: unknown): void {
    let msg;
    try {
      msg = parseIncoming(m);
    } catch (e) {
      this.rejected++;
      this.log(`ignored a malformed host message: ${(e as Error).message}`);
      return;
    }
    if (msg.kind === 'push') {
      this.push(msg.type, msg.body);
      return;
    }
    if (msg.id === 0) {
      // The host could not tell which request this answers (PROTOCOL.md §2): a bug on one side or the other.
      this.log(`host error for an unparsable request: ${msg.kind === 'error' ? msg.error.name : msg.type}`);
      return;
    }
    const p = this.pending.get(msg.id);
    if (p === undefined) {
      this.late++;
      this.log(`reply ${msg.id} (${msg.type}) came after its request gave up`);
      return;
    }
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.type !== p.type) {
      this.rejected++;
      p.reject(new RequestError('bad_reply', `reply ${msg.id}: type ${msg.type}, expected ${p.type}`));
    } else if (msg.kind === 'error') {
      const known = isKnownErrorCode(msg.error.code) ? ERROR_NAMES[msg.error.code] : `code ${msg.error.code}`;
      p.reject(new RequestError('host', `${known}: ${msg.error.message}`, msg.error));
    } else {
      p.resolve(msg.body);
    }
  }

  private push(type: string, body: unknown): void {
    if (type === 'proxy') {
      try {
        this.opts.events?.proxy?.(parseProxyStatus(body));
      } catch (e) {
        this.rejected++;
        this.log(`ignored a malformed proxy push: ${(e as Error).message}`);
      }
      return;
    }
    if (type !== 'policy') {
      if (this.opts.events?.push && this.connected) this.opts.events.push(type, body);
      else this.log(`ignored an unknown push "${type}"`);
      return;
    }
    if (!this.connected) {
      // The hello reply carries the policy; a push that overtakes it adds nothing.
      this.log('ignored a policy push before the hello reply');
      return;
    }
    let policy: Policy;
    try {
      policy = parsePolicy(body);
    } catch (e) {
      this.rejected++;
      this.log(`ignored a malformed policy push: ${(e as ProtocolError).message}`);
      return;
    }
    const current = this.st.policy;
    if (current !== null && policy.revision <= current.revision) {
      this.log(`ignored policy revision ${policy.revision}: revision ${current.revision} is in force`);
      return;
    }
    this.setStatus({ policy });
    this.opts.events?.policy?.(policy);
  }

  /** Tears the current port down, fails every pending request, and schedules the next attempt if `retry`. */
  private drop(host: 'missing' | 'exited' | 'error', detail: string, retry: boolean): void {
    if (this.port !== null) {
      const old = this.port;
      this.port = null;
      old.disconnect();
    }
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(new RequestError('disconnected', detail));
    }
    const hadPolicy = this.st.policy !== null;
    this.setStatus({ host, detail, hostVersion: null, policy: null });
    if (hadPolicy) this.opts.events?.policy?.(null);
    if (retry && !this.stopped) this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== null) return;
    const delay = backoffDelay(this.attempt);
    this.attempt++;
    this.log(`reconnecting in ${delay} ms (${this.st.host}: ${this.st.detail})`);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.stopped) return;
      this.st.reconnects++;
      this.open();
    }, delay);
  }

  private setStatus(change: Partial<HostStatus>): void {
    const host = change.host ?? this.st.host;
    const since = host !== this.st.host ? Date.now() : this.st.since;
    this.st = { ...this.st, ...change, since };
    this.opts.events?.status?.(this.status());
    if (this.st.host !== 'connecting') for (const w of this.waiters.splice(0)) w(this.st.host === 'connected');
  }

  private log(line: string): void {
    this.opts.events?.log?.(line);
  }
}
