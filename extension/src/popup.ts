// The toolbar popup: host status and this tab's decision, as text.

import { activeTabId, sendMessage } from './browser';
import { popupQuery, type PopupState } from './messages';
import { popupRows, type Row } from './view';

function fill(list: HTMLElement, rows: Row[]): void {
  list.replaceChildren();
  for (const [label, value] of rows) {
    const dt = document.createElement('dt');
    dt.textContent = label;
    const dd = document.createElement('dd');
    dd.textContent = value;
    list.append(dt, dd);
  }
}

function byId(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`popup.html lacks #${id}`);
  return el;
}

async function render(): Promise<void> {
  const state = (await sendMessage(popupQuery(await activeTabId()))) as PopupState | undefined;
  if (state === undefined) throw new Error('the background service worker did not answer');
  const rows = popupRows(state);
  fill(byId('page'), rows.page);
  fill(byId('host'), rows.host);
  const badge = byId('badge');
  badge.textContent = state.badge.text;
  badge.style.backgroundColor = state.badge.color;
  badge.title = state.badge.title;
}

render().catch((e: unknown) => {
  const el = byId('error');
  el.textContent = `Could not read MPSurf's state: ${e instanceof Error ? e.message : String(e)}`;
  el.hidden = false;
});
