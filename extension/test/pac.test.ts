import { describe, expect, it } from 'vitest';
import { MAX_PAC_HOSTS, RELAY_FAILOVER_S, localHost, pacHost, pacScript, proxyInfoFor, routeTable } from '../src/pac';

// A PAC engine's view: the script's FindProxyForURL, compiled with nothing but its two arguments in reach.
function evaluate(script: string, url: string, host: string): string {
  const f = new Function('url', 'host', `${script}\nreturn FindProxyForURL(url, host);`) as (u: string, h: string) => string;
  return f(url, host);
}

const relay = { host: '127.0.0.1', port: 40123 };
const ROUTE = 'PROXY 127.0.0.1:40123; DIRECT';

describe('pacHost', () => {
  it.each([
    ['example.com', 'example.com'],
    ['WWW.Example.COM.', 'www.example.com'],
    ['bücher.example', 'xn--bcher-kva.example'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['例え.テスト', 'xn--r8jz45g.xn--zckzah'],
    ['10.200.3.2', '10.200.3.2'],
    ['[2001:DB8::1]', '2001:db8::1'],
    ['2001:db8:0:0::1', '2001:db8::1'],
    ['_dmarc.example.com', '_dmarc.example.com'],
  ])('%s → %s', (input, want) => {
    expect(pacHost(input)).toBe(want);
  });

  it.each([
    [''],
    ['a b.example'],
    ['example.com"; return "PROXY evil:1"; //'],
    ['example.com\n}; function FindProxyForURL(){return "PROXY evil:1"}'],
    ['exa\u2028mple.com'],
    ["example.com'"],
    ['example.com\\'],
    ['example.com/path'],
    ['user@example.com'],
    ['example.com:443'],
    ['-bad.example'],
    ['a..b'],
    ['256.1.1.1'],
    ['01.2.3.4'],
    ['1.2.3'],
    ['[::1'],
    ['gg::1'],
    ['x'.repeat(64) + '.example'],
    ['__proto__"'],
  ])('refuses %j', (input) => {
    expect(pacHost(input)).toBeNull();
  });
});

// Hosts the proxy cannot reach, and hosts it can: the PAC's text and localHost must agree on every one.
const LOCAL = ['intranet', 'localhost', 'printer.local', 'nas.home.arpa', 'app.internal', 'router.lan', 'a.localhost', '10.200.3.2', '127.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.1.1', '100.64.0.1', '0.0.0.0', '::1', 'fd00::1', 'fe80::1', 'fc12:3456::1'];
const REMOTE = ['news.example', 'xn--bcher-kva.example', 'local.example', 'lan.example.com', '8.8.8.8', '172.32.0.1', '172.15.0.1', '192.169.1.1', '100.128.0.1', '11.0.0.1', '2001:db8::1', 'fec0::1', '2606:4700::1111'];

describe('pacScript', () => {
  it('routes every https host through the relay, except those known not to gain and local ones', () => {
    const s = pacScript({ relay, direct: ['small.example', 'bücher.example', '[2001:db8::2]'], all: false });
    expect(s).not.toBeNull();
    const pac = s as string;
    expect(evaluate(pac, 'https://news.example/', 'news.example')).toBe(ROUTE);
    expect(evaluate(pac, 'https://NEWS.example./', 'NEWS.example.')).toBe(ROUTE);
    expect(evaluate(pac, 'wss://news.example/', 'news.example')).toBe(ROUTE);
    expect(evaluate(pac, 'https://news.example:443/', 'news.example')).toBe(ROUTE);
    // Known not to gain: DIRECT, in any spelling the browser may hand over (IDN as punycode, IPv6 without brackets).
    expect(evaluate(pac, 'https://small.example/', 'small.example')).toBe('DIRECT');
    expect(evaluate(pac, 'https://SMALL.example./', 'SMALL.example.')).toBe('DIRECT');
    expect(evaluate(pac, 'https://xn--bcher-kva.example/', 'xn--bcher-kva.example')).toBe('DIRECT');
    expect(evaluate(pac, 'https://[2001:db8::2]/', '2001:db8::2')).toBe('DIRECT');
    expect(evaluate(pac, 'https://[2001:db8::2]/', '[2001:db8::2]')).toBe('DIRECT');
    expect(evaluate(pac, 'https://[2001:db8::1]/', '2001:db8::1')).toBe(ROUTE);
    // A subdomain is another origin with a route of its own.
    expect(evaluate(pac, 'https://cdn.small.example/', 'cdn.small.example')).toBe(ROUTE);
    // The proxy tunnels only to 443, and plain http stays direct.
    expect(evaluate(pac, 'https://news.example:8443/', 'news.example')).toBe('DIRECT');
    expect(evaluate(pac, 'https://[2001:db8::1]:8443/', '2001:db8::1')).toBe('DIRECT');
    expect(evaluate(pac, 'http://news.example/', 'news.example')).toBe('DIRECT');
    expect(evaluate(pac, 'ftp://news.example/', 'news.example')).toBe('DIRECT');
  });

  it.each(LOCAL.map((h) => [h, true]).concat(REMOTE.map((h) => [h, false])))('local %s: %s, in the script as in localHost', (h, local) => {
    expect(localHost(h as string)).toBe(local);
    const pac = pacScript({ relay, direct: [], all: false }) as string;
    const url = (h as string).includes(':') ? `https://[${h}]/` : `https://${h}/`;
    expect(evaluate(pac, url, h as string)).toBe(local ? 'DIRECT' : ROUTE);
    // "all" is the user's word: local names too.
    expect(evaluate(pacScript({ relay, direct: [], all: true }) as string, url, h as string)).toBe(ROUTE);
  });

  it('keeps hostile host strings out of the code', () => {
    const evil = [
      'example.com"; return "PROXY evil:1"; //',
      'x"};FindProxyForURL=function(){return "PROXY evil:1"};var y={"',
      '</script>',
      'a\u2029b',
      "o'reilly.example",
      'a\\"b',
    ];
    const s = pacScript({ relay, direct: ['good.example', ...evil], all: false }) as string;
    expect(s).not.toContain('evil');
    expect(s).not.toContain('\u2029');
    // Names of Object.prototype's properties are not DIRECT entries either.
    for (const h of ['anything.example', 'constructor.example', 'evil.example']) {
      expect(evaluate(s, `https://${h}/`, h)).toBe(ROUTE);
    }
    for (const h of ['constructor', 'hasOwnProperty', '__proto__', 'toString']) {
      // single labels are local names: DIRECT whatever the map holds
      expect(evaluate(s, `https://${h}/`, h)).toBe('DIRECT');
    }
    expect(s).not.toMatch(/"(constructor|__proto__|toString)"/);
    expect(evaluate(s, 'https://good.example/', 'good.example')).toBe('DIRECT');
  });

  it('routes every https origin with "all", and nothing without a relay', () => {
    const all = pacScript({ relay, direct: ['any.example'], all: true }) as string;
    expect(evaluate(all, 'https://any.example/', 'any.example')).toBe(ROUTE);
    expect(evaluate(all, 'http://any.example/', 'any.example')).toBe('DIRECT');
    expect(pacScript({ relay: null, direct: [], all: true })).toBeNull();
    expect(pacScript({ relay: null, direct: [], all: false })).toBeNull();
    // No DIRECT host yet (a new install) still routes: the first visit is the one that needs it most.
    expect(evaluate(pacScript({ relay, direct: [], all: false }) as string, 'https://new.example/', 'new.example')).toBe(ROUTE);
  });

  it('refuses a relay that is not on loopback or has a bad port', () => {
    expect(() => pacScript({ relay: { host: '10.0.0.1', port: 3128 }, direct: [], all: false })).toThrow(/loopback/);
    expect(() => pacScript({ relay: { host: '127.0.0.1"; evil', port: 1 }, direct: [], all: false })).toThrow();
    expect(() => pacScript({ relay: { host: '127.0.0.1', port: 70000 }, direct: [], all: false })).toThrow(/port/);
  });

  it('bounds the DIRECT list, keeping the newest and a host listed again', () => {
    const hosts = Array.from({ length: MAX_PAC_HOSTS + 10 }, (_, i) => `h${i}.example`);
    hosts.push('h0.example'); // decided again, now the newest
    const s = pacScript({ relay, direct: hosts, all: false }) as string;
    expect(s.length).toBeLessThan(MAX_PAC_HOSTS * 40);
    expect(evaluate(s, 'https://h0.example/', 'h0.example')).toBe('DIRECT');
    expect(evaluate(s, 'https://h1.example/', 'h1.example')).toBe(ROUTE); // the oldest lost its entry
    expect(evaluate(s, `https://h${MAX_PAC_HOSTS + 5}.example/`, `h${MAX_PAC_HOSTS + 5}.example`)).toBe('DIRECT');
  });
});

// Firefox routes each request in proxy.onRequest (proxyInfoFor), Chromium by the PAC: the same table gives the same
// route for every URL either browser may hand over.
describe('proxyInfoFor (Firefox) and the PAC (Chromium)', () => {
  const hosts = [...LOCAL, ...REMOTE, 'small.example', 'xn--bcher-kva.example', 'cdn.small.example', 'constructor', '__proto__'];
  const urls = hosts.flatMap((h) => {
    const host = h.includes(':') ? `[${h}]` : h;
    return [`https://${host}/a?b#c`, `https://${host}:443/`, `https://${host}:8443/`, `http://${host}/`, `wss://${host}/socket`, `ftp://${host}/`];
  });
  const relayInfo = { type: 'http', host: relay.host, port: relay.port, failoverTimeout: RELAY_FAILOVER_S };

  it.each([false, true])('route the same (all: %s)', (all) => {
    const input = { relay, direct: ['small.example', 'bücher.example', '[2001:db8::2]', 'constructor'], all };
    const table = routeTable(input);
    const pac = pacScript(input) as string;
    let routed = 0;
    for (const url of urls) {
      const u = new URL(url);
      // Chromium hands the PAC the host without brackets.
      const viaPac = evaluate(pac, url, u.hostname.replace(/^\[|\]$/g, '')) === ROUTE;
      const info = proxyInfoFor(url, table);
      expect(info, url).toEqual(viaPac ? [relayInfo, { type: 'direct' }] : [{ type: 'direct' }]);
      if (viaPac) routed++;
    }
    expect(routed).toBeGreaterThan(all ? hosts.length : REMOTE.length);
  });

  it('sends everything DIRECT without a table, and for a URL it cannot read', () => {
    expect(proxyInfoFor('https://news.example/', null)).toEqual([{ type: 'direct' }]);
    expect(proxyInfoFor('not a url', routeTable({ relay, direct: [], all: true }))).toEqual([{ type: 'direct' }]);
  });
});
