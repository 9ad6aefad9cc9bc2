// The first-run page: what MPSurf does with cellular data, and the user's consent, without which nothing is multipath.

import { openOptionsPage, sendMessage } from './browser';
import type { PageReply, SettingsState } from './messages';

function byId(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`welcome.html lacks #${id}`);
  return el;
}

function show(s: SettingsState): void {
  const at = s.multipath?.settings.consent_at ?? null;
  const state = byId('state');
  if (at !== null) {
    state.textContent = `You agreed on ${new Date(at).toLocaleString()}. ${s.multipath?.gate.message ?? ''} You can pause multipath from the toolbar popup at any time.`;
    state.className = 'ok-text';
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

byId('agree').addEventListener('click', () => {
  ask({ type: 'consent' }).then(show).catch(fail);
});
byId('settings').addEventListener('click', () => {
  openOptionsPage().catch(() => undefined);
});
ask({ type: 'settings-get' }).then(show).catch(fail);
