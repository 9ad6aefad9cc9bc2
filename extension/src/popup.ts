// The toolbar popup: this tab's decision and why, path gauges, recent loads, health. Everything the host or a page
// supplied is written with textContent or as SVG attributes, never parsed as HTML.

import { activeTabId, openOptionsPage, sendMessage } from './browser';
import { popupQuery, type PageReply, type PopupState } from './messages';
import { decisionView, healthItems, loadBars, multipathItems, pathViews, policyText, routeText, rrcText, NOT_MEASURED, type Row } from './view';

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

function renderDecision(state: PopupState): void {
  const v = decisionView(state);
  const card = byId('decision');
  card.className = `card decision tone-${v.tone}`;
  const head = byId('headline');
  head.className = `pill tone-${v.tone}`;
  head.textContent = v.headline;
  byId('origin').textContent = v.origin ?? '';
  byId('why').textContent = v.why;
  fill(byId('terms'), v.terms);
  const note = byId('terms-note');
  note.hidden = v.termsNote === null;
  note.textContent = v.termsNote ?? '';
  fill(byId('facts'), [...v.facts, ['Route', routeText(state)]]);
  byId('route').textContent = state.viaProxy ? 'via proxy' : '';
  byId('route').hidden = !state.viaProxy;
}

function renderPaths(state: PopupState): void {
  const box = byId('paths');
  box.replaceChildren();
  const paths = pathViews(state.host);
  if (paths === null || paths.length === 0) {
    const why = state.host === null ? `no host status (${state.hostError ?? 'unknown'})` : 'the host does not report paths yet';
    box.append(el('p', 'empty', `RTT, throughput, loss: ${NOT_MEASURED} — ${why}.`));
  } else {
    for (const p of paths) {
      const card = el('div', `path card ${p.kind}${p.up ? '' : ' down'}`);
      const title = el('div', 'title');
      title.append(el('span', undefined, `${p.name} · ${p.kind}`), el('span', p.up ? 'ok-text' : 'muted', p.up ? 'up' : 'down'));
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
  byId('rrc').textContent = rrcText(state.host);
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
  svg.setAttribute('aria-label', `page-load times of the last ${bars.length} loads, up to ${Math.round(maxMs)} ms`);
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
  for (const [tone, text] of [['mp', 'multipath'], ['sp', 'single path'], ['off', 'no decision']] as const) {
    const item = el('span');
    const swatch = el('i');
    swatch.style.background = colour[tone];
    item.append(swatch, document.createTextNode(text));
    legend.append(item);
  }
  legend.append(el('span', undefined, `max ${Math.round(maxMs)} ms`));
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
  const reply = (await sendMessage(popupQuery(await activeTabId()))) as PageReply<PopupState> | undefined;
  if (reply === undefined) throw new Error('the background service worker did not answer');
  if (!reply.ok) throw new Error(reply.error);
  const state = reply.value;
  const badge = byId('badge');
  badge.textContent = state.badge.text;
  badge.className = `pill tone-${state.badge.text === 'MP' ? 'mp' : state.badge.text === 'SP' ? 'sp' : 'off'}`;
  badge.title = state.badge.title;
  renderDecision(state);
  renderPaths(state);
  renderChart(state);
  renderHealth(state);
  byId('network').textContent = state.status.policy ? `Network: ${policyText(state.status.policy)}` : 'Network: no policy';
  const paused = state.multipath?.settings.paused ?? false;
  const btn = byId('pause') as HTMLButtonElement;
  btn.textContent = paused ? 'Resume multipath' : 'Pause all multipath';
  btn.dataset.paused = String(paused);
}

byId('pause').addEventListener('click', () => {
  const paused = byId('pause').dataset.paused !== 'true';
  sendMessage({ type: 'multipath-pause', paused })
    .then(() => render())
    .catch(fail);
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
