// The options page: edits the preferences, which the service worker validates, stores, applies to the header rules
// and sends to the host; imports and exports them; exports and deletes the host's decision log. Text from the host
// or a file is shown with textContent only.

import { sendMessage } from './browser';
import type { PageReply, SettingsState } from './messages';
import { exportSettings, normaliseHost, parseSettingsFile, PrefsError, type HeaderScope, type Mode, type OverrideRule, type Prefs } from './prefs';
import { bytes, multipathItems, networkText, overall, plainError, usageBars } from './view';
import { normaliseMultipath, type Route } from './caps';
import type { ProxyTestResult } from './protocol/proxy';
import { PrefsEdits } from './prefsedits';

function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`options.html lacks #${id}`);
  return el as T;
}
const input = (id: string): HTMLInputElement => byId<HTMLInputElement>(id);

let prefs: Prefs | null = null;

async function ask<T>(m: object): Promise<T> {
  const reply = (await sendMessage(m)) as PageReply<T> | undefined;
  if (reply === undefined) throw new Error('the background service worker did not answer');
  if (!reply.ok) throw new Error(reply.error);
  return reply.value;
}

function show(el: HTMLElement, text: string, kind: 'error' | 'ok' | 'muted' = 'muted'): void {
  el.textContent = text;
  el.className = `msg ${kind === 'error' ? 'error' : kind === 'ok' ? 'ok-text' : 'muted'}`;
}

let state: SettingsState | null = null;

function renderMultipath(s: SettingsState): void {
  const mp = s.multipath;
  if (mp === undefined) return;
  // The same state the popup and the badge show: off without a host, whatever the settings say.
  const o = overall(s.status, mp);
  byId('gate').textContent = [o.detail, ...mp.gate.warnings].join(' ');
  byId('gate').className = `lead ${o.level === 'on' ? 'ok-text' : 'warn-text'}`;
  byId('notice').hidden = mp.notice === null;
  byId('notice').textContent = mp.notice === null ? '' : `Your settings were updated: ${mp.notice}.`;
  byId('consent').hidden = mp.settings.consent_at !== null;
  byId('pause-toggle').textContent = mp.settings.paused ? 'Resume multipath' : 'Pause all multipath';
  const mb = (v: number | null): string => (v === null ? '' : String(Math.round(v / 1e6)));
  if (document.activeElement !== input('cap-daily')) input('cap-daily').value = mb(mp.settings.daily_cap_bytes);
  input('pause-roaming').checked = mp.settings.pause_roaming;
  byId<HTMLSelectElement>('proxy-route').value = mp.settings.route;
  byId('netcost').textContent = s.status.host === 'connected' ? networkText(s.host) : 'not known (the host is not running)';
  const p = s.settings.prefs;
  const box = byId('usage-bars');
  box.replaceChildren();
  for (const b of usageBars(s.host, mp, { monthly_bytes: p.quota_bytes, billing_day: p.billing_day })) {
    const row = document.createElement('div');
    row.className = `meter ${b.level}`;
    const label = document.createElement('span');
    label.className = 'label';
    label.textContent = b.label === 'This month' ? 'Cellular this month' : b.label;
    const text = document.createElement('span');
    text.className = 'text';
    text.textContent = s.status.host === 'connected' ? b.text : 'not measured (the host is not running)';
    row.append(label, text);
    if (b.fill !== null) {
      const bar = document.createElement('div');
      bar.className = 'bar';
      const span = document.createElement('span');
      span.style.width = `${Math.round(b.fill * 100)}%`;
      bar.append(span);
      row.append(bar);
    }
    box.append(row);
  }
  const ps = s.proxy?.status ?? null;
  if (ps !== null) {
    if (document.activeElement !== input('proxy-server')) input('proxy-server').value = ps.server ?? '';
    if (document.activeElement !== input('proxy-user')) input('proxy-user').value = ps.user ?? '';
    if (document.activeElement !== input('proxy-pin')) input('proxy-pin').value = ps.pin ?? '';
    byId('proxy-clear').hidden = !ps.configured;
  }
  const items = multipathItems({ host: s.host, proxy: s.proxy, multipath: s.multipath });
  byId('proxy-state').textContent = items
    .filter((h) => /Proxy|proxy|endpoints/.test(h.title))
    .map((h) => `${h.title}: ${h.detail}${h.command ? ` Fix: ${h.command}` : ''}`)
    .join(' · ') || (ps === null ? 'The host does not report a proxy.' : '');
  const list = byId('proxy-usage');
  list.replaceChildren();
  for (const u of ps?.usage ?? []) {
    const li = document.createElement('li');
    li.textContent = `${u.host}: ${bytes(u.cell_bytes)} cellular, ${bytes(u.other_bytes)} WiFi, ${u.tunnels} connection${u.tunnels === 1 ? '' : 's'}`;
    list.append(li);
  }
  if ((ps?.usage ?? []).length === 0) {
    const li = document.createElement('li');
    li.className = 'muted';
    li.textContent = 'nothing yet';
    list.append(li);
  }
}

async function multipathSet(change: object, msg = byId('mp-msg')): Promise<void> {
  if (state?.multipath === undefined) return;
  const next = { ...state.multipath.settings, ...change };
  try {
    normaliseMultipath(next); // said in the page's words before the service worker says it in its own
  } catch (e) {
    show(msg, `Not saved. ${plainError(e)}`, 'error');
    return;
  }
  try {
    const s = await ask<SettingsState>({ type: 'multipath-set', settings: next });
    render(s);
    show(msg, 'Saved', 'ok');
  } catch (e) {
    show(msg, `Not saved: ${(e as Error).message}`, 'error');
  }
}

input('cap-daily').addEventListener('change', () => {
  const raw = input('cap-daily').value.trim();
  const v = raw === '' ? null : Math.round(Number(raw) * 1e6);
  if (v !== null && !Number.isFinite(v)) {
    show(byId('plan-msg'), 'Not saved. The daily limit: enter a number of MB, or leave it empty for none.', 'error');
    return;
  }
  void multipathSet({ daily_cap_bytes: v }, byId('plan-msg'));
});
input('pause-roaming').addEventListener('change', () => void multipathSet({ pause_roaming: input('pause-roaming').checked }));
byId<HTMLSelectElement>('proxy-route').addEventListener('change', () => void multipathSet({ route: byId<HTMLSelectElement>('proxy-route').value as Route }));
byId('consent').addEventListener('click', () => {
  ask<SettingsState>({ type: 'consent' }).then(render).catch((e: unknown) => show(byId('mp-msg'), (e as Error).message, 'error'));
});
byId('pause-toggle').addEventListener('click', () => {
  const paused = !(state?.multipath?.settings.paused ?? false);
  ask<SettingsState>({ type: 'multipath-pause', paused }).then(render).catch((e: unknown) => show(byId('mp-msg'), (e as Error).message, 'error'));
});
byId<HTMLFormElement>('proxy-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const msg = byId('proxy-msg');
  const settings = { server: input('proxy-server').value, user: input('proxy-user').value, password: input('proxy-password').value, pin: input('proxy-pin').value };
  if (settings.password === '') {
    show(msg, 'Enter the password (it is not shown again once saved)', 'error');
    return;
  }
  ask<SettingsState>({ type: 'proxy-set', settings })
    .then((s) => {
      input('proxy-password').value = '';
      render(s);
      show(msg, `Saved in ${s.proxy?.status?.file ?? 'the host’s settings file'} (readable by you only). Press Test to check it.`, 'ok');
    })
    .catch((e: unknown) => show(msg, `Not saved: ${(e as Error).message}`, 'error'));
});
byId('proxy-test').addEventListener('click', () => {
  const msg = byId('proxy-msg');
  show(msg, 'Testing…');
  ask<ProxyTestResult>({ type: 'proxy-test' })
    .then((r) => {
      const sub = r.mptcp ? `MPTCP yes, ${r.subflows} subflow${r.subflows === 1 ? '' : 's'}${r.cell_subflow ? ' (second one on cellular)' : ''}` : 'MPTCP no';
      show(msg, `${r.ok ? 'OK' : 'Failed'}: ${r.detail} — ${sub}${r.software ? `, ${r.software}` : ''}, ${r.elapsed_ms} ms`, r.ok && r.cell_subflow ? 'ok' : 'error');
      return ask<SettingsState>({ type: 'settings-get' }).then(render);
    })
    .catch((e: unknown) => show(msg, `Test failed: ${(e as Error).message}`, 'error'));
});
byId('proxy-clear').addEventListener('click', () => {
  if (!confirm('Remove the proxy settings (and the stored password)? Every site then connects directly.')) return;
  ask<SettingsState>({ type: 'proxy-clear' })
    .then((s) => {
      input('proxy-server').value = input('proxy-user').value = input('proxy-pin').value = '';
      render(s);
      show(byId('proxy-msg'), 'Removed.', 'ok');
    })
    .catch((e: unknown) => show(byId('proxy-msg'), (e as Error).message, 'error'));
});

function render(s: SettingsState): void {
  state = s;
  renderMultipath(s);
  const p = s.settings.prefs;
  prefs = p;
  input(`mode-${p.mode}`).checked = true;
  input('deadline').value = String(p.deadline_ms / 1000);
  input('battery-floor').value = String(p.battery_floor_percent);
  input('charging').checked = p.charging_unlimited;
  if (document.activeElement !== input('quota-gb')) input('quota-gb').value = p.quota_bytes === null ? '' : String(p.quota_bytes / 1e9);
  input('billing-day').value = String(p.billing_day);
  input(`scope-${p.header_scope}`).checked = true;
  byId('opted-in').textContent = s.settings.optedIn.length === 0 ? 'none yet' : s.settings.optedIn.join(', ');

  const list = byId('overrides');
  list.replaceChildren();
  if (p.overrides.length === 0) {
    const li = document.createElement('li');
    li.className = 'muted';
    li.textContent = 'No site rules: the model decides everywhere.';
    list.append(li);
  }
  for (const o of p.overrides) {
    const li = document.createElement('li');
    const host = document.createElement('span');
    host.className = 'mono';
    host.textContent = o.host;
    const rule = document.createElement('span');
    rule.className = `rule ${o.rule}`;
    rule.textContent = o.rule === 'always' ? 'always multipath' : 'never multipath';
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.textContent = 'Remove';
    remove.addEventListener('click', () => void save((cur) => ({ overrides: cur.overrides.filter((x) => x.host !== o.host) })));
    const left = document.createElement('span');
    left.append(host, document.createTextNode('  '), rule);
    li.append(left, remove);
    list.append(li);
  }

  const sync = byId('sync');
  const ps = s.settings.prefsSync;
  sync.className = ps.state === 'ok' ? 'ok-text' : ps.state === 'unsupported' || ps.state === 'error' ? 'warn-text' : 'muted';
  sync.textContent =
    s.status.host !== 'connected'
      ? `Saved in the browser; the host is ${s.status.host === 'missing' ? 'not installed' : 'not running'}`
      : ps.state === 'ok'
        ? 'Saved and applied by the host'
        : ps.state === 'unsupported'
          ? 'Saved in the browser; the host does not support preferences yet'
          : ps.state === 'error'
            ? `Saved in the browser; ${ps.detail}`
            : 'Saved in the browser';
  sync.title = ps.detail;
  const problem = byId('problem');
  problem.hidden = s.settings.problem === null;
  problem.textContent = s.settings.problem ?? '';
}

async function save(change: Partial<Prefs> | ((p: Prefs) => Partial<Prefs>), msg?: HTMLElement): Promise<boolean> {
  try {
    await edits.save(change);
    if (msg) show(msg, 'Saved', 'ok');
    return true;
  } catch (e) {
    // A PrefsError is said in the page's words (seconds, GB), never in the stored fields'.
    const text = e instanceof PrefsError ? `Not saved. ${plainError(e)}` : `Not saved: ${(e as Error).message}`;
    if (msg) show(msg, text, 'error');
    const sync = byId('sync');
    sync.className = 'error';
    sync.textContent = text;
    return false;
  }
}

/** A number field of the preferences: empty or not a number is refused in words; `apply` maps it to the change. */
function numberField(id: string, what: string, apply: (v: number | null) => Partial<Prefs>, msg?: HTMLElement, emptyOK = false, above?: number): void {
  input(id).addEventListener('change', () => {
    const raw = input(id).value.trim();
    const v = Number(raw);
    if (raw === '' && emptyOK) {
      void save(apply(null), msg);
      return;
    }
    if (raw === '' || !Number.isFinite(v) || (above !== undefined && v <= above)) {
      const text = `Not saved. ${what}: enter a number${above !== undefined ? ` above ${above}` : ''}${emptyOK ? ', or leave it empty' : ''}.`;
      if (msg) show(msg, text, 'error');
      byId('sync').className = 'error';
      byId('sync').textContent = text;
      return;
    }
    void save(apply(v), msg);
  });
}

for (const m of ['performance', 'balanced', 'battery_saver'] as Mode[]) {
  input(`mode-${m}`).addEventListener('change', () => void save({ mode: m }));
}
for (const s of ['all', 'opt_in', 'never'] as HeaderScope[]) {
  input(`scope-${s}`).addEventListener('change', () => void save({ header_scope: s }));
}
numberField('deadline', 'Your patience per page', (v) => ({ deadline_ms: Math.round((v ?? 0) * 1000) }));
numberField('battery-floor', 'The battery level', (v) => ({ battery_floor_percent: Math.round(v ?? 0) }));
numberField('billing-day', 'The day your plan renews', (v) => ({ billing_day: Math.round(v ?? 0) }), byId('plan-msg'));
// The plan's monthly data: empty is unlimited (or not said), and no monthly limit applies.
numberField('quota-gb', 'The monthly data in your plan', (v) => ({ quota_bytes: v === null ? null : Math.round(v * 1e9) }), byId('plan-msg'), true, 0);
input('charging').addEventListener('change', () => void save({ charging_unlimited: input('charging').checked }));

byId<HTMLFormElement>('override-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const err = byId('override-error');
  let host: string;
  try {
    host = normaliseHost(input('override-host').value);
  } catch (e) {
    show(err, (e as PrefsError).message.replace(/^host: /, ''), 'error');
    return;
  }
  const rule = byId<HTMLSelectElement>('override-rule').value as OverrideRule;
  const edit = (cur: Prefs): Partial<Prefs> => ({ overrides: [...cur.overrides.filter((o) => o.host !== host), ...(rule === 'auto' ? [] : [{ host, rule }])] });
  void save(edit).then((ok) => {
    if (!ok) return;
    const typed = input('override-host').value.trim();
    const name = typed.toLowerCase() === host ? host : `${typed} (stored as ${host})`;
    show(err, rule === 'auto' ? `${name}: the model decides` : `${name}: ${rule} multipath`, 'ok');
    input('override-host').value = '';
  });
});

function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const stamp = (): string => new Date().toISOString().slice(0, 10);

byId('export-settings').addEventListener('click', () => {
  if (prefs !== null) download(`mpsurf-settings-${stamp()}.json`, 'application/json', exportSettings(prefs));
});

input('import-file').addEventListener('change', () => {
  const msg = byId('import-msg');
  const file = input('import-file').files?.[0];
  if (file === undefined) return;
  file
    .text()
    .then(async (text) => {
      const imported = parseSettingsFile(text);
      if (await save(imported)) show(msg, `Imported ${file.name}: ${imported.overrides.length} site rules`, 'ok');
    })
    .catch((e: unknown) => show(msg, `Not imported: ${(e as Error).message}`, 'error'))
    .finally(() => {
      input('import-file').value = '';
    });
});

for (const format of ['csv', 'jsonl'] as const) {
  byId(`log-export-${format}`).addEventListener('click', () => {
    const msg = byId('log-msg');
    show(msg, 'Exporting…');
    ask<{ data: string; rows: number; chunks: number }>({ type: 'log-export', format })
      .then((r) => {
        download(`mpsurf-decisions-${stamp()}.${format}`, format === 'csv' ? 'text/csv' : 'application/x-ndjson', r.data);
        show(msg, `Exported ${r.rows} rows (${bytes(r.data.length)})`, 'ok');
      })
      .catch((e: unknown) => show(msg, (e as Error).message, 'error'));
  });
}

byId('log-delete').addEventListener('click', () => {
  const msg = byId('log-msg');
  if (!confirm('Delete every logged decision and page-load observation? This cannot be undone.')) return;
  ask<SettingsState>({ type: 'log-delete' })
    .then((s) => {
      render(s);
      show(msg, 'The decision log is deleted.', 'ok');
    })
    .catch((e: unknown) => show(msg, (e as Error).message, 'error'));
});

const loaded = ask<SettingsState>({ type: 'settings-get' })
  .then(render)
  .catch((e: unknown) => {
    const p = byId('problem');
    p.hidden = false;
    p.textContent = `Could not read the settings: ${(e as Error).message}`;
  });
// Changes made before the settings are read, or while an earlier one is on its way, wait their turn (prefsedits.ts).
const edits = new PrefsEdits(loaded, {
  current: () => prefs,
  store: async (next) => render(await ask<SettingsState>({ type: 'settings-set', prefs: next })),
});
