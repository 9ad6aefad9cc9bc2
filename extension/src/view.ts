// Turns the service worker's state into the popup's rows of text. Kept apart from popup.ts so it is testable; the
// popup writes these strings with textContent only.

import type { HostStatus } from './host';
import type { PopupState } from './messages';
import type { TabRecord } from './pages';
import type { Policy, StatusReply } from './protocol';

export type Row = [label: string, value: string];

const HOST_WORDS: Record<HostStatus['host'], string> = {
  connected: 'connected',
  connecting: 'connecting',
  missing: 'not installed',
  exited: 'exited',
  error: 'error',
};

export function bytes(n: number | null): string {
  if (n === null) return 'no cap';
  if (n >= 1_000_000) return `${(n / 1_000_000).toLocaleString('en', { maximumFractionDigits: 1 })} MB`;
  if (n >= 1_000) return `${(n / 1_000).toLocaleString('en', { maximumFractionDigits: 1 })} kB`;
  return `${n} B`;
}

function seconds(ms: number | null): string {
  return ms === null ? '–' : `${(ms / 1000).toLocaleString('en', { maximumFractionDigits: 1 })} s`;
}

export function pageRows(page: TabRecord | null): Row[] {
  if (page === null) return [['Decision', 'none yet (only http and https pages get one)']];
  const rows: Row[] = [['Origin', page.origin]];
  const mode = page.source === 'none' ? 'no header sent' : page.multipath ? 'multipath' : 'single path';
  rows.push(['Mode', page.stale ? `${mode} (withdrawn: the network policy applies now)` : mode]);
  rows.push(['Why', page.reason]);
  rows.push([
    'Decided by',
    page.source === 'host'
      ? `host${page.model ? `, model ${page.model.id} v${page.model.version}` : ''}`
      : page.source === 'fallback'
        ? 'extension (safe default)'
        : 'nobody (no host)',
  ]);
  if (page.source !== 'none') rows.push(['Thresholds', `θ1 ${theta1Text(page.theta1)}, θ2 ${bytes(page.theta2)}, T ${seconds(page.deadline_ms)}`]);
  if (page.header !== null) rows.push(['Header', page.header]);
  if (page.ruleInstalledAt !== null) {
    rows.push(['Rule ready', `${(page.ruleInstalledAt - page.navStartedAt).toFixed(1)} ms after navigation start`]);
  }
  return rows;
}

export function policyText(p: Policy): string {
  return `${p.multipath ? 'multipath' : 'single path'}; θ1 ${theta1Text(p.theta1)}, θ2 ${bytes(p.theta2)}, T ${seconds(p.deadline_ms)}`;
}

/** θ1 for people: null is never (no cellular subflow), 0 is from the first byte. */
export function theta1Text(t: number | null): string {
  if (t === null) return 'never';
  return t === 0 ? 'from the first byte' : bytes(t);
}

export function hostRows(s: HostStatus, now = Date.now()): Row[] {
  const rows: Row[] = [['Host', `${HOST_WORDS[s.host]} for ${seconds(Math.max(0, now - s.since))}`], ['Detail', s.detail]];
  if (s.policy !== null) {
    rows.push(['Network', policyText(s.policy)]);
    rows.push(['Because', s.policy.reason]);
    rows.push(['Model', `${s.policy.model.id} v${s.policy.model.version}, policy revision ${s.policy.revision}`]);
  } else {
    rows.push(['Network', 'no policy: no Multipath-Policy header is sent']);
  }
  if (s.reconnects > 0) rows.push(['Reconnects', String(s.reconnects)]);
  return rows;
}

export function popupRows(state: PopupState, now = Date.now()): { page: Row[]; host: Row[] } {
  return { page: pageRows(state.page), host: hostRows(state.status, now) };
}

// -------------------------------------------------------------------------------------------------------------
// The popup's richer parts: the decision and its explanation, path gauges, health with what to do, the chart.

export type Tone = 'mp' | 'sp' | 'off';

export interface DecisionView {
  tone: Tone;
  headline: string;
  origin: string | null;
  why: string;
  /** The model's terms as rows, or a sentence saying why there are none. */
  terms: Row[];
  termsNote: string | null;
  facts: Row[];
}

function num(v: number, digits = 1): string {
  return v.toLocaleString('en', { maximumFractionDigits: digits });
}

/** A term's value with its unit, scaled for reading (bytes and joules get prefixes). */
export function termValue(value: number | null, unit: string): string {
  if (value === null) return 'unknown';
  if (unit === 'B' || unit === 'bytes') return bytes(Math.round(value));
  if (unit === 'ms' && Math.abs(value) >= 1000) return `${num(value / 1000, 2)} s`;
  if (unit === 'J' && Math.abs(value) < 1) return `${num(value * 1000)} mJ`;
  return unit === '' ? num(value, 3) : `${num(value, 2)} ${unit}`;
}

export function decisionView(state: Pick<PopupState, 'status' | 'page'>): DecisionView {
  const { status, page } = state;
  if (page === null) {
    const p = status.policy;
    return {
      tone: p === null ? 'off' : p.multipath ? 'mp' : 'sp',
      headline: p === null ? 'Off' : p.multipath ? 'Multipath allowed' : 'Single path',
      origin: null,
      why: p === null ? 'No host: no Multipath-Policy header is sent.' : `No decision for this page (only http and https pages get one). Network-wide: ${p.reason}`,
      terms: [],
      termsNote: null,
      facts: [],
    };
  }
  const tone: Tone = page.source === 'none' || page.stale ? 'off' : page.multipath ? 'mp' : 'sp';
  const headline = page.source === 'none' ? 'Off' : page.multipath ? 'Multipath' : 'Single path';
  const terms: Row[] = (page.terms ?? []).map((t) => [t.name, `${termValue(t.value, t.unit)}${t.note ? ` — ${t.note}` : ''}`]);
  let termsNote: string | null = null;
  if (page.source === 'fallback') termsNote = 'The host gave no decision, so MPSurf chose single path as the safe default.';
  else if (page.source === 'none') termsNote = 'Nothing was decided: the host is not connected.';
  else if (terms.length === 0) termsNote = 'This host does not explain its decisions yet (no model terms in its reply).';
  const facts: Row[] = [];
  if (page.source !== 'none') facts.push(['θ1 (a connection gets cellular once it has received)', theta1Text(page.theta1)]);
  if (page.source !== 'none') facts.push(['θ2 (cap on cellular bytes)', bytes(page.theta2)]);
  if (page.deadline_ms !== null) facts.push(['T (your patience)', seconds(page.deadline_ms)]);
  if (page.size) {
    facts.push([
      'Page size',
      page.size.known && page.size.median !== null
        ? `median ${bytes(page.size.median)}${page.size.p90 !== null ? `, p90 ${bytes(page.size.p90)}` : ''} (${page.size.samples} loads)`
        : `unknown (${page.size.source || 'never seen'})`,
    ]);
  }
  if (page.protocol) facts.push(['Protocol assumed', page.protocol]);
  if (page.model) facts.push(['Model', `${page.model.id} v${page.model.version}`]);
  if (page.header !== null) facts.push(['Header sent', page.header]);
  return {
    tone,
    headline: page.stale && page.source !== 'none' ? `${headline} (withdrawn)` : headline,
    origin: page.origin,
    why: page.stale && page.source !== 'none' ? `${page.reason}. Withdrawn since: the network policy applies now.` : page.reason,
    terms,
    termsNote,
    facts,
  };
}

export interface Gauge {
  label: string;
  value: string;
  /** 0 … 1 for the bar, null when unmeasured. */
  fill: number | null;
}

export interface PathView {
  name: string;
  kind: string;
  up: boolean;
  gauges: Gauge[];
}

export const NOT_MEASURED = 'not measured yet';

/** How old a rate is, when the host said: the model moves an old cellular rate back towards its prior. */
function measuredAgo(bps: number | null, ageMS: number | undefined): string {
  if (bps === null || ageMS === undefined) return '';
  const s = Math.round(ageMS / 1000);
  if (s < 1) return ', measured now';
  return s < 120 ? `, measured ${s} s ago` : `, measured ${Math.round(s / 60)} min ago`;
}

function rate(bps: number | null): string {
  if (bps === null) return NOT_MEASURED;
  if (bps >= 1e9) return `${num(bps / 1e9)} Gbit/s`;
  if (bps >= 1e6) return `${num(bps / 1e6)} Mbit/s`;
  if (bps >= 1e3) return `${num(bps / 1e3)} kbit/s`;
  return `${num(bps, 0)} bit/s`;
}

/** Bars on a log scale so 1 Mbit/s and 1 Gbit/s both show; RTT is "fuller" when worse. */
function logFill(v: number | null, lo: number, hi: number): number | null {
  if (v === null || v <= 0) return v === null ? null : 0;
  return Math.max(0, Math.min(1, Math.log(v / lo) / Math.log(hi / lo)));
}

export function pathViews(host: StatusReply | null): PathView[] | null {
  if (host === null || host.paths === undefined) return null;
  return host.paths.map((p) => ({
    name: p.name,
    kind: p.kind,
    up: p.up,
    gauges: [
      { label: 'RTT', value: p.rtt_ms === null ? NOT_MEASURED : `${num(p.rtt_ms)} ms${p.rtt_source ? ` (${p.rtt_source})` : ''}`, fill: logFill(p.rtt_ms, 1, 1000) },
      { label: 'Down', value: rate(p.down_bps) + measuredAgo(p.down_bps, p.down_age_ms), fill: logFill(p.down_bps, 1e5, 1e9) },
      { label: 'Up', value: rate(p.up_bps), fill: logFill(p.up_bps, 1e5, 1e9) },
      { label: 'Loss', value: p.loss === null ? NOT_MEASURED : `${num(p.loss * 100, 2)} %`, fill: p.loss === null ? null : Math.min(1, p.loss * 10) },
    ],
  }));
}

export function rrcText(host: StatusReply | null, now = Date.now()): string {
  const r = host?.rrc;
  if (r === undefined) return NOT_MEASURED;
  const since = Math.max(0, now - r.since_ms);
  const text = `${r.state} on ${r.interface} (${r.tech.toUpperCase()}, ${r.source}) for ${seconds(since)}`;
  if (!r.spread || r.spread.length < 2) return text;
  // The host started after traffic it did not see: say so, and what it weighs.
  const likely = r.spread.map((s) => `${s.state} ${Math.round(s.p * 100)} %`).join(', ');
  return `${text}; unsure (traffic no host saw): ${likely}`;
}

export type Level = 'ok' | 'warn' | 'bad' | 'unknown';

export interface HealthItem {
  level: Level;
  title: string;
  detail: string;
  /** A command the user can run to fix it. */
  command?: string;
}

export const INSTALL_COMMAND = 'dist/mpsurf-host install --browser chromium';
export const UPDATE_COMMAND = 'npm run build:host && dist/mpsurf-host install --browser chromium';
export const MPTCPIZE_COMMAND = 'mptcpize run chromium';
export const HELPER_COMMAND = 'sudo systemctl enable --now mpsurf-actuator   # see packaging/systemd/';

/** What the popup and the options page say of the proxy, the caps and the kernel's endpoints. */
export function multipathItems(state: Pick<PopupState, 'host' | 'proxy' | 'multipath'>): HealthItem[] {
  const out: HealthItem[] = [];
  const g = state.multipath?.gate;
  if (g !== undefined) {
    out.push({ level: g.paused ? (g.why === 'user' || g.why === 'consent' ? 'unknown' : 'warn') : 'ok', title: g.paused ? 'Multipath paused' : 'Multipath on', detail: g.message });
    for (const w of g.warnings) out.push({ level: 'warn', title: 'Cellular cap', detail: w });
  }
  const p = state.proxy;
  const s = p?.status ?? null;
  if (p !== undefined && s !== null && s.configured) {
    if (p.fallback !== null) {
      out.push({ level: 'bad', title: 'Proxy down: sites load directly', detail: `${p.fallback.reason} (since ${new Date(p.fallback.since).toLocaleTimeString()}); MPSurf tries it again every 30 s.` });
    } else if (s.state === 'up' || s.state === 'unknown') {
      const via = p.route === 'all' ? 'every https site' : p.route === 'decided' ? `every https site but ${p.direct} known not to gain from multipath` : 'no site (routing off)';
      out.push({ level: s.state === 'up' ? 'ok' : 'unknown', title: `Proxy ${s.server ?? ''}${s.software ? ` (${s.software})` : ''}`, detail: `${s.state === 'up' ? 'answers' : 'not used yet'}; ${p.active ? `routes ${via}` : 'not in use now'}. ${s.detail}` });
    } else {
      out.push({ level: 'bad', title: 'Proxy not usable', detail: s.detail });
    }
    if (p.pacError !== null) out.push({ level: 'bad', title: 'Proxy setting', detail: p.pacError });
  } else if (p !== undefined && s !== null) {
    out.push({ level: 'unknown', title: 'No MPTCP proxy set', detail: 'Almost no website speaks Multipath TCP: set up your own proxy (README, “Use it on the real web”) and enter it in the settings.' });
  }
  const e = state.host?.mptcp_endpoints;
  if (e !== undefined && e.state !== 'ok') {
    out.push({ level: e.state === 'warn' ? 'warn' : 'unknown', title: 'Kernel subflow endpoints', detail: e.detail, ...(e.fix ? { command: e.fix } : {}) });
  } else if (e !== undefined && e.fix !== null) {
    out.push({ level: 'ok', title: 'Kernel subflow endpoints (ignored now)', detail: e.detail, command: e.fix });
  }
  const n = state.host?.network;
  if (n !== undefined && (n.metered === 'yes' || n.metered === 'guess_yes' || n.roaming === true)) {
    out.push({ level: n.roaming ? 'warn' : 'unknown', title: n.roaming ? 'Cellular link roaming' : 'Cellular link metered', detail: `${n.source}${n.detail ? `; ${n.detail}` : ''}` });
  }
  return out;
}

/** The popup's line on how this page reaches its site. */
export function routeText(state: Pick<PopupState, 'viaProxy' | 'proxy'>): string {
  if (state.viaProxy) return `via your MPTCP proxy ${state.proxy?.status?.server ?? ''}`.trim();
  if (state.proxy?.fallback) return 'direct (the proxy is down)';
  return 'direct';
}

export function healthItems(state: Pick<PopupState, 'status' | 'host' | 'hostError' | 'settings' | 'reports'>): HealthItem[] {
  const s = state.status;
  const out: HealthItem[] = [];
  switch (s.host) {
    case 'connected':
      out.push({ level: 'ok', title: `Host connected`, detail: s.detail });
      break;
    case 'missing':
      out.push({ level: 'bad', title: 'Host not installed', detail: 'MPSurf cannot decide without mpsurf-host. From the MPSurf directory, run:', command: INSTALL_COMMAND });
      break;
    case 'connecting':
      out.push({ level: 'unknown', title: 'Connecting to the host', detail: s.detail });
      break;
    default:
      out.push({ level: 'bad', title: s.host === 'exited' ? 'Host exited' : 'Host error', detail: `${s.detail}. MPSurf retries on its own; if this persists, reinstall:`, command: INSTALL_COMMAND });
  }
  if (s.host === 'connected') {
    const unsupported = [state.settings.prefsSync, state.reports].filter((x) => x.state === 'unsupported');
    if (unsupported.length > 0 || (state.host !== null && state.host.paths === undefined)) {
      out.push({
        level: 'warn',
        title: 'Host is older than this extension',
        detail: `${unsupported.length > 0 ? (unsupported[0]?.detail ?? '') : `mpsurf-host ${s.hostVersion ?? ''} does not measure paths yet; update the host`}. From the MPSurf directory, run:`,
        command: UPDATE_COMMAND,
      });
    } else if (state.settings.prefsSync.state === 'error') {
      out.push({ level: 'warn', title: 'Preferences not applied by the host', detail: state.settings.prefsSync.detail });
    }
    if (state.hostError !== null) out.push({ level: 'warn', title: 'Host status unavailable', detail: state.hostError });
  }
  const h = state.host;
  // What the host sees of the browser it runs under: mptcpize's LD_PRELOAD is inherited by the host.
  if (h?.browser_mptcp === undefined) {
    out.push({
      level: 'unknown',
      title: 'Browser sockets: MPTCP unknown',
      detail: 'The host does not report whether Chromium’s connections use MPTCP. Multipath needs Chromium started under mptcpize:',
      command: MPTCPIZE_COMMAND,
    });
  } else if (h.browser_mptcp.wrapped) {
    out.push({ level: 'ok', title: 'Browser sockets are MPTCP', detail: h.browser_mptcp.detail });
  } else {
    out.push({
      level: 'warn',
      title: 'Browser sockets are plain TCP',
      detail: `${h.browser_mptcp.detail}; no page can use a second path. Start Chromium with:`,
      command: MPTCPIZE_COMMAND,
    });
  }
  if (h?.actuator !== undefined) {
    const a = h.actuator;
    if (a.state === 'connected') {
      out.push({ level: 'ok', title: `Helper running (${a.backend ?? 'backend unknown'})`, detail: 'Decisions reach the kernel per connection.' });
    } else if (a.state === 'unavailable') {
      out.push({ level: 'bad', title: 'Helper not reachable', detail: `${a.detail}. Start it with:`, command: HELPER_COMMAND });
    } else {
      out.push({ level: 'warn', title: 'Helper not configured', detail: `${a.detail}. To let decisions reach the kernel, install and start the helper:`, command: HELPER_COMMAND });
    }
  }
  return out;
}

export interface Bar {
  /** Bar height 0 … 1 of the chart. */
  h: number;
  tone: Tone;
  label: string;
}

/** The recent loads as bars of page-load time, coloured by what the page got. */
export function loadBars(loads: PopupState['loads']): { bars: Bar[]; maxMs: number } {
  const maxMs = Math.max(100, ...loads.map((l) => l.plt_ms));
  return {
    maxMs,
    bars: loads.map((l) => ({
      h: l.plt_ms / maxMs,
      tone: l.multipath === null ? 'off' : l.multipath ? 'mp' : 'sp',
      label: `${l.origin}: ${num(l.plt_ms, 0)} ms, ${bytes(l.transfer_bytes)}${l.protocol ? `, ${l.protocol}` : ''}, ${l.multipath === null ? 'no decision' : l.multipath ? 'multipath' : 'single path'}`,
    })),
  };
}

/** The options page's "usage so far" line: cellular bytes the host measured this billing cycle. */
export function usageText(host: StatusReply | null, why: string): string {
  if (host === null) return `not measured yet (no host status: ${why})`;
  const u = host.usage;
  if (u === undefined) return `not measured yet (mpsurf-host ${host.version} does not report cellular usage)`;
  const since = new Date(u.since_ms).toISOString().slice(0, 10);
  const iface = u.interface === '' ? 'no cellular interface seen yet' : `on ${u.interface}`;
  const quota = u.quota_bytes === null ? '' : ` of ${bytes(u.quota_bytes)} (${num((100 * u.used_bytes) / Math.max(u.quota_bytes, 1), 0)} %)`;
  return `${bytes(u.used_bytes)}${quota} since ${since}, ${iface}`;
}
