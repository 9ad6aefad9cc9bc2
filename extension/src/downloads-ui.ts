// The downloads part of the popup and of the options page (one script for both; each page has the elements it
// needs): the switch that hands large downloads to MPSurf, and the list of downloads with their progress, what each
// link carried, and pause / resume / cancel. Host and page data go in with textContent only.

import { sendMessage } from './browser';
import type { DownloadRecord } from './downloads';
import type { PageReply } from './messages';
import { downloadsNote, type DownloadsView } from './view';


async function ask<T>(m: object): Promise<T> {
  const reply = (await sendMessage(m)) as PageReply<T> | undefined;
  if (!reply) throw new Error('no answer from the service worker');
  if (!reply.ok) throw new Error(reply.error);
  return reply.value;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

const mb = (n: number): string => `${(n / 1e6).toFixed(1)} MB`;

/** One line per download: name, state, progress, per-link bytes, and the actions its state allows. */
export function downloadLine(r: DownloadRecord): { name: string; status: string; fill: number; links: string; actions: ('pause' | 'resume' | 'cancel')[] } {
  const st = r.state;
  const name = r.file.split('/').pop() ?? r.file;
  const received = st?.received ?? 0;
  const fill = r.size > 0 ? Math.min(1, received / r.size) : 0;
  const links = (st?.paths ?? []).map((p) => `${p.name} ${mb(p.bytes)}`).join(' · ');
  let status = st ? st.state : 'offered';
  if (st?.state === 'running' || st?.state === 'paused') status += ` ${mb(received)} of ${mb(r.size)}`;
  if (st?.state === 'done') status += st.digest ? ` (checked: ${st.digest})` : ' (size checked)';
  if (st?.state === 'failed' || (st?.reason && st.state !== 'running')) status += st.reason ? ` — ${st.reason}` : '';
  const actions: ('pause' | 'resume' | 'cancel')[] = [];
  if (st?.state === 'running' || st?.state === 'starting') actions.push('pause', 'cancel');
  if (st?.state === 'paused' || (st?.state === 'failed' && r.chromeCanceled)) actions.push('resume', 'cancel');
  return { name, status, fill, links, actions };
}

function render(v: DownloadsView): void {
  const toggle = document.getElementById('downloads-enabled') as HTMLInputElement | null;
  if (toggle) toggle.checked = v.enabled;
  const note = document.getElementById('downloads-threshold');
  if (note) note.textContent = downloadsNote(v);
  const list = document.getElementById('downloads');
  if (!list) return;
  list.replaceChildren();
  if (v.downloads.length === 0) {
    list.append(el('p', 'empty', v.enabled ? 'No download handed to MPSurf yet.' : 'Handing large downloads to MPSurf is off (Settings).'));
    return;
  }
  for (const r of v.downloads.slice(0, 5)) {
    const line = downloadLine(r);
    const card = el('div', 'card download');
    card.append(el('div', 'title', line.name), el('div', 'muted', line.status));
    const bar = el('div', 'bar');
    const span = el('span');
    span.style.width = `${Math.round(line.fill * 100)}%`;
    bar.append(span);
    card.append(bar);
    if (line.links) card.append(el('div', 'muted', line.links));
    for (const a of line.actions) {
      const b = el('button', undefined, a);
      b.type = 'button';
      b.addEventListener('click', () => {
        ask<DownloadsView>({ type: 'download-act', id: r.id, action: a }).then(render, showError);
      });
      card.append(b);
    }
    list.append(card);
  }
}

function showError(e: unknown): void {
  const p = document.getElementById('downloads-error');
  if (p) {
    p.hidden = false;
    p.textContent = (e as Error).message;
  }
}

function refresh(): void {
  ask<DownloadsView>({ type: 'downloads-get' }).then(render, showError);
}

if (typeof document !== 'undefined' && (document.getElementById('downloads') || document.getElementById('downloads-enabled'))) {
  const toggle = document.getElementById('downloads-enabled') as HTMLInputElement | null;
  toggle?.addEventListener('change', () => {
    ask<DownloadsView>({ type: 'downloads-enable', enabled: toggle.checked }).then(render, showError);
  });
  refresh();
  setInterval(refresh, 1_000);
}
