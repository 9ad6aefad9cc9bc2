import { describe, expect, it } from 'vitest';
import { decideRequest, normaliseOrigin, parseDecision, parsePolicy, urlPath, type DecideArgs } from '../src/protocol/decide';
import { CLIENT_NAME, ERROR_NAMES, ErrorCode, PUSH_TYPES, ProtocolError, REQUEST_TYPES, isKnownErrorCode, nextId, parseIncoming, type Request } from '../src/protocol/envelope';
import { PAUSE_REASONS, parsePauseReply, pauseRequest, type PauseWhy } from '../src/protocol/pause';
import { parsePeersReply, peersRequest, announceRequest, parseAnnounceReply, type Peer } from '../src/protocol/peers';
import { proxyConfigRequest } from '../src/protocol/proxy';
import { reportRequest } from '../src/protocol/records';
import { helloRequest, parseHelloReply, parseStatusReply, statusRequest } from '../src/protocol/status';
import { vectors } from './vectors';

type Json = Record<string, unknown>;
interface Exchange {
  name: string;
  request: Json;
  reply: Json;
}
const { exchanges } = vectors<{ exchanges: Exchange[] }>('exchanges.json');

/** The request as the extension's builders would make it, null when no builder can express it at all. */
function build(req: Json): Request | null {
  if (req.v !== 1) return null;
  const body = (req.body ?? {}) as Json;
  const id = req.id as number;
  switch (req.type) {
    case 'hello': {
      const protocols = body.protocols as unknown[];
      if (body.client !== CLIENT_NAME || protocols.length !== 1 || protocols[0] !== 1) return null;
      return helloRequest(id, body.version as string);
    }
    case 'decide':
      return decideRequest(id, body as unknown as DecideArgs);
    case 'status':
      return statusRequest(id);
    case 'peers':
      return peersRequest(id, body.origin as string, body.tab as number, body.peers as Peer[]);
    case 'announce':
      return announceRequest(id, body.origin as string, body.tab as number, body.nav as string, body.bytes as number);
    case 'pause':
      return pauseRequest(id, body.paused as boolean, body.why as PauseWhy);
    case 'proxy_config': {
      // The builder sends what the user typed; the host checks the address and the characters.
      const r = proxyConfigRequest(id, { server: body.server as string, user: body.user as string, password: body.password as string, pin: (body.pin as string) ?? '' });
      return r;
    }
    default:
      return null;
  }
}

/**
 * exchanges.json gives replies as subsets ("version, message, reason, inputs, pid... are not compared"). A real
 * reply has those keys too; this adds them, never touching a key the vector has.
 */
function complete(reply: Json, req: Json): Json {
  const policy = (p: Json | undefined): Json => ({ reason: 'baseline policy', ...(p ?? {}) });
  if (reply.ok === false) return { ...reply, error: { message: 'from the vector', ...(reply.error as Json) } };
  const body = reply.body as Json;
  switch (req.type) {
    case 'hello':
      return { ...reply, body: { version: '0.1.0', ...body, policy: policy(body.policy as Json) } };
    case 'status':
      return {
        ...reply,
        body: { version: '0.1.0', pid: 4242, uptime_ms: 12, decisions: 3, ...body, policy: policy(body.policy as Json) },
      };
    case 'decide': {
      // Decide vectors pin the protocol's fields, not the model's numbers (they move with policy-models/).
      const model = { version: 2, ...(body.model as Json) };
      const fill = { reason: 'page over θ1', inputs: { page_bytes: 1_500_000, path: 'lte' }, multipath: true, theta1: 0, theta2: null };
      return { ...reply, body: { ...fill, ...body, model } };
    }
    default:
      return reply;
  }
}

const constantFor = (name: string): number =>
  (ErrorCode as Record<string, number>)[
    name.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase()).replace('Json', 'JSON').replace('Utf8', 'UTF8')
  ]!;

describe('exchanges.json', () => {
  it('has exchanges to check', () => {
    expect(exchanges.length).toBeGreaterThanOrEqual(10);
  });

  it.each(exchanges.map((x) => [x.name, x] as const))('%s: request', (_, x) => {
    let built: Request | null;
    try {
      built = build(x.request);
    } catch (e) {
      // The builders refuse what the host would refuse as malformed: the extension never sends it.
      expect(e).toBeInstanceOf(RangeError);
      expect(x.reply.ok).toBe(false);
      expect([ErrorCode.BadRequest, ErrorCode.BadOrigin]).toContain((x.reply.error as Json).code);
      return;
    }
    if (built === null) {
      // Not expressible with the extension's builders (another version, an unknown type, a foreign hello).
      expect(x.reply.ok).toBe(false);
      return;
    }
    expect(built).toEqual(x.request);
  });

  it.each(exchanges.map((x) => [x.name, x] as const))('%s: reply validates', (_, x) => {
    const msg = parseIncoming(complete(x.reply, x.request));
    if (x.reply.ok === false) {
      const want = x.reply.error as { code: number; name: string };
      expect(msg.kind).toBe('error');
      if (msg.kind !== 'error') return;
      expect(msg.id).toBe(x.reply.id);
      expect(msg.type).toBe(x.reply.type);
      expect(msg.error.code).toBe(want.code);
      expect(msg.error.code).toBe(constantFor(want.name));
      expect(isKnownErrorCode(msg.error.code) && ERROR_NAMES[msg.error.code]).toBe(want.name);
      return;
    }
    expect(msg.kind).toBe('reply');
    if (msg.kind !== 'reply') return;
    expect(msg.id).toBe(x.request.id);
    const body = x.reply.body as Json;
    switch (x.request.type) {
      case 'hello':
        expect(parseHelloReply(msg.body)).toMatchObject(body);
        break;
      case 'status':
        expect(parseStatusReply(msg.body)).toMatchObject(body);
        break;
      case 'decide':
        expect(parseDecision(msg.body, x.request.body as unknown as DecideArgs)).toMatchObject(body);
        break;
      case 'peers':
        expect(parsePeersReply(msg.body)).toMatchObject(body);
        break;
      case 'announce':
        expect(parseAnnounceReply(msg.body)).toMatchObject(body);
        break;
      case 'pause':
        expect(parsePauseReply(msg.body)).toMatchObject(body);
        break;
      default:
        throw new Error(`no validator for ${String(x.request.type)}`);
    }
  });

  it('status: install is package or source, absent from an older host, and nothing else', () => {
    const st = exchanges.find((x) => x.request.type === 'status' && x.reply.ok === true)!;
    const body = complete(st.reply, st.request).body as Json;
    expect(parseStatusReply({ ...body, install: 'package' }).install).toBe('package');
    expect(parseStatusReply({ ...body, install: undefined }).install).toBeUndefined();
    for (const bad of ['apt', '', 1, { kind: 'package' }]) expect(() => parseStatusReply({ ...body, install: bad })).toThrow(/status\.install/);
  });

  it('every error code of PROTOCOL.md §6 has its name', () => {
    expect(Object.keys(ERROR_NAMES).map(Number)).toEqual(Object.values(ErrorCode));
    for (const [code, name] of Object.entries(ERROR_NAMES)) expect(constantFor(name)).toBe(Number(code));
  });
});

const goodPolicy = {
  revision: 3,
  multipath: true,
  theta1: 200_000,
  theta2: null,
  deadline_ms: 3000,
  reason: 'both paths up',
  model: { id: 'baseline-seed001', version: 1 },
};
const asked: DecideArgs = { origin: 'https://example.com', tab: 12, nav: '12-1' };
const { revision: _revision, ...policyFields } = goodPolicy;
const goodDecision = { ...policyFields, origin: 'https://example.com', tab: 12, nav: '12-1', inputs: { rtt_ms: 50 } };

describe('validators refuse what the protocol does not allow', () => {
  it('accepts the good examples', () => {
    expect(parsePolicy(goodPolicy)).toEqual(goodPolicy);
    expect(parseDecision(goodDecision, asked)).toEqual(goodDecision);
    expect(parsePolicy({ ...goodPolicy, theta2: 0, deadline_ms: 60_000 }).theta2).toBe(0);
  });

  it.each([
    ['revision 0', { revision: 0 }],
    ['revision a string', { revision: '3' }],
    ['multipath a number', { multipath: 1 }],
    ['theta1 negative', { theta1: -1 }],
    ['theta1 fractional', { theta1: 1.5 }],
    ['theta1 beyond 2^53', { theta1: 2 ** 60 }],
    ['theta2 missing', { theta2: undefined }],
    ['theta2 a string', { theta2: '5' }],
    ['deadline 99 ms', { deadline_ms: 99 }],
    ['deadline 60001 ms', { deadline_ms: 60_001 }],
    ['reason of 257 bytes', { reason: 'é'.repeat(129) }],
    ['reason missing', { reason: undefined }],
    ['model missing', { model: undefined }],
    ['model version a string', { model: { id: 'x', version: '1' } }],
  ])('policy with %s', (_, change) => {
    expect(() => parsePolicy({ ...goodPolicy, ...change })).toThrow(ProtocolError);
  });

  it.each([
    ['another tab', { tab: 13 }, asked],
    ['another nav', { nav: '12-2' }, asked],
    ['another origin', { origin: 'https://example.org' }, asked],
    ['an origin with a path', { origin: 'https://example.com/' }, asked],
    ['an upper-case origin', { origin: 'https://Example.com' }, asked],
    ['an ftp origin', { origin: 'ftp://example.com' }, { ...asked, origin: 'ftp://example.com' }],
    ['inputs an array', { inputs: [1] }, asked],
    ['an input that is an object', { inputs: { a: { b: 1 } } }, asked],
    ['an input that is NaN', { inputs: { a: Number.NaN } }, asked],
    ['deadline out of range', { deadline_ms: 0 }, asked],
  ])('decision with %s', (_, change, args) => {
    expect(() => parseDecision({ ...goodDecision, ...change }, args)).toThrow(ProtocolError);
  });

  it('a decision for a normalised form of the asked origin is the same origin', () => {
    const args = { origin: 'HTTPS://Example.COM:443', tab: 12, nav: '12-1' };
    expect(parseDecision(goodDecision, args).origin).toBe('https://example.com');
  });

  it.each([
    ['no v', { id: 1, type: 'status', ok: true, body: {} }],
    ['v 2', { v: 2, id: 1, type: 'status', ok: true, body: {} }],
    ['id a string', { v: 1, id: '1', type: 'status', ok: true, body: {} }],
    ['id negative', { v: 1, id: -1, type: 'status', ok: true, body: {} }],
    ['ok missing', { v: 1, id: 1, type: 'status', body: {} }],
    ['ok reply without a body', { v: 1, id: 1, type: 'status', ok: true }],
    ['error without a code', { v: 1, id: 1, type: 'status', ok: false, error: { name: 'x' } }],
    ['error code 0', { v: 1, id: 1, type: 'status', ok: false, error: { code: 0, name: 'x' } }],
    ['push with an id', { v: 1, id: 1, type: 'policy', push: true, body: goodPolicy }],
    ['push false', { v: 1, type: 'policy', push: false, body: goodPolicy }],
    ['an array', [1, 2]],
    ['null', null],
  ])('envelope with %s', (_, m) => {
    expect(() => parseIncoming(m)).toThrow(ProtocolError);
  });

  it('hello replies from something other than mpsurf-host, or another protocol, are refused', () => {
    const hello = { host: 'mpsurf-host', version: '0.1.0', protocol: 1, policy: goodPolicy };
    expect(parseHelloReply(hello).policy).toEqual(goodPolicy);
    expect(() => parseHelloReply({ ...hello, host: 'other' })).toThrow(ProtocolError);
    expect(() => parseHelloReply({ ...hello, protocol: 2 })).toThrow(ProtocolError);
    expect(() => parseHelloReply({ ...hello, policy: { ...goodPolicy, revision: 0 } })).toThrow(/hello\.policy\.revision/);
  });

  it('a peers reply lists the peers the host refused, each with its reason', () => {
    const body = { addrs: 1, refused: [{ host: 'bank.test', ip: '198.51.100.10', why: 'bank.test has a site rule of its own (never)' }], actuation: 'ok' };
    expect(parsePeersReply(body)).toEqual(body);
    expect(parsePeersReply({ addrs: 2, actuation: 'not_configured' })).toEqual({ addrs: 2, refused: [], actuation: 'not_configured' });
    expect(() => parsePeersReply({ ...body, refused: [{ host: 'x', ip: 'y' }] })).toThrow(/peers\.refused\[0\]\.why/);
    expect(() => parsePeersReply({ ...body, refused: 'no' })).toThrow(/peers\.refused/);
  });

  it('an error code appended after this version is still read, with its number', () => {
    const m = parseIncoming({ v: 1, id: 5, type: 'decide', ok: false, error: { code: 99, name: 'new_thing' } });
    expect(m).toEqual({ kind: 'error', id: 5, type: 'decide', error: { code: 99, name: 'new_thing', message: '' } });
    expect(isKnownErrorCode(99)).toBe(false);
  });
});

describe('request builders', () => {
  it('refuse ids outside 1 … 2^31-1 and wrap nextId inside it', () => {
    expect(() => statusRequest(0)).toThrow(RangeError);
    expect(() => statusRequest(2 ** 31)).toThrow(RangeError);
    expect(() => statusRequest(1.5)).toThrow(RangeError);
    expect(nextId(1)).toBe(2);
    expect(nextId(2 ** 31 - 1)).toBe(1);
  });

  it('refuse decide arguments the host would refuse', () => {
    expect(() => decideRequest(1, { origin: 'https://a.example', tab: -2, nav: '1' })).toThrow(RangeError);
    expect(() => decideRequest(1, { origin: 'https://a.example', tab: 1, nav: 'x'.repeat(129) })).toThrow(RangeError);
    expect(() => decideRequest(1, { origin: '', tab: 1, nav: '1' })).toThrow(RangeError);
    expect(decideRequest(1, { origin: 'https://a.example', tab: -1, nav: 'x'.repeat(128) }).body).toMatchObject({ tab: -1 });
  });

  it('carry the navigation\'s path, never its query or fragment', () => {
    expect(urlPath('https://a.example/article/7?session=secret#top')).toBe('/article/7');
    expect(urlPath('https://a.example')).toBe('/');
    expect(urlPath('not a url')).toBeUndefined();
    expect(urlPath('https://a.example/' + 'x'.repeat(2048))).toBeUndefined();
    const d = decideRequest(1, { origin: 'https://a.example', tab: 1, nav: '1', path: '/article/7' });
    expect(Object.keys(d.body!)).toEqual(['origin', 'tab', 'nav', 'path']);
    expect(() => decideRequest(1, { origin: 'https://a.example', tab: 1, nav: '1', path: '/a?q=1' })).toThrow(RangeError);
    expect(() => decideRequest(1, { origin: 'https://a.example', tab: 1, nav: '1', path: 'relative' })).toThrow(RangeError);
    const base = { origin: 'https://a.example', tab: 1, nav: '1', protocol: 'h2', transfer_bytes: 10, plt_ms: 5, multipath: null };
    expect(reportRequest(2, { ...base, path: '/article/7', objects: 12, conns: 1 }).body).toMatchObject({ path: '/article/7', objects: 12, conns: 1 });
    expect(reportRequest(2, base).body).not.toHaveProperty('path');
    expect(() => reportRequest(2, { ...base, objects: -1 })).toThrow(RangeError);
    expect(() => reportRequest(2, { ...base, path: '/x#frag' })).toThrow(RangeError);
  });

  it('a decision whose θ1 is never (null) parses; a policy too', () => {
    const d = parseDecision(
      { multipath: false, theta1: null, theta2: null, deadline_ms: 3000, reason: 'r', model: { id: 'm', version: 1 }, origin: 'https://a.example', tab: 1, nav: '1', inputs: {}, basis: 'rule' },
      { origin: 'https://a.example', tab: 1, nav: '1' },
    );
    expect(d).toMatchObject({ theta1: null, basis: 'rule' });
    expect(() => parsePolicy({ revision: 1, multipath: true, theta1: -1, theta2: null, deadline_ms: 3000, reason: 'r', model: { id: 'm', version: 1 } })).toThrow(ProtocolError);
  });
});

describe('normaliseOrigin', () => {
  it.each([
    ['https://example.com', 'https://example.com'],
    ['HTTPS://Example.COM:443', 'https://example.com'],
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ['https://bücher.example', 'https://xn--bcher-kva.example'],
    ['http://[::1]:80', 'http://[::1]'],
    ['https://example.com/', 'https://example.com'],
    ['https://example.com/a', null],
    ['https://example.com/.', null],
    ['https://example.com?x', null],
    ['https://example.com#', null],
    ['https://user@example.com', null],
    ['ftp://example.com', null],
    ['example.com', null],
  ])('%s -> %s', (input, want) => {
    expect(normaliseOrigin(input)).toBe(want);
  });
});

// The protocol's names are the host's: native-host/protocol writes them into names.json, and a type added or renamed
// on one side fails here until the other follows.
describe('names (vectors/names.json)', () => {
  const names = vectors<{ request_types: string[]; push_types: string[]; pause_reasons: string[] }>('names.json');
  it('has every request type, push type and pause reason the host has, in its order', () => {
    expect([...REQUEST_TYPES]).toEqual(names.request_types);
    expect([...PUSH_TYPES]).toEqual(names.push_types);
    expect([...PAUSE_REASONS]).toEqual(names.pause_reasons);
  });
});
