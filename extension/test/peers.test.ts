import { describe, expect, it } from 'vitest';
import { MAX_PEERS, type Peer } from '../src/protocol/peers';
import { PEERS_PER_PAGE, Peers, type PageRef } from '../src/peers';

function setup(pages: Record<number, PageRef>) {
  const sent: { origin: string; tab: number; peers: Peer[] }[] = [];
  const timers: (() => void)[] = [];
  const p = new Peers({
    pageOf: (tab) => pages[tab],
    send: (origin, tab, peers) => sent.push({ origin, tab, peers }),
    setTimer: (fn) => timers.push(fn),
  });
  const fire = () => timers.splice(0).forEach((f) => f());
  return { p, sent, timers, fire };
}

describe('Peers', () => {
  it('batches new pairs per tab under the page origin, once each', () => {
    const { p, sent, timers, fire } = setup({ 1: { origin: 'https://news.test', nav: '1-1', decided: true } });
    p.saw(1, 'https://news.test/', '192.0.2.1');
    p.saw(1, 'https://cdn.example.net/a.js', '198.51.100.7', 'https://news.test');
    p.saw(1, 'https://cdn.example.net/b.js', '198.51.100.7', 'https://news.test');
    p.saw(1, 'https://v6.example.net/x', '2001:db8::1', 'https://news.test');
    expect(timers).toHaveLength(1);
    expect(sent).toHaveLength(0);
    fire();
    expect(sent).toEqual([
      {
        origin: 'https://news.test',
        tab: 1,
        peers: [
          { host: 'news.test', ip: '192.0.2.1' },
          { host: 'cdn.example.net', ip: '198.51.100.7' },
          { host: 'v6.example.net', ip: '2001:db8::1' },
        ],
      },
    ]);
    p.saw(1, 'https://cdn.example.net/c.js', '198.51.100.7', 'https://news.test');
    fire();
    expect(sent).toHaveLength(1);
  });

  it("reports only the page origin's own requests, not those of another origin's frame inside it", () => {
    const { p, sent, fire } = setup({ 1: { origin: 'https://news.test', nav: '1-1', decided: true } });
    p.saw(1, 'https://news.test/style.css', '192.0.2.1', 'https://ads.example');
    p.saw(1, 'https://cdn.example.net/a.js', '198.51.100.7', 'https://news.test');
    p.saw(1, 'https://bank.example/pixel', '203.0.113.9', 'https://ads.example');
    p.saw(1, 'https://bank.example/pixel', '203.0.113.9', undefined);
    fire();
    expect(sent.flatMap((s) => s.peers)).toEqual([
      { host: 'news.test', ip: '192.0.2.1' },
      { host: 'cdn.example.net', ip: '198.51.100.7' },
    ]);
  });

  it('skips cached responses, undecided pages, tabless requests and non-http URLs', () => {
    const { p, sent, fire } = setup({ 1: { origin: 'https://a.test', nav: '1-1', decided: false }, 2: { origin: 'https://b.test', nav: '2-1', decided: true } });
    p.saw(1, 'https://a.test/', '192.0.2.1');
    p.saw(2, 'https://b.test/', undefined);
    p.saw(-1, 'https://b.test/', '192.0.2.2');
    p.saw(3, 'https://c.test/', '192.0.2.3');
    p.saw(2, 'data:text/plain,x', '192.0.2.4');
    p.saw(2, 'not a url', '192.0.2.5');
    fire();
    expect(sent).toEqual([]);
  });

  it('reports the same pairs again for the next page in the tab, under its origin', () => {
    const pages: Record<number, PageRef> = { 1: { origin: 'https://a.test', nav: '1-1', decided: true } };
    const { p, sent, fire } = setup(pages);
    p.saw(1, 'https://cdn.test/x', '192.0.2.9', 'https://a.test');
    fire();
    pages[1] = { origin: 'https://b.test', nav: '1-2', decided: true };
    p.saw(1, 'https://cdn.test/x', '192.0.2.9', 'https://b.test');
    fire();
    expect(sent.map((s) => s.origin)).toEqual(['https://a.test', 'https://b.test']);
  });

  it('splits a burst into requests of at most MAX_PEERS and stops remembering past PEERS_PER_PAGE', () => {
    const { p, sent, fire } = setup({ 1: { origin: 'https://a.test', nav: '1-1', decided: true } });
    for (let i = 0; i < PEERS_PER_PAGE + 10; i++) p.saw(1, `https://h${i}.test/`, `10.0.${i >> 8}.${i & 255}`, 'https://a.test');
    fire();
    expect(sent.map((s) => s.peers.length)).toEqual([MAX_PEERS, MAX_PEERS, MAX_PEERS, MAX_PEERS]);
  });

  it('forgets a closed tab, pending pairs included', () => {
    const { p, sent, fire } = setup({ 1: { origin: 'https://a.test', nav: '1-1', decided: true } });
    p.saw(1, 'https://a.test/', '192.0.2.1');
    p.forget(1);
    fire();
    expect(sent).toEqual([]);
  });
});
