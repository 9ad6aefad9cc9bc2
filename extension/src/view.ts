// Turns the service worker's state into the words the popup, the options page and the first-run page show. Kept
// apart from the pages so it is testable; the pages write these strings with textContent only.
//
// Words for people first: what MPSurf does for this page and why, in one line each, without the model's symbols
// (θ1, θ2, T, RRC) or the header's syntax; those stay behind the popup's "Details", under plain labels.

import type { HostStatus } from './host';
import type { PopupState } from './messages';
import type { MultipathView } from './multipath';
import type { DownloadRecord } from './downloads';
import type { TabRecord } from './pages';
import type { Term } from './protocol/decide';
import type { InstallKind, PathInfo, StatusReply } from './protocol/status';
import { limitText, SettingsError, type Gate, type Plan } from './caps';
import { PrefsError } from './prefs';
import { HeaderError, parseHeader } from './header';

export type Row = [label: string, value: string];

export function bytes(n: number | null): string {
  if (n === null) return 'no cap';
  if (n >= 1_000_000_000) return `${num(n / 1_000_000_000, 2)} GB`;
  if (n >= 1_000_000) return `${num(n / 1_000_000)} MB`;
  if (n >= 1_000) return `${num(n / 1_000)} kB`;
  return `${n} B`;
}

function seconds(ms: number | null): string {
  return ms === null ? '–' : `${num(ms / 1000)} s`;
}

function num(v: number, digits = 1): string {
  return v.toLocaleString('en', { maximumFractionDigits: digits });
}

/** θ1 for people: null is never (no cellular path), 0 is from the first byte. */
export function theta1Text(t: number | null): string {
  if (t === null) return 'never';
  return t === 0 ? 'from the first byte' : `after ${bytes(t)}`;
}

// -------------------------------------------------------------------------------------------------------------
// The state everywhere agrees on: on, paused (and why) or off (no host).

export type Level = 'on' | 'paused' | 'off';

export interface Overall {
  level: Level;
  /** A few words: "Multipath on", "Paused", "Off". */
  label: string;
  /** One sentence. */
  detail: string;
}

const HOST_WORDS: Record<HostStatus['host'], string> = {
  connected: 'running',
  connecting: 'starting',
  missing: 'not installed',
  exited: 'stopped',
  error: 'failing',
};

/**
 * What MPSurf does now, the same words in the popup, the options page and the first-run page: off without a host
 * (whatever the user's settings say, nothing is multipath then), paused with the gate's reason, else on.
 */
export function overall(status: HostStatus, mp: Pick<MultipathView, 'gate'> | undefined): Overall {
  if (status.host !== 'connected') {
    const detail =
      status.host === 'missing'
        ? 'MPSurf’s host program (mpsurf-host) is not installed: pages load as usual, over one path, and no site is told anything.'
        : status.host === 'connecting'
          ? 'MPSurf’s host program is starting.'
          : `MPSurf’s host program is ${HOST_WORDS[status.host]} (${status.detail}): pages load over one path until it is back.`;
    return { level: 'off', label: status.host === 'connecting' ? 'Starting' : 'Off', detail };
  }
  const g = mp?.gate;
  if (g === undefined) return { level: 'on', label: 'On', detail: 'Multipath is on.' };
  if (g.paused) return { level: 'paused', label: g.why === 'consent' ? 'Off' : 'Paused', detail: g.message };
  return { level: 'on', label: 'On', detail: g.message };
}

// -------------------------------------------------------------------------------------------------------------
// The popup's decision: what this page uses, and why, in one line each.

export type Tone = 'mp' | 'sp' | 'off';

export interface Decision {
  tone: Tone;
  /** "Using WiFi only", "Using WiFi + cellular", "MPSurf is off". */
  title: string;
  /** Why, in one line. */
  why: string;
  /** The page's site, and how it is reached, when there is a page. */
  site: string | null;
  /** What the person can do about it here: agree (first-run page), resume, or nothing. */
  action: 'consent' | 'resume' | null;
}

const KIND_WORDS: Record<PathInfo['kind'], string> = { wifi: 'WiFi', ethernet: 'wired', cellular: 'cellular', other: 'your network' };

/** The first path that is not cellular, as a person calls it: "WiFi" (the usual case, and the guess when unknown). */
export function primaryName(host: StatusReply | null): string {
  const p = host?.paths?.find((x) => x.kind !== 'cellular' && x.up) ?? host?.paths?.find((x) => x.kind !== 'cellular');
  return p === undefined ? 'WiFi' : KIND_WORDS[p.kind];
}

const PAUSE_WHY: Record<Exclude<Gate['why'], 'none'>, string> = {
  consent: 'MPSurf waits for you to agree on its first-run page.',
  user: 'You paused multipath.',
  cap_daily: 'Today’s data limit is used up.',
  cap_monthly: 'This month’s data limit is used up.',
  roaming: 'The cellular link is roaming.',
};

function term(page: TabRecord, name: string): number | null {
  return page.terms?.find((t) => t.name === name)?.value ?? null;
}

function about(n: number): string {
  return `about ${bytes(Math.round(n))}`;
}

/** Why the host chose one path for this page, from what the decision says (its terms, inputs and rule). */
function singleWhy(page: TabRecord): string {
  const inputs = page.inputs ?? {};
  const paused = inputs.paused;
  if (typeof paused === 'string' && paused in PAUSE_WHY) return PAUSE_WHY[paused as keyof typeof PAUSE_WHY];
  if (page.reason.startsWith('your site rule')) return 'Your rule for this site says never.';
  const rule = page.terms?.length === 1 ? page.terms[0] : undefined;
  if (rule?.name === 'protocol') return 'This site uses HTTP/3 (QUIC), which multipath TCP cannot carry.';
  if (rule?.name === 'battery_percent') return `Your battery is low (${num(rule.value ?? 0, 0)} %), below your limit for multipath.`;
  if (rule?.name === 'theta2') return 'This month’s cellular data is used up.';
  if (rule?.name === 'secondary') return 'No cellular connection is up.';
  const size = page.size;
  const median = size?.known && size.median !== null ? size.median : null;
  if (page.theta1 !== null) {
    const past = `cellular joins only if it passes ${bytes(page.theta1)}`;
    if (median !== null) return `This page is small (${about(median)}): ${past}.`;
    return `MPSurf has not seen this page yet: ${past}.`;
  }
  const saved = term(page, 'time_saved');
  const cell = term(page, 'cellular_bytes');
  if (saved !== null && cell !== null && saved > 0) {
    return `Both would save only ${num(saved, 2)} s here, not worth ${about(cell)} of cellular data and the battery.`;
  }
  return 'Cellular would not make this page faster.';
}

/** Why the host chose both paths: what it expects to save and what it costs. */
function multiWhy(page: TabRecord): string {
  if (page.reason.startsWith('your site rule')) return 'Your rule for this site says always.';
  const saved = term(page, 'time_saved');
  const cell = term(page, 'cellular_bytes');
  const gain = saved !== null && cell !== null ? `saves about ${num(saved, 1)} s, costs ${about(cell)}` : null;
  if (page.reason.startsWith('multipath to learn')) return `Trying both to learn whether they help this site${gain ? ` (expected: ${gain})` : ''}.`;
  const when = page.theta1 !== null && page.theta1 > 0 ? `once the page passes ${bytes(page.theta1)}` : '';
  if (gain === null) return when ? `Cellular joins ${when}.` : 'This page is large enough to gain from both.';
  return when ? `${cap(gain)}, ${when}.` : `${cap(gain)}.`;
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** The popup's first lines: what this tab's page uses, in words, and why. */
export function decisionWords(state: Pick<PopupState, 'status' | 'page' | 'host' | 'multipath' | 'viaProxy' | 'proxy'>): Decision {
  const { status, page } = state;
  const wifi = primaryName(state.host);
  const one = `Using ${wifi} only`;
  const site = page === null ? null : siteText(page.origin, state);
  const o = overall(status, state.multipath);
  if (o.level === 'off') return { tone: 'off', title: 'MPSurf is off', why: o.detail, site, action: null };
  const g = state.multipath?.gate;
  if (g?.paused && g.why !== 'none') {
    const why = `${PAUSE_WHY[g.why]}${g.why === 'consent' ? ' Until then every site uses one path.' : ''}`;
    return { tone: 'off', title: one, why, site, action: g.why === 'consent' ? 'consent' : g.why === 'user' ? 'resume' : null };
  }
  if (page === null) {
    return { tone: 'off', title: 'Nothing to decide here', why: 'MPSurf decides for web pages (http and https) only.', site: null, action: null };
  }
  if (page.source === 'none') return { tone: 'off', title: one, why: 'MPSurf’s host was not running when this page opened.', site, action: null };
  if (page.source === 'fallback') return { tone: 'sp', title: one, why: 'MPSurf’s host did not answer in time; one path is the safe choice.', site, action: null };
  if (page.stale) {
    return { tone: 'off', title: 'Decision out of date', why: 'Your network changed since this page opened; reload it for a new decision.', site, action: null };
  }
  if (page.multipath) return { tone: 'mp', title: `Using ${wifi} + cellular`, why: multiWhy(page), site, action: null };
  return { tone: 'sp', title: one, why: singleWhy(page), site, action: null };
}

function siteText(origin: string, state: Pick<PopupState, 'viaProxy' | 'proxy'>): string {
  let host = origin;
  try {
    host = new URL(origin).host;
  } catch {
    // Not a URL: shown as it is.
  }
  if (state.viaProxy) return `${host} · through your proxy`;
  if (state.proxy?.fallback) return `${host} · direct (your proxy is down)`;
  return host;
}

// -------------------------------------------------------------------------------------------------------------
// "Details": the numbers behind the decision, with plain labels.

/** What the Multipath-Policy header tells sites, in words. */
export function headerWords(value: string): string {
  try {
    const h = parseHeader(value);
    const what = !h.mp ? 'no multipath' : h.t1 === 0 ? 'multipath from the start' : `multipath after ${h.t1 >= 1024 ? `${num(h.t1 / 1024)} MiB` : `${h.t1} KiB`}`;
    const capText = h.t2 === null ? '' : `, at most ${h.t2 >= 1024 ? `${num(h.t2 / 1024)} MiB` : `${h.t2} KiB`} over cellular`;
    return `${what}${capText}, patience ${h.dl} s`;
  } catch (e) {
    if (e instanceof HeaderError) return 'not readable';
    throw e;
  }
}

const BASIS_WORDS: Record<string, string> = {
  measured: 'your connections, as measured',
  prior: 'typical connections (yours are not measured yet)',
  rule: 'a rule (see why above)',
};

const PROTOCOL_WORDS: Record<string, string> = { h2: 'HTTP/2', 'http/1.1': 'HTTP/1.1', h3: 'HTTP/3 (QUIC)', unknown: 'not known yet (HTTP/2 assumed)' };

/** The numbers behind the popup's decision, under labels a person reads; the symbols stay in the labels' titles. */
export function detailRows(state: Pick<PopupState, 'page' | 'host'>): Row[] {
  const page = state.page;
  const rows: Row[] = [];
  if (page !== null && page.source !== 'none') {
    rows.push(['Cellular joins', theta1Text(page.theta1)]);
    rows.push(['Cellular cap per page', page.theta2 === null ? 'none' : bytes(page.theta2)]);
    if (page.deadline_ms !== null) rows.push(['Your patience', seconds(page.deadline_ms)]);
    if (page.size) {
      rows.push([
        'Page size',
        page.size.known && page.size.median !== null
          ? `${bytes(page.size.median)} typically (${page.size.samples} load${page.size.samples === 1 ? '' : 's'})`
          : 'not seen yet',
      ]);
    }
    const sp = term(page, 'plt_sp');
    const mp = term(page, 'plt_mp');
    if (sp !== null && mp !== null) rows.push(['Expected load time', `${num(sp, 2)} s on one path, ${num(mp, 2)} s on both`]);
    const cell = term(page, 'cellular_bytes');
    if (cell !== null && page.multipath) rows.push(['Cellular data', about(cell)]);
    const j = term(page, 'cellular_energy');
    if (j !== null && page.multipath) rows.push(['Radio energy', `about ${num(j, 1)} J`]);
    if (page.protocol) rows.push(['Protocol', PROTOCOL_WORDS[page.protocol] ?? page.protocol]);
    if (page.basis) rows.push(['Numbers from', BASIS_WORDS[page.basis] ?? page.basis]);
    if (page.model) rows.push(['Model', `${page.model.id} v${page.model.version}`]);
    if (page.header !== null) rows.push(['Sites are told', headerWords(page.header)]);
  }
  rows.push(['Cellular radio', radioText(state.host)]);
  return rows;
}

const TERM_LABELS: Record<string, string> = {
  size: 'Typical page size',
  p_over_theta1: 'Chance the page reaches the join size',
  expected_utility: 'Expected gain (time, net of costs)',
  time_sp: 'Transfer, one path',
  time_mp: 'Transfer, both paths',
  plt_sp: 'Load time, one path',
  plt_mp: 'Load time, both paths',
  time_saved: 'Time saved',
  late_saved: 'Time saved past your patience',
  cellular_bytes: 'Cellular data',
  cellular_energy: 'Cellular radio energy',
  wifi_energy: 'WiFi energy (negative: saved)',
  primary_rate: 'WiFi speed',
  primary_rtt: 'WiFi delay',
  secondary_rate: 'Cellular speed',
  secondary_rtt: 'Cellular delay',
  prefer_cellular: 'WiFi as backup (1: yes)',
  learned_mp: 'Learned correction',
  weight_time: 'Weight of a second',
  weight_late: 'Weight of a late second',
  weight_energy: 'Weight of a joule',
  weight_cellular: 'Weight of a cellular MB',
  protocol: 'Protocol',
  battery_percent: 'Battery',
  theta2: 'Cellular data left',
  secondary: 'Cellular connection',
};

/** A term's value with its unit, scaled for reading (bytes and joules get prefixes). */
export function termValue(value: number | null, unit: string): string {
  if (value === null) return 'unknown';
  if (unit === 'B' || unit === 'bytes') return bytes(Math.round(value));
  if (unit === 'bit/s') return rate(value);
  if (unit === 'ms' && Math.abs(value) >= 1000) return `${num(value / 1000, 2)} s`;
  if (unit === 'J' && Math.abs(value) < 1) return `${num(value * 1000)} mJ`;
  return unit === '' ? num(value, 3) : `${num(value, 2)} ${unit}`;
}

/** Every term the model weighed, for the curious: plain label, value; the model's own note goes in the title. */
export function termRows(terms: Term[] | undefined): { label: string; value: string; note: string }[] {
  return (terms ?? []).map((t) => ({ label: TERM_LABELS[t.name] ?? t.name.replace(/_/g, ' '), value: termValue(t.value, t.unit), note: t.note }));
}

// -------------------------------------------------------------------------------------------------------------
// Data used against the limits: the bars of the popup and the options page.

export interface UsageBar {
  label: string;
  /** "12 MB of 100 MB", or why there is no number. */
  text: string;
  /** 0 … 1 of the limit; null without a limit or a measurement. */
  fill: number | null;
  level: 'ok' | 'warn' | 'reached' | 'none';
}

/** Today's and this month's cellular data against the daily limit and the monthly plan. */
export function usageBars(host: StatusReply | null, mp: Pick<MultipathView, 'settings' | 'gate'> | undefined, plan: Plan): UsageBar[] {
  const u = host?.usage;
  const bar = (label: string, used: number | null, limit: number | null, renew: string): UsageBar => {
    if (used === null) {
      return { label, text: limit === null ? 'not measured yet' : `not measured yet, limit ${limitText(limit)}`, fill: null, level: 'none' };
    }
    if (limit === null) return { label, text: `${bytes(used)}, no limit`, fill: null, level: 'none' };
    const f = used / limit;
    const level = f >= 1 ? 'reached' : f >= 0.75 ? 'warn' : 'ok';
    return { label, text: `${bytes(used)} of ${limitText(limit)}${level === 'reached' ? `: used up until ${renew}` : ''}`, fill: Math.min(1, f), level };
  };
  return [
    bar('Cellular today', u?.today_bytes ?? null, mp?.settings.daily_cap_bytes ?? null, 'midnight'),
    bar('This month', u === undefined ? null : u.used_bytes, plan.monthly_bytes, `day ${plan.billing_day}`),
  ];
}

// -------------------------------------------------------------------------------------------------------------
// Paths and the radio.

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

/** Bars on a log scale so 1 Mbit/s and 1 Gbit/s both show; delay is "fuller" when worse. */
function logFill(v: number | null, lo: number, hi: number): number | null {
  if (v === null || v <= 0) return v === null ? null : 0;
  return Math.max(0, Math.min(1, Math.log(v / lo) / Math.log(hi / lo)));
}

export function pathViews(host: StatusReply | null): PathView[] | null {
  if (host === null || host.paths === undefined) return null;
  return host.paths.map((p) => ({
    name: p.name,
    kind: p.kind === 'wifi' ? 'WiFi' : p.kind === 'cellular' ? 'Cellular' : p.kind === 'ethernet' ? 'Wired' : 'Other',
    up: p.up,
    gauges: [
      { label: 'Delay', value: p.rtt_ms === null ? NOT_MEASURED : `${num(p.rtt_ms)} ms`, fill: logFill(p.rtt_ms, 1, 1000) },
      { label: 'Down', value: rate(p.down_bps) + measuredAgo(p.down_bps, p.down_age_ms) + heldUnderLoss(p), fill: logFill(p.down_bps, 1e5, 1e9) },
      { label: 'Up', value: rate(p.up_bps), fill: logFill(p.up_bps, 1e5, 1e9) },
      { label: 'Loss', value: p.loss === null ? NOT_MEASURED : `${num(p.loss * 100, 2)} %`, fill: p.loss === null ? null : Math.min(1, p.loss * 10) },
    ],
  }));
}

/** The rate the last long transfer held under the path's losses, where it is below the fastest one. */
function heldUnderLoss(p: PathInfo): string {
  const held = p.down_sustained_bps;
  if (held === undefined || p.down_bps === null || held >= p.down_bps) return '';
  return `; ${rate(held)} held under loss`;
}

/** A radio state as a person would say it: the LTE and 3G models' state names (policy-models/power-*.json). */
function radioWord(state: string): string {
  if (state === 'idle') return 'asleep';
  if (/promo/.test(state)) return 'waking up';
  if (state === 'continuous' || state === 'dch') return 'busy';
  return 'awake, falling asleep';
}

/** The cellular radio's state ("RRC state") in words: asleep costs a wake-up, awake does not. */
export function radioText(host: StatusReply | null, now = Date.now()): string {
  const r = host?.rrc;
  if (r === undefined) return NOT_MEASURED;
  const since = Math.max(0, now - r.since_ms);
  const text = `${radioWord(r.state)} for ${seconds(since)} (${r.tech.toUpperCase()}, ${r.state})`;
  if (!r.spread || r.spread.length < 2) return text;
  // The host started after traffic it did not see: say so, and what it weighs.
  const likely = r.spread.map((s) => `${radioWord(s.state)} ${Math.round(s.p * 100)} %`).join(', ');
  return `not sure (traffic it did not see): ${likely}`;
}

// -------------------------------------------------------------------------------------------------------------
// Health: what is missing for multipath to happen, each with the one command that fixes it.

export type HealthLevel = 'ok' | 'warn' | 'bad' | 'unknown';

export interface HealthItem {
  level: HealthLevel;
  title: string;
  detail: string;
  /** A command the user can run to fix it. */
  command?: string;
}

type Browser = NonNullable<PopupState['browser']>;
/** The browser's name as people write it, and the command that starts it (Debian's firefox-esr installs `firefox`). */
const BROWSERS: Record<Browser, { name: string; command: string }> = {
  chromium: { name: 'Chromium', command: 'chromium' },
  firefox: { name: 'Firefox', command: 'firefox' },
};

/** Run from the MPSurf directory: registers the host with the browser's default profile. */
export const INSTALL_COMMAND = 'dist/mpsurf-host install --browser chromium';

/**
 * The install command that reaches this browser: with its --user-data-dir when it was started with one (the host
 * reported it, and the service worker remembers it for when the host is gone), since such a browser reads host
 * manifests from that directory only. `update` rebuilds the host first. Firefox reads them per user, whatever its
 * profile.
 */
export function installCommand(profileDir: string | null | undefined, update = false, browser: Browser = 'chromium'): string {
  const where = profileDir && browser === 'chromium' ? `--user-data-dir ${shellWord(profileDir)}` : `--browser ${browser}`;
  return `${update ? 'npm run build:host && ' : ''}dist/mpsurf-host install ${where}`;
}

/** A word as a POSIX shell reads it back: quoted when it holds anything but plain path characters. */
function shellWord(s: string): string {
  return /^[\w./+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
/** Debian's mptcpize makes a program's TCP sockets MPTCP; the browser must be started under it. */
export const MPTCPIZE_COMMAND = 'mptcpize run chromium';
/** The same for the browser the extension runs in (Firefox: `mptcpize run firefox`). */
export const mptcpizeCommand = (b: Browser = 'chromium'): string => (b === 'chromium' ? MPTCPIZE_COMMAND : `mptcpize run ${BROWSERS[b].command}`);
/** The mpsurf package's launcher (packaging/deb/mpsurf-browser): the browser under mptcpize, saying so if it cannot. */
export const launcherCommand = (b: Browser = 'chromium'): string => `mpsurf-browser ${b}`;
/** Installs and starts the privileged helper (scripts/setup.sh writes its unit; systemd starts it). */
export const HELPER_INSTALL_COMMAND = 'sudo MPSURF_ENABLE_ACTUATOR=1 bash scripts/setup.sh';
/** Restarts the helper whose unit is installed (the package's, or the one scripts/setup.sh writes). */
export const HELPER_START_COMMAND = 'sudo systemctl restart mpsurf-actuator';
/**
 * Installs, upgrades or repairs a packaged MPSurf: the mpsurf package (npm run package → dist/pkg/) puts mpsurf-host
 * in /usr/bin, its manifests in each browser's system directory (which every profile reads) and the helper's unit.
 */
export const PACKAGE_INSTALL_COMMAND = 'sudo apt install ./mpsurf_*.deb';
/** Says what works and what is missing on this machine (the package runs it after installing). */
export const DOCTOR_COMMAND = 'mpsurf-host doctor';

/**
 * How the host was installed, as it last said (the status reply's `install`, remembered for when it is gone); a
 * host that never said is taken as a source build, whose commands an older host needs.
 */
function installKind(state: Pick<PopupState, 'host' | 'install'>): InstallKind {
  return state.host?.install ?? state.install ?? 'source';
}

/** What the popup and the options page say of the proxy and the kernel's endpoints. */
export function multipathItems(state: Pick<PopupState, 'host' | 'proxy' | 'multipath'>): HealthItem[] {
  const out: HealthItem[] = [];
  const g = state.multipath?.gate;
  for (const w of g?.warnings ?? []) out.push({ level: 'warn', title: 'Data limit', detail: w });
  const p = state.proxy;
  const s = p?.status ?? null;
  if (p !== undefined && s !== null && s.configured) {
    if (p.fallback !== null) {
      out.push({ level: 'bad', title: 'Proxy down: sites load directly', detail: `${p.fallback.reason} (since ${new Date(p.fallback.since).toLocaleTimeString()}); MPSurf tries it again every 30 s.` });
    } else if (s.state === 'up' || s.state === 'unknown') {
      const via = p.route === 'all' ? 'every https site' : p.route === 'decided' ? `every https site but ${p.direct} known not to gain from multipath` : 'no site (routing off)';
      out.push({ level: s.state === 'up' ? 'ok' : 'unknown', title: `Proxy ${s.server ?? ''}${s.software ? ` (${s.software})` : ''}`, detail: `${s.state === 'up' ? 'answers' : 'not used yet'}; ${p.active ? `carries ${via}` : 'not in use now'}. ${s.detail}` });
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

/** The cellular link's cost as the OS reports it, in words. */
export function networkText(host: StatusReply | null): string {
  const n = host?.network;
  if (n === undefined) return 'not reported by this host';
  const metered = { yes: 'metered', guess_yes: 'probably metered', no: 'not metered', guess_no: 'probably not metered', unknown: 'metered: unknown' }[n.metered];
  const roaming = n.roaming === null ? 'roaming: unknown' : n.roaming ? 'roaming' : 'not roaming';
  // The host's detail ends by saying what is unknown, which the words before it already say.
  const why = (n.detail || n.source).replace(/: metered and roaming unknown$/, '');
  if (n.metered === 'unknown' && n.roaming === null) return `not known (${why})`;
  return `${metered}, ${roaming}${n.metered === 'unknown' || n.roaming === null ? ` (${why})` : ''}`;
}

export function healthItems(state: Pick<PopupState, 'status' | 'host' | 'hostError' | 'settings' | 'reports' | 'proxy' | 'profileDir' | 'browser' | 'install'>): HealthItem[] {
  const s = state.status;
  const browser = state.browser ?? 'chromium';
  const name = BROWSERS[browser].name;
  const packaged = installKind(state) === 'package';
  const MPTCPIZE_COMMAND = packaged ? launcherCommand(browser) : mptcpizeCommand(browser);
  const install = packaged ? PACKAGE_INSTALL_COMMAND : installCommand(state.host?.browser_profile?.user_data_dir ?? state.profileDir, false, browser);
  const out: HealthItem[] = [];
  switch (s.host) {
    case 'connected':
      out.push({ level: 'ok', title: 'Host running', detail: s.detail });
      break;
    case 'missing':
      out.push({
        level: 'bad',
        title: 'Host not installed',
        detail: packaged
          ? 'MPSurf cannot decide without mpsurf-host, which the mpsurf package installs. From the directory that holds the package, run:'
          : state.profileDir
          ? 'MPSurf cannot decide without mpsurf-host. From the MPSurf directory, run:'
          : 'MPSurf cannot decide without mpsurf-host. From the MPSurf directory, run (if you start the browser with --user-data-dir DIR, add --user-data-dir DIR; the command names any running browser that does):',
        command: install,
      });
      break;
    case 'connecting':
      out.push({ level: 'unknown', title: 'Starting the host', detail: s.detail });
      break;
    default:
      out.push({ level: 'bad', title: s.host === 'exited' ? 'Host stopped' : 'Host failing', detail: `${s.detail}. MPSurf retries on its own; if this persists, reinstall:`, command: install });
  }
  if (s.host === 'connected') {
    // A host without paths in its status may only have measuring turned off (MPSURF_NO_MEASURE): requests it
    // refuses as unknown are what tell an older host.
    const unsupported = [state.settings.prefsSync, state.reports].filter((x) => x.state === 'unsupported');
    if (unsupported.length > 0) {
      out.push({
        level: 'warn',
        title: 'Host is older than this extension',
        detail: `${unsupported[0]?.detail ?? ''}. ${packaged ? 'Install the newer mpsurf package: from the directory that holds it, run:' : 'From the MPSurf directory, run:'}`,
        command: packaged ? PACKAGE_INSTALL_COMMAND : installCommand(state.host?.browser_profile?.user_data_dir ?? state.profileDir, true, browser),
      });
    } else if (state.settings.prefsSync.state === 'error') {
      out.push({ level: 'warn', title: 'Settings not applied by the host', detail: state.settings.prefsSync.detail });
    }
    if (state.hostError !== null) out.push({ level: 'warn', title: 'Host status unavailable', detail: state.hostError });
  }
  const h = state.host;
  // Pages through the user's proxy need no MPTCP in the browser: the host's relay speaks it (the host says so too:
  // browser_mptcp.way "relay").
  const proxied = (state.proxy?.status?.configured === true && state.proxy.route !== 'off') || h?.browser_mptcp?.way === 'relay';
  // What the host sees of the browser it runs under: mptcpize's LD_PRELOAD is inherited by the host.
  if (h?.browser_mptcp === undefined) {
    if (s.host === 'connected') {
      out.push({
        level: 'unknown',
        title: 'Browser connections: MPTCP unknown',
        detail: `The host does not say whether ${name}’s connections use MPTCP. Multipath to a site needs ${name} started under mptcpize:`,
        command: MPTCPIZE_COMMAND,
      });
    }
  } else if (h.browser_mptcp.wrapped) {
    out.push({ level: 'ok', title: 'Browser connections are MPTCP', detail: h.browser_mptcp.detail });
  } else {
    out.push({
      level: proxied ? 'unknown' : 'warn',
      title: 'Browser connections are plain TCP',
      detail: proxied
        ? `Pages through your proxy still get multipath (the host’s relay speaks MPTCP); pages loaded directly do not. For those, start ${name} with:`
        : `${h.browser_mptcp.detail}: no page can use a second path. Start ${name} with:`,
      command: MPTCPIZE_COMMAND,
    });
  }
  if (h?.actuator !== undefined) {
    const a = h.actuator;
    if (a.state === 'connected') {
      out.push({ level: 'ok', title: `Helper running (${a.backend ?? 'backend unknown'})`, detail: 'Decisions reach the kernel per connection.' });
    } else if (a.state === 'unavailable') {
      out.push({ level: 'bad', title: 'Helper not reachable', detail: `${a.detail}. Restart it with:`, command: HELPER_START_COMMAND });
    } else if (packaged) {
      // The package installs and enables the helper; the host not being told of it is the machine's to explain
      // (no systemd, a user outside the mpsurf group), which doctor says.
      out.push({
        level: 'warn',
        title: 'Helper not set up',
        detail: 'The mpsurf package installs the privileged helper (mpsurf-actuator), but this host does not use it: decisions go to sites in the header but do not change the kernel’s connections. See what is missing with:',
        command: DOCTOR_COMMAND,
      });
    } else {
      out.push({
        level: 'warn',
        title: 'Helper not installed',
        detail: 'Without the privileged helper (mpsurf-actuator), decisions go to sites in the header but do not change the kernel’s connections. From the MPSurf directory, install and start it with:',
        command: HELPER_INSTALL_COMMAND,
      });
    }
  }
  return out;
}

// -------------------------------------------------------------------------------------------------------------
// Downloads.

/** What the downloads part of the popup and the options page shows (downloads-ui.ts). */
export interface DownloadsView {
  enabled: boolean;
  /** Whether the host runs (no download can be handed over without it). */
  host: boolean;
  /** The smallest download offered (the network policy's θ1); null: none now. */
  threshold: number | null;
  /** Why no download is handed over now (multipath paused, not yet agreed to, a limit reached); null: they are. */
  paused: string | null;
  downloads: DownloadRecord[];
}

/** What happens to a new download now, in words: handed over from what size, or why not. */
export function downloadsNote(v: Pick<DownloadsView, 'enabled' | 'host' | 'threshold' | 'paused'>): string {
  if (!v.host) return 'MPSurf’s host is not running: every download stays in the browser.';
  if (v.paused !== null) return `${v.paused} Every download stays in the browser until then.`;
  if (!v.enabled) return 'Off: every download stays in the browser.';
  if (v.threshold === null) return 'No download gains from both links on this network now: they stay in the browser.';
  return `Downloads of ${num(v.threshold / 1e6)} MB or more are offered to MPSurf, which takes those that gain from both links.`;
}

// -------------------------------------------------------------------------------------------------------------
// Recent loads.

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
      label: `${l.origin}: ${num(l.plt_ms, 0)} ms, ${bytes(l.transfer_bytes)}${l.protocol ? `, ${l.protocol}` : ''}, ${l.multipath === null ? 'no decision' : l.multipath ? 'both paths' : 'one path'}`,
    })),
  };
}

// -------------------------------------------------------------------------------------------------------------
// Errors in the words of the page that shows the field.

/** How a settings page shows a stored field: its label, its unit, and how many stored units make one shown. */
const FIELDS: Record<string, { label: string; unit: string; scale: number }> = {
  deadline_ms: { label: 'Your patience per page', unit: 'seconds', scale: 1000 },
  battery_floor_percent: { label: 'The battery level', unit: '%', scale: 1 },
  quota_bytes: { label: 'The monthly data in your plan', unit: 'GB', scale: 1e9 },
  billing_day: { label: 'The day your plan renews', unit: '', scale: 1 },
  daily_cap_bytes: { label: 'The daily limit', unit: 'MB', scale: 1e6 },
};

/**
 * An error from the preferences or the multipath settings, said as the page that shows the field says it: its
 * label, the unit it is entered in, no stored field name ("Your patience per page: enter 1 to 60 seconds", not
 * "deadline_ms: 0 is outside 1000 … 60000").
 */
export function plainError(e: unknown): string {
  if (e instanceof PrefsError || e instanceof SettingsError) {
    const f = FIELDS[e.field];
    if (f === undefined) return cap(e.plain);
    if (e instanceof PrefsError && e.range !== undefined) {
      const hi = e.range.max >= Number.MAX_SAFE_INTEGER ? null : e.range.max / f.scale;
      const range = hi === null ? `${e.range.min / f.scale} or more` : `${num(e.range.min / f.scale, 3)} to ${num(hi, 3)}`;
      return `${f.label}: enter ${range}${f.unit ? ` ${f.unit}` : ''}.`;
    }
    return `${f.label}: ${e.plain.replace(/^at least 1 MB, or none$/, 'enter at least 1 MB, or leave it empty for none')}.`;
  }
  return e instanceof Error ? e.message : String(e);
}
