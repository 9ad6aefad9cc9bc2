import { describe, expect, it } from 'vitest';
import { MAX_PAC_HOSTS, pacHost, pacScript } from '../src/pac';

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

describe('pacScript', () => {
  it('routes decided hosts through the relay, everything else DIRECT', () => {
    const s = pacScript({ relay, hosts: ['news.example', 'bücher.example', '10.200.3.2', '[2001:db8::1]'], all: false });
    expect(s).not.toBeNull();
    const pac = s as string;
    expect(evaluate(pac, 'https://news.example/', 'news.example')).toBe(ROUTE);
    expect(evaluate(pac, 'https://NEWS.example./', 'NEWS.example.')).toBe(ROUTE);
    expect(evaluate(pac, 'https://xn--bcher-kva.example/', 'xn--bcher-kva.example')).toBe(ROUTE);
    expect(evaluate(pac, 'https://10.200.3.2/', '10.200.3.2')).toBe(ROUTE);
    // Chromium gives IPv6 literals to the PAC without brackets.
    expect(evaluate(pac, 'https://[2001:db8::1]/', '2001:db8::1')).toBe(ROUTE);
    expect(evaluate(pac, 'wss://news.example/', 'news.example')).toBe(ROUTE);
    expect(evaluate(pac, 'https://other.example/', 'other.example')).toBe('DIRECT');
    // A subdomain is another origin with a decision of its own.
    expect(evaluate(pac, 'https://cdn.news.example/', 'cdn.news.example')).toBe('DIRECT');
    // The proxy tunnels only to 443, and plain http stays direct.
    expect(evaluate(pac, 'https://news.example:8443/', 'news.example')).toBe('DIRECT');
    expect(evaluate(pac, 'https://[2001:db8::1]:8443/', '2001:db8::1')).toBe('DIRECT');
    expect(evaluate(pac, 'https://news.example:443/', 'news.example')).toBe(ROUTE);
    expect(evaluate(pac, 'http://news.example/', 'news.example')).toBe('DIRECT');
    expect(evaluate(pac, 'ftp://news.example/', 'news.example')).toBe('DIRECT');
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
    const s = pacScript({ relay, hosts: ['good.example', ...evil], all: false }) as string;
    expect(s).not.toContain('evil');
    expect(s).not.toContain('\u2029');
    // Names of Object.prototype's properties are not routes either.
    for (const h of ['anything.example', 'evil', 'constructor', 'hasOwnProperty', '__proto__', 'toString']) {
      expect(evaluate(s, `https://${h}/`, h)).toBe('DIRECT');
    }
    expect(evaluate(s, 'https://good.example/', 'good.example')).toBe(ROUTE);
  });

  it('routes every https origin with "all", and nothing without a relay or hosts', () => {
    const all = pacScript({ relay, hosts: [], all: true }) as string;
    expect(evaluate(all, 'https://any.example/', 'any.example')).toBe(ROUTE);
    expect(evaluate(all, 'http://any.example/', 'any.example')).toBe('DIRECT');
    expect(pacScript({ relay: null, hosts: ['a.example'], all: true })).toBeNull();
    expect(pacScript({ relay, hosts: [], all: false })).toBeNull();
    expect(pacScript({ relay, hosts: ['"bad'], all: false })).toBeNull();
  });

  it('refuses a relay that is not on loopback or has a bad port', () => {
    expect(() => pacScript({ relay: { host: '10.0.0.1', port: 3128 }, hosts: ['a.example'], all: false })).toThrow(/loopback/);
    expect(() => pacScript({ relay: { host: '127.0.0.1"; evil', port: 1 }, hosts: ['a.example'], all: false })).toThrow();
    expect(() => pacScript({ relay: { host: '127.0.0.1', port: 70000 }, hosts: ['a.example'], all: false })).toThrow(/port/);
  });

  it('bounds the host list', () => {
    const hosts = Array.from({ length: MAX_PAC_HOSTS + 10 }, (_, i) => `h${i}.example`);
    const s = pacScript({ relay, hosts, all: false }) as string;
    expect(evaluate(s, 'https://h0.example/', 'h0.example')).toBe(ROUTE);
    expect(evaluate(s, `https://h${MAX_PAC_HOSTS + 5}.example/`, `h${MAX_PAC_HOSTS + 5}.example`)).toBe('DIRECT');
  });
});
