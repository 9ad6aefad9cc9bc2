import { describe, expect, it, vi } from 'vitest';

// The one browser call an answer makes (the popup's browser name); the rest of the module needs a browser.
vi.mock('../src/browser', () => ({ browserName: () => 'chromium' }));

const { answer } = await import('../src/dispatch');
type Parts = import('../src/dispatch').Parts;

// The parts a settings request reads, as plain values: a stand-in for the service worker's wiring, whose only
// point here is when the answer reads them.
function partsWith(restored: Promise<void>, state: { mode: string }): Parts {
  const view = () => ({ mode: state.mode });
  return {
    restored,
    host: { status: () => ({ host: 'missing', detail: 'x', policy: null }) },
    settings: {
      view,
      logSupport: { state: 'ok' },
      set: async (prefs: { mode: string }) => {
        state.mode = prefs.mode;
      },
    },
    proxy: { view: () => null },
    multipath: { view: () => null, planChanged: async () => undefined },
    hostReply: async () => ({ host: null, hostError: 'no host' }),
  } as unknown as Parts;
}

describe('answers to the extension pages', () => {
  it('wait until the stored settings are back before reading or changing them', async () => {
    const state = { mode: 'performance (default)' };
    let restore = (): void => undefined;
    const restored = new Promise<void>((r) => {
      restore = () => {
        state.mode = 'battery_saver'; // what storage held
        r();
      };
    });
    const p = partsWith(restored, state);
    const read = answer(p, { type: 'settings-get' } as never);
    const change = answer(p, { type: 'settings-set', prefs: { mode: 'balanced' } } as never);
    let settled = false;
    void read.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    restore();
    const got = (await read) as { ok: true; value: { settings: { mode: string } } };
    expect(got.value.settings.mode).toBe('battery_saver');
    const after = (await change) as { ok: true; value: { settings: { mode: string } } };
    // The change comes after the restore, so the restore cannot overwrite it.
    expect(after.value.settings.mode).toBe('balanced');
    expect(state.mode).toBe('balanced');
  });
});
