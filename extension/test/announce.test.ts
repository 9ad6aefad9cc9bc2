import { describe, expect, it } from 'vitest';
import { Announcer, contentLength, type AnnouncePage, type ResponseSeen } from '../src/announce';

function setup(pages: Record<number, AnnouncePage>) {
  const sent: { origin: string; tab: number; nav: string; bytes: number }[] = [];
  const a = new Announcer({ pageOf: (tab) => pages[tab], send: (origin, tab, nav, bytes) => sent.push({ origin, tab, nav, bytes }) });
  const resp = (tab: number, url: string, len: string | undefined, more: Partial<ResponseSeen> = {}): ResponseSeen => ({
    tab,
    url,
    fromCache: false,
    status: 200,
    contentLength: len,
    ...more,
  });
  return { a, sent, resp, pages };
}

describe('contentLength', () => {
  it.each([
    ['200000', 200000],
    [' 42 ', 42],
    ['0', 0],
    [undefined, 0],
    ['', 0],
    ['-5', 0],
    ['1e6', 0],
    ['12, 12', 0],
    ['9999999999999999', 0],
    [String(2 ** 40 + 1), 0],
  ])('%s -> %d', (v, want) => {
    expect(contentLength(v)).toBe(want);
  });
});

describe('Announcer', () => {
  it('tells the host once, when the page origin and its peers have announced θ1 bytes', () => {
    const { a, sent, resp } = setup({ 1: { origin: 'https://news.test', nav: '1-1', decided: true, theta1: 200_000 } });
    a.saw(resp(1, 'https://news.test/', '60000'));
    a.saw(resp(1, 'https://cdn.example.net/a.jpg', '90000', { initiator: 'https://news.test' }));
    a.saw(resp(1, 'https://ads.example.org/x.js', '500000', { initiator: 'https://ads.example.org' })); // not the page's
    a.saw(resp(1, 'https://news.test/cached.jpg', '500000', { fromCache: true }));
    a.saw(resp(1, 'https://news.test/same.jpg', '500000', { status: 304 }));
    a.saw(resp(1, 'https://news.test/chunked.js', undefined));
    expect(sent).toEqual([]);
    a.saw(resp(1, 'https://news.test/b.jpg', '50000'));
    expect(sent).toEqual([{ origin: 'https://news.test', tab: 1, nav: '1-1', bytes: 200_000 }]);
    a.saw(resp(1, 'https://news.test/c.jpg', '50000'));
    expect(sent).toHaveLength(1);
  });

  it('sends nothing for never, from the first byte, an undecided page or no page', () => {
    const { a, sent, resp } = setup({
      1: { origin: 'https://a.test', nav: '1-1', decided: true, theta1: null },
      2: { origin: 'https://b.test', nav: '2-1', decided: true, theta1: 0 },
      3: { origin: 'https://c.test', nav: '3-1', decided: false, theta1: 200_000 },
    });
    for (const [tab, o] of [
      [1, 'https://a.test'],
      [2, 'https://b.test'],
      [3, 'https://c.test'],
      [4, 'https://d.test'],
      [-1, 'https://e.test'],
    ] as const) {
      a.saw(resp(tab, `${o}/big`, '5000000'));
    }
    expect(sent).toEqual([]);
  });

  it('counts afresh for a new navigation of the tab, and after forget', () => {
    const pages: Record<number, AnnouncePage> = { 1: { origin: 'https://news.test', nav: '1-1', decided: true, theta1: 100_000 } };
    const { a, sent, resp } = setup(pages);
    a.saw(resp(1, 'https://news.test/', '80000'));
    pages[1] = { origin: 'https://news.test', nav: '1-2', decided: true, theta1: 100_000 };
    a.saw(resp(1, 'https://news.test/', '80000'));
    expect(sent).toEqual([]);
    a.saw(resp(1, 'https://news.test/x', '30000'));
    expect(sent).toEqual([{ origin: 'https://news.test', tab: 1, nav: '1-2', bytes: 110_000 }]);
    a.forget(1);
    a.saw(resp(1, 'https://news.test/y', '100000'));
    expect(sent).toHaveLength(2);
  });

  it('waits for the decision: bytes announced before it count once it arrives', () => {
    const pages: Record<number, AnnouncePage> = { 1: { origin: 'https://g.test', nav: '1-1', decided: false, theta1: null } };
    const { a, sent, resp } = setup(pages);
    a.saw(resp(1, 'https://g.test/', '150000'));
    pages[1] = { origin: 'https://g.test', nav: '1-1', decided: true, theta1: 200_000 };
    a.saw(resp(1, 'https://g.test/a.jpg', '60000'));
    expect(sent).toEqual([{ origin: 'https://g.test', tab: 1, nav: '1-1', bytes: 210_000 }]);
  });
});
