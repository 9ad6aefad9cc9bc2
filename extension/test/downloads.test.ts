import { describe, expect, it } from 'vitest';
import { Downloads, cookieHeaderFor, ruleFor, type BrowserCookie, type ChromeDownload, type DownloadDeps, type DownloadRecord } from '../src/downloads';
import { offerProblem, parseDownloadState, type DownloadOffer, type DownloadState } from '../src/protocol/downloads';
import { vectors } from './vectors';
import { downloadsNote } from '../src/view';

interface OfferVector {
  name: string;
  error: number;
  field?: string;
  body: DownloadOffer;
}
interface StateVector {
  name: string;
  valid: boolean;
  body: unknown;
}
const V = vectors<{ offers: OfferVector[]; states: StateVector[] }>('downloads.json');

describe('download vectors (native-host/vectors/downloads.json)', () => {
  for (const v of V.offers) {
    it(`offer: ${v.name}`, () => {
      const why = offerProblem(v.body);
      if (v.error === 0) expect(why).toBeNull();
      else expect(why ?? '', why ?? 'accepted').toMatch(new RegExp(`^${v.field}`));
    });
  }
  for (const v of V.states) {
    it(`state: ${v.name}`, () => {
      if (v.valid) expect(parseDownloadState(v.body).id).toBeTypeOf('string');
      else expect(() => parseDownloadState(v.body)).toThrow();
    });
  }
});

function state(id: string, s: DownloadState['state'], extra: Partial<DownloadState> = {}): DownloadState {
  return { id, state: s, url: 'https://files.example/big.iso', file: '/home/u/Downloads/big.iso', size: 32e6, received: 0, paths: [], multipath: true, reason: '', elapsed_ms: 0, ...extra };
}

function setup(
  opts: { enabled?: boolean; threshold?: number | null; reply?: (o: DownloadOffer) => Promise<DownloadState>; rule?: 'never' | 'auto'; cookies?: BrowserCookie[] } = {},
) {
  const offers: DownloadOffer[] = [];
  const canceled: number[] = [];
  const discarded: string[] = [];
  const controls: string[] = [];
  let saved: DownloadRecord[] = [];
  const deps: DownloadDeps = {
    enabled: () => opts.enabled ?? true,
    threshold: () => (opts.threshold === undefined ? 1e6 : opts.threshold),
    siteRule: () => opts.rule ?? 'auto',
    offer: async (o) => {
      offers.push(o);
      return opts.reply ? opts.reply(o) : state(o.id, 'starting');
    },
    control: async (id, action) => {
      controls.push(`${id} ${action}`);
      throw new Error(`bad_request: id: no download "${id}" in this host`);
    },
    discard: async (file) => {
      discarded.push(file);
    },
    cookies: async (url) => (url.startsWith('https://files.example/') ? opts.cookies ?? [{ name: 'sid', value: 'secret', path: '/', sameSite: 'lax' }] : []),
    authorization: () => undefined,
    userAgent: () => 'UA',
    cancelChrome: async (id) => {
      canceled.push(id);
    },
    save: (r) => {
      saved = r;
    },
    now: () => 1000,
    log: () => {},
  };
  return { dl: new Downloads(deps), offers, canceled, discarded, controls, saved: () => saved };
}

const item = (over: Partial<ChromeDownload> = {}): ChromeDownload => ({
  id: 7, url: 'https://files.example/big.iso', filename: '', totalBytes: 32e6, state: 'in_progress', incognito: false, danger: 'safe',
  referrer: 'https://files.example/', ...over,
});

describe('Downloads', () => {
  it('offers a large https download once Chrome has its final file name, with the cookies of that URL', async () => {
    const t = setup();
    await t.dl.created(item());
    expect(t.offers).toHaveLength(0); // no file name yet
    await t.dl.changed({ id: 7, filename: '/home/u/Downloads/big.iso' });
    expect(t.offers).toHaveLength(1);
    expect(t.offers[0]).toMatchObject({ id: 'c7', origin: 'https://files.example', size: 32e6, file: '/home/u/Downloads/big.iso', headers: { cookie: 'sid=secret' } });
    await t.dl.changed({ id: 7, filename: '/home/u/Downloads/big.iso' });
    expect(t.offers).toHaveLength(1); // once
    expect(JSON.stringify(t.saved())).not.toContain('secret'); // the cookies are never kept
  });

  it('cancels Chrome\'s copy only when the host says running, and once', async () => {
    const t = setup();
    await t.dl.created(item({ filename: '/d/big.iso' }));
    expect(t.canceled).toEqual([]);
    t.dl.pushed(state('c7', 'running'));
    t.dl.pushed(state('c7', 'running', { received: 5 }));
    expect(t.canceled).toEqual([7]);
    expect(t.dl.list()[0]?.chromeCanceled).toBe(true);
  });

  it('leaves Chrome\'s download untouched when the host declines, fails to start, or is missing', async () => {
    for (const reply of [
      async (o: DownloadOffer) => state(o.id, 'declined', { reason: 'single path: below θ1' }),
      async () => {
        throw new Error('host missing');
      },
    ]) {
      const t = setup({ reply });
      await t.dl.created(item({ filename: '/d/big.iso' }));
      expect(t.canceled).toEqual([]);
      expect(t.dl.list()).toHaveLength(0);
    }
    const t = setup();
    await t.dl.created(item({ filename: '/d/big.iso' }));
    t.dl.pushed(state('c7', 'failed', { reason: 'HTTP 403' }));
    expect(t.canceled).toEqual([]);
    expect(t.dl.list()).toHaveLength(0);
  });

  it('offers nothing that is off, small, plain http, incognito, unsized, or on a site whose rule says never', async () => {
    const cases: [Parameters<typeof setup>[0], Partial<ChromeDownload>][] = [
      [{ enabled: false }, {}],
      [{}, { totalBytes: 999_999 }],
      [{}, { url: 'http://files.example/big.iso' }],
      [{}, { incognito: true }],
      [{}, { totalBytes: 0 }],
      [{ threshold: null }, {}],
      [{ rule: 'never' }, {}],
      [{}, { byExtensionId: 'other' }],
    ];
    for (const [o, over] of cases) {
      const t = setup(o);
      await t.dl.created(item({ filename: '/d/big.iso', ...over }));
      expect(t.offers, JSON.stringify([o, over])).toHaveLength(0);
    }
  });

  it('resumes a download the host was running when it stopped, with fresh cookies', async () => {
    const t = setup();
    t.dl.restore([{ id: 'c9', chromeId: 9, url: 'https://files.example/big.iso', origin: 'https://files.example', file: '/d/big.iso', size: 32e6, chromeCanceled: true, state: state('c9', 'running'), at: 5 }]);
    await t.dl.hostConnected();
    expect(t.offers).toEqual([expect.objectContaining({ id: 'c9', resume: true, headers: expect.objectContaining({ cookie: 'sid=secret' }) })]);
  });

  it('resumes or discards, from the popup, a download the new host does not know', async () => {
    const t = setup();
    const rec = { id: 'c9', chromeId: 9, url: 'https://files.example/big.iso', origin: 'https://files.example', file: '/d/big.iso', size: 32e6, chromeCanceled: true, state: state('c9', 'paused'), at: 5 };
    t.dl.restore([rec]);
    await t.dl.act('c9', 'resume');
    expect(t.offers[0]?.resume).toBe(true);
    await t.dl.act('c9', 'cancel');
    expect(t.discarded).toEqual(['/d/big.iso']);
  });

  // Chrome's verdicts (chrome.downloads DangerType): only "safe" is taken. A dangerous type waiting for "Keep", a
  // Safe Browsing verdict, an enterprise scan still running or blocking, and any value Chrome adds later stay with
  // Chrome, and so does a dangerous download the user accepted: Chrome's copy is the one that was judged.
  it('takes only what Chrome holds as safe', async () => {
    const dangers = ['file', 'url', 'content', 'uncommon', 'host', 'unwanted', 'accepted', 'allowlistedByPolicy', 'asyncScanning',
      'asyncLocalPasswordScanning', 'passwordProtected', 'blockedTooLarge', 'sensitiveContentWarning', 'sensitiveContentBlock',
      'deepScannedFailed', 'deepScannedSafe', 'deepScannedOpenedDangerous', 'promptForScanning', 'promptForLocalPasswordScanning',
      'accountCompromise', 'blockedScanFailed', 'forceSaveToGdrive', 'forceSaveToOnedrive', 'aValueChromeAddsLater'];
    for (const danger of dangers) {
      const t = setup();
      await t.dl.created(item({ filename: '/d/big.iso', danger }));
      expect(t.offers, danger).toHaveLength(0);
      // Nor later, when the file name arrives.
      await t.dl.changed({ id: 7, filename: '/d/big2.iso' });
      expect(t.offers, danger).toHaveLength(0);
    }
    const t = setup();
    await t.dl.created(item({ filename: '/d/big.iso', danger: 'safe' }));
    expect(t.offers).toHaveLength(1);
  });

  it('takes a download back from the host when Chrome finds it dangerous before the host runs it', async () => {
    const t = setup();
    await t.dl.created(item({ filename: '/d/big.iso' }));
    expect(t.offers).toHaveLength(1);
    await t.dl.changed({ id: 7, danger: 'uncommon' });
    expect(t.controls).toEqual(['c7 cancel']);
    t.dl.pushed(state('c7', 'running')); // the host's answer, already on its way
    expect(t.canceled).toEqual([]); // Chrome's copy, which Chrome holds, stays
    expect(t.dl.list()).toHaveLength(0);
    // A danger that arrives before the file name: never offered at all.
    const u = setup();
    await u.dl.created(item());
    await u.dl.changed({ id: 7, danger: 'file' });
    await u.dl.changed({ id: 7, filename: '/d/big.iso' });
    expect(u.offers).toHaveLength(0);
  });

  // What the browser itself would send with the download's request: a SameSite=Strict cookie only when the request
  // came from the same site (the download's referrer on the same host); never when a page elsewhere, or an unknown
  // one, started it.
  it('sends the cookies the browser would send for that request, no Strict one from elsewhere', async () => {
    const jar: BrowserCookie[] = [
      { name: 'lax', value: 'a', path: '/', sameSite: 'lax' },
      { name: 'strict', value: 's3cret', path: '/', sameSite: 'strict' },
      { name: 'none', value: 'n', path: '/big.iso', sameSite: 'no_restriction' },
      { name: 'default', value: 'd', path: '/', sameSite: 'unspecified' },
    ];
    const header = async (referrer: string) => {
      const t = setup({ cookies: jar });
      await t.dl.created(item({ filename: '/d/big.iso', referrer }));
      return t.offers[0]?.headers?.cookie ?? '';
    };
    expect(await header('https://files.example/list')).toBe('none=n; lax=a; strict=s3cret; default=d');
    for (const elsewhere of ['https://evil.example/', 'http://files.example/', '']) {
      expect(await header(elsewhere), elsewhere).toBe('none=n; lax=a; default=d');
    }
    expect(cookieHeaderFor([], 'https://files.example/x', 'https://files.example/')).toBe('');
  });

  it('finds the most specific site rule', () => {
    const o = [{ host: 'example.com', rule: 'never' as const }, { host: 'files.example.com', rule: 'always' as const }];
    expect(ruleFor(o, 'https://files.example.com')).toBe('always');
    expect(ruleFor(o, 'https://www.example.com')).toBe('never');
    expect(ruleFor(o, 'https://example.org')).toBe('auto');
    expect(ruleFor(o, 'https://badexample.com')).toBe('auto');
  });
});

describe('what the downloads section says', () => {
  const v = { enabled: true, host: true, threshold: 200_000, paused: null };
  it('says from what size downloads are offered, in MB, without symbols', () => {
    expect(downloadsNote(v)).toBe('Downloads of 0.2 MB or more are offered to MPSurf, which takes those that gain from both links.');
    expect(downloadsNote(v)).not.toMatch(/θ/);
  });
  it('agrees with the pause and the host: nothing is offered then', () => {
    expect(downloadsNote({ ...v, paused: 'Multipath is paused: every site uses one path, none goes through the proxy.' })).toMatch(/^Multipath is paused.*Every download stays in the browser until then\.$/);
    expect(downloadsNote({ ...v, host: false, threshold: null })).toMatch(/host is not running/);
    expect(downloadsNote({ ...v, enabled: false })).toMatch(/^Off/);
    expect(downloadsNote({ ...v, threshold: null })).toMatch(/No download gains/);
  });
});
