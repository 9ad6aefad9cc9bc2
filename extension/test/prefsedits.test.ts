import { describe, expect, it } from 'vitest';
import { DEFAULT_PREFS, PrefsError, type Prefs } from '../src/prefs';
import { PrefsEdits } from '../src/prefsedits';

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const flush = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

/** The page as options.ts wires it: `shown` is what the last answer held; the service worker answers each set when told. */
function page(stored: Prefs = { ...DEFAULT_PREFS, overrides: [] }) {
  let shown: Prefs | null = null;
  const sent: Prefs[] = [];
  const answers: Array<ReturnType<typeof deferred<void>>> = [];
  const load = deferred();
  const edits = new PrefsEdits(
    load.promise.then(() => {
      shown = structuredClone(stored);
    }),
    {
      current: () => shown,
      store: async (next) => {
        sent.push(structuredClone(next));
        const a = deferred();
        answers.push(a);
        await a.promise;
        stored = structuredClone(next);
        shown = structuredClone(next);
      },
    },
  );
  return { edits, sent, answers, load, stored: () => stored };
}

describe('PrefsEdits', () => {
  it('a change made before the page has read the preferences is sent once they are read, on top of them', async () => {
    const p = page({ ...DEFAULT_PREFS, deadline_ms: 7000, overrides: [{ host: 'example.com', rule: 'never' }] });
    const saved = p.edits.save({ mode: 'battery_saver' });
    await flush();
    expect(p.sent).toEqual([]); // nothing to build on yet
    p.load.resolve();
    await flush();
    expect(p.sent).toHaveLength(1);
    expect(p.sent[0]).toMatchObject({ mode: 'battery_saver', deadline_ms: 7000, overrides: [{ host: 'example.com', rule: 'never' }] });
    p.answers[0]!.resolve();
    await saved;
    expect(p.stored().mode).toBe('battery_saver');
  });

  it('changes made in a row are sent one at a time, each on top of the last: the last one wins', async () => {
    const p = page();
    p.load.resolve();
    await flush();
    const a = p.edits.save({ mode: 'balanced' });
    const b = p.edits.save({ deadline_ms: 5000 });
    const c = p.edits.save({ mode: 'battery_saver' });
    await flush();
    expect(p.sent).toHaveLength(1); // the second waits for the first answer
    p.answers[0]!.resolve();
    await flush();
    expect(p.sent[1]).toMatchObject({ mode: 'balanced', deadline_ms: 5000 });
    p.answers[1]!.resolve();
    await flush();
    p.answers[2]!.resolve();
    await Promise.all([a, b, c]);
    expect(p.sent.map((s) => s.mode)).toEqual(['balanced', 'balanced', 'battery_saver']);
    expect(p.stored()).toMatchObject({ mode: 'battery_saver', deadline_ms: 5000 });
  });

  it('a change given as a function edits the preferences as they are when its turn comes', async () => {
    const p = page();
    p.load.resolve();
    const add = (host: string) => (cur: Prefs): Partial<Prefs> => ({ overrides: [...cur.overrides, { host, rule: 'always' as const }] });
    const a = p.edits.save(add('a.example'));
    const b = p.edits.save(add('b.example'));
    for (let i = 0; i < 2; i++) {
      await flush();
      p.answers[i]!.resolve();
    }
    await Promise.all([a, b]);
    expect(p.stored().overrides.map((o) => o.host)).toEqual(['a.example', 'b.example']);
  });

  it('an invalid change is refused with a PrefsError, sends nothing and does not hold up the next', async () => {
    const p = page();
    p.load.resolve();
    await expect(p.edits.save({ deadline_ms: -1 })).rejects.toBeInstanceOf(PrefsError);
    const next = p.edits.save({ mode: 'balanced' });
    await flush();
    p.answers[0]!.resolve();
    await next;
    expect(p.sent.map((s) => s.mode)).toEqual(['balanced']);
  });

  it('a refused change does not hold up the next one', async () => {
    const p = page();
    p.load.resolve();
    const a = p.edits.save({ mode: 'balanced' });
    const b = p.edits.save({ mode: 'battery_saver' });
    await flush();
    p.answers[0]!.reject(new Error('the background service worker did not answer'));
    await expect(a).rejects.toThrow(/did not answer/);
    await flush();
    p.answers[1]!.resolve();
    await b;
    expect(p.stored().mode).toBe('battery_saver');
  });

  it('when the preferences could not be read, a change fails in words and sends nothing', async () => {
    const p = page();
    p.load.reject(new Error('no service worker'));
    await expect(p.edits.save({ mode: 'balanced' })).rejects.toThrow(/could not read the settings/);
    expect(p.sent).toEqual([]);
  });
});
