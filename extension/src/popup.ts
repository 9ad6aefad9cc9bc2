// The toolbar popup: first what this tab's page uses and why, in plain words, with the data used against the
// limits; then, behind "Details", the numbers; then the connections, recent loads, downloads and what MPSurf still
// needs. Everything the host or a page supplied is written with textContent or as SVG attributes, never parsed as
// HTML.

import { activeTabId, openExtensionPage, openOptionsPage, sendMessage } from './browser';
import { popupQuery, type PageReply, type PopupState } from './messages';
import {
  decisionWords,
  detailRows,
  healthItems,
  loadBars,
  multipathItems,
  overall,
  pathViews,
  termRows,
  usageBars,
  NOT_MEASURED,
  type Row,
} from './view';

function byId(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`popup.html lacks #${id}`);
  return el;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function fill(list: HTMLElement, rows: Row[]): void {
  list.replaceChildren();
  for (const [label, value] of rows) list.append(el('dt', undefined, label), el('dd', undefined, value));
}

/**
 * Which tab the popup describes: the active tab, or the one `?tab=ID` names (the popup opened in a tab of its
 * own, as the end-to-end tests open it, would otherwise describe itself).
 */
async function tabId(): Promise<number | undefined> {
  const t = Number(new URLSearchParams(location.search).get('tab') ?? NaN);
  return Number.isSafeInteger(t) && t >= 0 ? t : activeTabId();
}

let action: 'consent' | 'resume' | null = null;

function renderTop(state: PopupState): void {
  const o = overall(state.status, state.multipath);
  const pill = byId('state');
  pill.textContent = o.label;
  pill.className = `pill tone-${o.level === 'on' ? 'mp' : o.level === 'paused' ? 'paused' : 'off'}`;
  pill.title = o.detail;
  const pause = byId('pause') as HTMLButtonElement;
  const g = state.multipath?.gate;
  // Pause is offered while multipath can run; once paused by the user, Resume. Consent comes from the first-run
  // page, a limit from its renewal: neither is undone here.
  const paused = state.multipath?.settings.paused ?? false;
  pause.hidden = state.multipath === undefined || g?.why === 'consent' || state.status.host !== 'connected';
  pause.textContent = paused ? 'Resume' : 'Pause';
  pause.title = paused ? 'Let MPSurf use cellular again where it pays off' : 'Use one path everywhere until you resume';
  pause.dataset.paused = String(paused);

  const d = decisionWords(state);
  byId('decision').className = `card decision tone-${d.tone}`;
  byId('title').textContent = d.title;
  byId('why').textContent = d.why;
  const site = byId('site');
  site.hidden = d.site === null;
  site.textContent = d.site ?? '';
  const btn = byId('action') as HTMLButtonElement;
  action = d.action;
  btn.hidden = d.action === null;
  btn.textContent = d.action === 'consent' ? 'Read what it does and agree' : d.action === 'resume' ? 'Resume multipath' : '';

  const prefs = state.settings.prefs;
  const box = byId('usage');
  box.replaceChildren();
  if (state.status.host === 'connected') {
    for (const b of usageBars(state.host, state.multipath, { monthly_bytes: prefs.quota_bytes, billing_day: prefs.billing_day })) {
      const row = el('div', `meter ${b.level}`);
      row.append(el('span', 'label', b.label), el('span', 'text', b.text));
      if (b.fill !== null) {
        const bar = el('div', 'bar');
        const span = el('span');
        span.style.width = `${Math.round(b.fill * 100)}%`;
        bar.append(span);
        row.append(bar);
      }
      box.append(row);
    }
  }
}

function renderDetails(state: PopupState): void {
  // Without a host there is nothing behind the decision to show.
  byId('details').hidden = state.status.host !== 'connected';
  fill(byId('facts'), detailRows(state));
  const terms = termRows(state.page?.terms);
  byId('terms-box').hidden = terms.length === 0;
  const list = byId('terms');
  list.replaceChildren();
  for (const t of terms) {
    const dt = el('dt', undefined, t.label);
    dt.title = t.note;
    list.append(dt, el('dd', undefined, t.value));
  }
  const m = state.page?.model;
  byId('model').textContent = m ? `Model ${m.id} v${m.version}` : '';
}

function renderPaths(state: PopupState): void {
  const box = byId('paths');
  box.replaceChildren();
  const paths = pathViews(state.host);
  if (paths === null || paths.length === 0) {
    const why = state.host === null ? 'the host is not running' : 'the host does not report them yet';
    box.append(el('p', 'empty', `Speed and delay: ${NOT_MEASURED} (${why}).`));
  } else {
    for (const p of paths) {
      const card = el('div', `path card ${p.kind.toLowerCase()}${p.up ? '' : ' down'}`);
      const title = el('div', 'title');
      title.append(el('span', undefined, `${p.kind} · ${p.name}`), el('span', p.up ? 'ok-text' : 'muted', p.up ? 'up' : 'down'));
      card.append(title);
      for (const g of p.gauges) {
        const row = el('div', 'gauge');
        const bar = el('div', 'bar');
        const span = el('span');
        span.style.width = `${Math.round((g.fill ?? 0) * 100)}%`;
        bar.append(span);
        row.append(el('span', 'muted', g.label), bar, el('span', 'value', g.value));
        card.append(row);
      }
      box.append(card);
    }
  }
}

const SVG = 'http://www.w3.org/2000/svg';

function renderChart(state: PopupState): void {
  const box = byId('chart');
  box.replaceChildren();
  if (state.loads.length === 0) {
    box.append(el('p', 'empty', 'No page has finished loading since the browser started.'));
    return;
  }
  const { bars, maxMs } = loadBars(state.loads);
  const W = 340;
  const H = 70;
  const slot = W / Math.max(bars.length, 12);
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `load times of the last ${bars.length} pages, up to ${Math.round(maxMs)} ms`);
  const colour = { mp: 'var(--mp)', sp: 'var(--sp)', off: 'var(--off)' } as const;
  bars.forEach((b, i) => {
    const h = Math.max(2, b.h * (H - 4));
    const r = document.createElementNS(SVG, 'rect');
    r.setAttribute('x', String(i * slot + 1));
    r.setAttribute('y', String(H - h));
    r.setAttribute('width', String(Math.max(1, slot - 2)));
    r.setAttribute('height', String(h));
    r.setAttribute('rx', '1.5');
    r.setAttribute('fill', colour[b.tone]);
    const t = document.createElementNS(SVG, 'title');
    t.textContent = b.label;
    r.append(t);
    svg.append(r);
  });
  const legend = el('div', 'legend');
  for (const [tone, text] of [['mp', 'both paths'], ['sp', 'one path'], ['off', 'no decision']] as const) {
    const item = el('span');
    const swatch = el('i');
    swatch.style.background = colour[tone];
    item.append(swatch, document.createTextNode(text));
    legend.append(item);
  }
  legend.append(el('span', undefined, `longest ${(maxMs / 1000).toFixed(1)} s`));
  box.append(svg, legend);
}

function renderHealth(state: PopupState): void {
  const list = byId('health');
  list.replaceChildren();
  for (const h of [...multipathItems(state), ...healthItems(state)]) {
    const li = el('li', h.level);
    li.append(el('b', undefined, h.title), el('span', 'muted', h.detail));
    if (h.command) li.append(el('code', undefined, h.command));
    list.append(li);
  }
}

async function render(): Promise<void> {
  const reply = (await sendMessage(popupQuery(await tabId()))) as PageReply<PopupState> | undefined;
  if (reply === undefined) throw new Error('the background service worker did not answer');
  if (!reply.ok) throw new Error(reply.error);
  const state = reply.value;
  renderTop(state);
  renderDetails(state);
  renderPaths(state);
  renderChart(state);
  renderHealth(state);
  byId('error').hidden = true;
}

byId('pause').addEventListener('click', () => {
  const paused = byId('pause').dataset.paused !== 'true';
  sendMessage({ type: 'multipath-pause', paused })
    .then(() => render())
    .catch(fail);
});

byId('action').addEventListener('click', () => {
  if (action === 'consent') openExtensionPage('welcome.html').catch(fail);
  else if (action === 'resume') {
    sendMessage({ type: 'multipath-pause', paused: false })
      .then(() => render())
      .catch(fail);
  }
});

byId('open-options').addEventListener('click', () => {
  openOptionsPage().catch(() => undefined);
});

function fail(e: unknown): void {
  const err = byId('error');
  err.textContent = `Could not read MPSurf's state: ${e instanceof Error ? e.message : String(e)}`;
  err.hidden = false;
}

render().catch(fail);
// Live gauges: refresh while the popup is open.
setInterval(() => render().catch(fail), 2_000);
