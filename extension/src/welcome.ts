// The first-run page: what MPSurf does with cellular data, the data limits (on from the start, the plan's monthly
// data to enter), and the user's consent, without which nothing is multipath.

import { openOptionsPage, sendMessage } from './browser';
import type { PageReply, SettingsState } from './messages';
import { limitText, normaliseMultipath } from './caps';
import { normalisePrefs, type Prefs } from './prefs';
import { overall, plainError } from './view';

function byId(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`welcome.html lacks #${id}`);
  return el;
}
const input = (id: string): HTMLInputElement => byId(id) as HTMLInputElement;

let last: SettingsState | null = null;

function show(s: SettingsState): void {
  last = s;
  const mp = s.multipath;
  const daily = mp?.settings.daily_cap_bytes ?? null;
  byId('daily-words').textContent = daily === null ? 'no daily limit (you removed it)' : `a daily limit of ${limitText(daily)} of cellular data`;
  const p = s.settings.prefs;
  if (document.activeElement !== input('quota-gb')) input('quota-gb').value = p.quota_bytes === null ? '' : String(p.quota_bytes / 1e9);
  if (document.activeElement !== input('billing-day')) input('billing-day').value = String(p.billing_day);
  if (document.activeElement !== input('cap-daily')) input('cap-daily').value = daily === null ? '' : String(Math.round(daily / 1e6));
  const at = mp?.settings.consent_at ?? null;
  const state = byId('state');
  if (at !== null) {
    // The same words as the popup and the options page: with no host, MPSurf is off whatever was agreed.
    const o = overall(s.status, mp);
    state.textContent = `You agreed on ${new Date(at).toLocaleString()}. ${o.detail} You can pause multipath from the toolbar popup at any time.`;
    state.className = o.level === 'on' ? 'ok-text' : 'warn-text';
    (byId('agree') as HTMLButtonElement).disabled = true;
  }
}

async function ask(m: object): Promise<SettingsState> {
  const reply = (await sendMessage(m)) as PageReply<SettingsState> | undefined;
  if (reply === undefined) throw new Error('the background service worker did not answer');
  if (!reply.ok) throw new Error(reply.error);
  return reply.value;
}

function fail(e: unknown): void {
  const state = byId('state');
  state.textContent = `Could not save your answer: ${(e as Error).message}`;
  state.className = 'error';
}

function planMsg(text: string, ok: boolean): void {
  const m = byId('plan-msg');
  m.textContent = text;
  m.className = `msg ${ok ? 'ok-text' : 'error'}`;
}

/** Reads a number field: null when empty, NaN when not a number. */
function value(id: string): number | null {
  const raw = input(id).value.trim();
  return raw === '' ? null : Number(raw);
}

/** Checks a change in the page's words (check throws), then sends it and shows the result. */
function save(check: () => void, message: object): void {
  try {
    check();
  } catch (e) {
    planMsg(`Not saved. ${plainError(e)}`, false);
    return;
  }
  ask(message)
    .then((s) => {
      show(s);
      planMsg('Saved', true);
    })
    .catch((e: unknown) => planMsg(`Not saved: ${(e as Error).message}`, false));
}

function savePrefs(change: Partial<Prefs>): void {
  if (last === null) return;
  const next = { ...last.settings.prefs, ...change };
  save(() => normalisePrefs(next), { type: 'settings-set', prefs: next });
}

input('quota-gb').addEventListener('change', () => {
  const v = value('quota-gb');
  if (v !== null && !(v > 0)) return planMsg('Not saved. The monthly data in your plan: enter a number of GB above 0, or leave it empty.', false);
  savePrefs({ quota_bytes: v === null ? null : Math.round(v * 1e9) });
});
input('billing-day').addEventListener('change', () => {
  const v = value('billing-day');
  if (v === null || !Number.isFinite(v)) return planMsg('Not saved. The day your plan renews: enter 1 to 31.', false);
  savePrefs({ billing_day: Math.round(v) });
});
input('cap-daily').addEventListener('change', () => {
  if (last?.multipath === undefined) return;
  const v = value('cap-daily');
  const next = { ...last.multipath.settings, daily_cap_bytes: v === null ? null : Math.round(v * 1e6) };
  save(() => normaliseMultipath(next), { type: 'multipath-set', settings: next });
});

byId('agree').addEventListener('click', () => {
  ask({ type: 'consent' }).then(show).catch(fail);
});
byId('settings').addEventListener('click', () => {
  openOptionsPage().catch(() => undefined);
});
ask({ type: 'settings-get' }).then(show).catch(fail);
