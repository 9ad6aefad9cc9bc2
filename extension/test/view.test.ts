import { describe, expect, it } from 'vitest';
import type { HostStatus } from '../src/host';
import type { TabRecord } from '../src/pages';
import type { StatusReply } from '../src/protocol/status';
import {
  HELPER_INSTALL_COMMAND,
  HELPER_START_COMMAND,
  INSTALL_COMMAND,
  PACKAGE_INSTALL_COMMAND,
  DOCTOR_COMMAND,
  MPTCPIZE_COMMAND,
  installCommand,
  NOT_MEASURED,
  bytes,
  decisionWords,
  detailRows,
  headerWords,
  healthItems,
  overall,
  pathViews,
  plainError,
  radioText,
  termRows,
  usageBars,
} from '../src/view';
import { ProtocolError } from '../src/protocol/envelope';
import { parseStatusReply } from '../src/protocol/status';
import { DEFAULT_MULTIPATH, gate, normaliseMultipath, type MultipathSettings } from '../src/caps';
import { normalisePrefs } from '../src/prefs';
import type { MultipathView } from '../src/multipath';

const status: HostStatus = {
  host: 'connected',
  detail: 'mpsurf-host 0.1.0, protocol 1',
  since: 1_000,
  hostVersion: '0.1.0',
  policy: {
    revision: 2,
    multipath: true,
    theta1: 200_000,
    theta2: 5_000_000,
    deadline_ms: 3000,
    reason: 'both paths up',
    model: { id: 'baseline-seed001', version: 1 },
  },
  lastDecisionAt: 0,
  reconnects: 1,
};

const page: TabRecord = {
  tab: 1,
  nav: '1-1',
  origin: 'https://example.com',
  source: 'host',
  stale: false,
  multipath: true,
  theta1: 200_000,
  theta2: null,
  deadline_ms: 3000,
  reason: 'page over θ1',
  model: { id: 'baseline-seed001', version: 1 },
  inputs: {},
  header: 'v=1, mp, t1=256, dl=3',
  navStartedAt: 10,
  decidedAt: 11.5,
  ruleInstalledAt: 12.25,
  completedAt: null,
};

// Symbols and syntax a person should not meet on the popup's first lines.
const JARGON = /θ|\bT\b|RRC|mp=|t1=|dl=|_bytes|_ms\b/;

const mpView = (s: Partial<MultipathSettings>, today: number | null = 0): MultipathView => {
  const settings = { ...DEFAULT_MULTIPATH, consent_at: 1, ...s };
  return { settings, gate: gate(settings, { today_bytes: today, cycle_bytes: today, roaming: false }), hostApplied: true, problem: null, notice: null };
};
const terms = (saved: number, cell: number) => [
  { name: 'size', value: 2e6, unit: 'B', note: '' },
  { name: 'plt_sp', value: 2.57, unit: 's', note: '' },
  { name: 'plt_mp', value: 1.63, unit: 's', note: '' },
  { name: 'time_saved', value: saved, unit: 's', note: 'plt_sp - plt_mp' },
  { name: 'cellular_bytes', value: cell, unit: 'B', note: '' },
  { name: 'cellular_energy', value: 14.7, unit: 'J', note: '' },
];
const words = (p: TabRecord | null, extra: object = {}) =>
  decisionWords({ status, page: p, host: null, multipath: mpView({}), viaProxy: false, ...extra });

describe('bytes', () => {
  it('formats byte counts', () => {
    expect([bytes(null), bytes(512), bytes(200_000), bytes(1_500_000), bytes(5_000_000_000)]).toEqual(['no cap', '512 B', '200 kB', '1.5 MB', '5 GB']);
  });
});

describe('the state everywhere agrees on', () => {
  it('is off without a host, whatever the settings say: never "Multipath is on"', () => {
    for (const host of ['missing', 'exited', 'error'] as const) {
      const o = overall({ ...status, host, policy: null }, mpView({}));
      expect(o.level).toBe('off');
      expect(o.detail).not.toMatch(/Multipath is on/);
    }
    expect(overall({ ...status, host: 'missing', policy: null }, mpView({})).detail).toMatch(/not installed/);
  });
  it('is paused with the gate’s reason, on otherwise', () => {
    expect(overall(status, mpView({ paused: true }))).toMatchObject({ level: 'paused', label: 'Paused' });
    expect(overall(status, mpView({ consent_at: null }))).toMatchObject({ level: 'paused', label: 'Off' });
    expect(overall(status, mpView({}))).toMatchObject({ level: 'on', label: 'On', detail: 'Multipath is on.' });
  });
});

describe('the popup’s decision, in words', () => {
  const small: TabRecord = { ...page, multipath: false, theta1: 200_000, header: 'v=1, mp, t1=256, dl=3', size: { known: true, median: 80_000, p90: 90_000, samples: 3, source: '' } };
  it('says multipath with what it saves and costs', () => {
    const d = words({ ...page, theta1: 0, terms: terms(1.24, 2_100_000) });
    expect(d).toMatchObject({ tone: 'mp', title: 'Using WiFi + cellular', why: 'Saves about 1.2 s, costs about 2.1 MB.', site: 'example.com' });
  });
  it('says one path for a small page, and for a page never seen', () => {
    expect(words(small)).toMatchObject({ tone: 'sp', title: 'Using WiFi only', why: 'This page is small (about 80 kB): cellular joins only if it passes 200 kB.' });
    expect(words({ ...small, size: { known: false, median: null, p90: null, samples: 0, source: 'prior' } }).why).toBe('MPSurf has not seen this page yet: cellular joins only if it passes 200 kB.');
  });
  it('says why a rule kept one path', () => {
    const rule = (t: { name: string; value: number | null; unit: string; note: string }) => words({ ...page, multipath: false, theta1: null, terms: [t] }).why;
    expect(rule({ name: 'protocol', value: null, unit: '', note: '' })).toMatch(/HTTP\/3/);
    expect(rule({ name: 'battery_percent', value: 12, unit: '%', note: '' })).toBe('Your battery is low (12 %), below your limit for multipath.');
    expect(rule({ name: 'secondary', value: null, unit: '', note: '' })).toBe('No cellular connection is up.');
    expect(words({ ...page, multipath: false, theta1: null, reason: 'your site rule: never multipath on this site' }).why).toBe('Your rule for this site says never.');
    expect(words({ ...page, multipath: false, theta1: null, terms: terms(0.05, 1_000_000) }).why).toMatch(/^Both would save only 0.05 s here/);
  });
  it('says paused, not yet agreed, and no host first, whatever the page was decided', () => {
    const mp = { ...page, theta1: 0, terms: terms(1.2, 2e6) };
    expect(words(mp, { multipath: mpView({ paused: true }) })).toMatchObject({ title: 'Using WiFi only', why: 'You paused multipath.', action: 'resume' });
    expect(words(mp, { multipath: mpView({ consent_at: null }) })).toMatchObject({ title: 'Using WiFi only', action: 'consent' });
    expect(words(mp, { multipath: mpView({ daily_cap_bytes: 10_000_000 }, 12_000_000) }).why).toBe('Today’s data limit is used up.');
    expect(words(mp, { status: { ...status, host: 'missing', policy: null } })).toMatchObject({ tone: 'off', title: 'MPSurf is off' });
    expect(words(null)).toMatchObject({ title: 'Nothing to decide here', site: null });
  });
  it('names the primary path as the host reports it, and the proxy when the page goes through it', () => {
    const host = parseStatusReply({
      host: 'mpsurf-host', version: '0.1.0', protocol: 1, pid: 1, uptime_ms: 1, decisions: 0, policy: status.policy!,
      paths: [{ name: 'eth0', kind: 'ethernet', up: true, addrs: [], rtt_ms: 1, down_bps: 1e9, up_bps: 1e9, loss: 0, rtt_source: 'passive' }],
    });
    expect(words(small, { host }).title).toBe('Using wired only');
    expect(words(small, { viaProxy: true }).site).toBe('example.com · through your proxy');
  });
  it('uses no symbol or header syntax in the title and the reason', () => {
    for (const p of [page, small, { ...small, stale: true }, { ...page, source: 'fallback' as const }, { ...page, source: 'none' as const }]) {
      const d = words(p);
      expect(`${d.title} ${d.why}`).not.toMatch(JARGON);
    }
  });
});

describe('details', () => {
  it('labels the numbers in words and says what sites are told', () => {
    const rows = Object.fromEntries(detailRows({ page: { ...page, terms: terms(1, 1e6), protocol: 'h2', basis: 'prior', size: { known: false, median: null, p90: null, samples: 0, source: '' } }, host: null }));
    expect(rows).toMatchObject({
      'Cellular joins': 'after 200 kB',
      'Cellular cap per page': 'none',
      'Your patience': '3 s',
      'Page size': 'not seen yet',
      'Expected load time': '2.57 s on one path, 1.63 s on both',
      Protocol: 'HTTP/2',
      'Numbers from': 'typical connections (yours are not measured yet)',
      'Sites are told': 'multipath after 256 KiB, patience 3 s',
      'Cellular radio': NOT_MEASURED,
    });
    for (const [label] of detailRows({ page, host: null })) expect(label).not.toMatch(JARGON);
  });
  it('reads the header in words', () => {
    expect(headerWords('v=1, mp=?0, t1=0, dl=3')).toBe('no multipath, patience 3 s');
    expect(headerWords('v=1, mp, t1=0, t2=1024, dl=5')).toBe('multipath from the start, at most 1 MiB over cellular, patience 5 s');
    expect(headerWords('garbage')).toBe('not readable');
  });
  it('gives every model term a plain label, keeping the model’s note for the curious', () => {
    const rows = termRows([...terms(1, 1e6), { name: 'primary_rate', value: 7.04e6, unit: 'bit/s', note: 'rate cap' }]);
    expect(rows.find((r) => r.label === 'WiFi speed')).toEqual({ label: 'WiFi speed', value: '7 Mbit/s', note: 'rate cap' });
    expect(rows.every((r) => !/_/.test(r.label))).toBe(true);
  });
});

describe('data used against the limits', () => {
  const reply = (usage?: StatusReply['usage']): StatusReply => ({
    host: 'mpsurf-host', version: '0.1.0', protocol: 1, pid: 1, uptime_ms: 1, decisions: 0, policy: status.policy!, ...(usage ? { usage } : {}),
  });
  const usage = { interface: 'wwan0', since_ms: 0, used_bytes: 1_500_000_000, quota_bytes: null, today_bytes: 80_000_000 };
  it('shows today against the daily limit and the month against the plan', () => {
    const [today, month] = usageBars(reply(usage), mpView({ daily_cap_bytes: 100_000_000 }), { monthly_bytes: 2e9, billing_day: 5 });
    expect(today).toEqual({ label: 'Cellular today', text: '80 MB of 100 MB', fill: 0.8, level: 'warn' });
    expect(month).toEqual({ label: 'This month', text: '1.5 GB of 2 GB', fill: 0.75, level: 'warn' });
    const [, over] = usageBars(reply(usage), mpView({}), { monthly_bytes: 1e9, billing_day: 5 });
    expect(over).toMatchObject({ text: '1.5 GB of 1 GB: used up until day 5', fill: 1, level: 'reached' });
  });
  it('says when there is no limit or no measurement', () => {
    expect(usageBars(reply(usage), mpView({ daily_cap_bytes: null }), { monthly_bytes: null, billing_day: 1 }).map((b) => b.text)).toEqual(['80 MB, no limit', '1.5 GB, no limit']);
    expect(usageBars(null, mpView({}), { monthly_bytes: null, billing_day: 1 })[0]).toMatchObject({ text: 'not measured yet, limit 100 MB', fill: null });
  });
});

describe('errors in the words of the page', () => {
  it('names the field as the page shows it, in its unit', () => {
    const e = (v: object) => {
      try {
        normalisePrefs({ mode: 'performance', deadline_ms: 3000, battery_floor_percent: 20, charging_unlimited: true, quota_bytes: null, billing_day: 1, header_scope: 'all', overrides: [], ...v });
      } catch (err) {
        return plainError(err);
      }
      return 'accepted';
    };
    expect(e({ deadline_ms: 0 })).toBe('Your patience per page: enter 1 to 60 seconds.');
    expect(e({ billing_day: 40 })).toBe('The day your plan renews: enter 1 to 31.');
    expect(e({ battery_floor_percent: 101 })).toBe('The battery level: enter 0 to 100 %.');
    expect(e({ quota_bytes: -1 })).toBe('The monthly data in your plan: enter 0 or more GB.');
    let daily = '';
    try {
      normaliseMultipath({ daily_cap_bytes: 5 });
    } catch (err) {
      daily = plainError(err);
    }
    expect(daily).toBe('The daily limit: enter at least 1 MB, or leave it empty for none.');
  });
});

describe('what MPSurf needs', () => {
  const ok = { state: 'ok' as const, detail: '', at: 1 };
  const settings = { prefs: {} as never, optedIn: [], prefsSync: { ...ok, hostPrefs: null }, problem: null };
  const hostReply = (extra: Partial<StatusReply>): StatusReply => ({
    host: 'mpsurf-host',
    version: '0.1.0',
    protocol: 1,
    pid: 1,
    uptime_ms: 1,
    decisions: 0,
    policy: status.policy!,
    paths: [],
    ...extra,
  });
  const items = (extra: Partial<StatusReply>, proxy?: object) =>
    healthItems({ status, host: hostReply(extra), hostError: null, settings, reports: ok, ...(proxy ? { proxy: proxy as never } : {}) });

  it('says unknown when the host does not report the browser’s connections', () => {
    const it = items({}).find((x) => x.title.startsWith('Browser connections'))!;
    expect(it.level).toBe('unknown');
    expect(it.command).toBe(MPTCPIZE_COMMAND);
  });

  it('warns with the fix when the browser is not under mptcpize, less so when a proxy carries the pages, and is quiet when it is', () => {
    const plain = items({ browser_mptcp: { wrapped: false, detail: 'plain TCP' } }).find((x) => x.title.startsWith('Browser connections'))!;
    expect(plain.level).toBe('warn');
    expect(plain.command).toBe(MPTCPIZE_COMMAND);
    const proxied = items({ browser_mptcp: { wrapped: false, detail: 'plain TCP' } }, { status: { configured: true }, route: 'decided' }).find((x) => x.title.startsWith('Browser connections'))!;
    expect(proxied.level).toBe('unknown');
    expect(proxied.detail).toMatch(/through your proxy still get multipath/);
    // In Firefox the fix names Firefox, and so does the host's install command (Firefox reads it per user, so a
    // profile directory the host reported is not part of it).
    const ff = healthItems({ status, host: hostReply({ browser_mptcp: { wrapped: false, detail: 'plain TCP' } }), hostError: null, settings, reports: ok, browser: 'firefox' }).find((x) => x.title.startsWith('Browser connections'))!;
    expect(ff.command).toBe('mptcpize run firefox');
    expect(ff.detail).toMatch(/Start Firefox with:$/);
    const missing = healthItems({ status: { ...status, host: 'missing', policy: null }, host: null, hostError: null, settings, reports: ok, profileDir: '/p', browser: 'firefox' });
    expect(missing.map((x) => x.command)).toContain('dist/mpsurf-host install --browser firefox');
    const wrapped = items({ browser_mptcp: { wrapped: true, detail: 'under mptcpize' } }).find((x) => x.title.startsWith('Browser connections'))!;
    expect(wrapped.level).toBe('ok');
    expect(wrapped.command).toBeUndefined();
  });

  it('says pages through the proxy get multipath when the host reports its relay as the way (browser_mptcp.way)', () => {
    const relay = items({ browser_mptcp: { wrapped: false, way: 'relay', detail: 'plain TCP' } }).find((x) => x.title.startsWith('Browser connections'))!;
    expect(relay.level).toBe('unknown');
    expect(relay.detail).toMatch(/through your proxy still get multipath/);
    const none = items({ browser_mptcp: { wrapped: false, way: 'none', detail: 'plain TCP' } }).find((x) => x.title.startsWith('Browser connections'))!;
    expect(none.level).toBe('warn');
  });

  it('reports the helper: running, unreachable with the command to restart it, or not installed with the one that installs it', () => {
    const helper = (a: StatusReply['actuator']) => items({ actuator: a }).find((x) => x.title.includes('Helper'))!;
    expect(helper({ state: 'connected', backend: 'userspace', detail: '/run/mpsurf/actuator.sock' })).toMatchObject({ level: 'ok', title: 'Helper running (userspace)' });
    expect(helper({ state: 'unavailable', detail: 'connection refused' })).toMatchObject({ level: 'bad', command: HELPER_START_COMMAND });
    // Not configured: no unit to enable; the command installs it (scripts/setup.sh writes the unit).
    expect(helper({ state: 'not_configured', detail: 'MPSURF_ACTUATOR is not set' })).toMatchObject({ level: 'warn', command: HELPER_INSTALL_COMMAND });
    expect(HELPER_INSTALL_COMMAND).toMatch(/scripts\/setup\.sh/);
    expect(items({}).some((x) => x.title.includes('Helper'))).toBe(false);
  });

  it('puts the browser’s --user-data-dir into the install command once a host has reported it', () => {
    expect(installCommand(undefined)).toBe(INSTALL_COMMAND);
    expect(installCommand(null)).toBe(INSTALL_COMMAND);
    expect(installCommand('/home/u/.work-profile')).toBe('dist/mpsurf-host install --user-data-dir /home/u/.work-profile');
    expect(installCommand("/tmp/my profile's")).toBe(`dist/mpsurf-host install --user-data-dir '/tmp/my profile'\\''s'`);
    expect(installCommand('/p', true)).toBe('npm run build:host && dist/mpsurf-host install --user-data-dir /p');
    const gone = healthItems({ status: { ...status, host: 'missing', policy: null }, host: null, hostError: null, settings, reports: ok, profileDir: '/p' });
    expect(gone[0]).toMatchObject({ title: 'Host not installed', command: 'dist/mpsurf-host install --user-data-dir /p' });
  });

  it('gives the packaged install’s commands when the host says it came from the mpsurf package, the source build’s otherwise', () => {
    const commands = (h: ReturnType<typeof healthItems>) => h.map((x) => x.command).filter((c) => c !== undefined);
    const helper = (install: StatusReply['install'], state: 'unavailable' | 'not_configured') =>
      items({ actuator: { state, detail: 'x' }, ...(install ? { install } : {}) }).find((x) => x.title.includes('Helper'))!;
    expect(helper('package', 'not_configured')).toMatchObject({ level: 'warn', command: DOCTOR_COMMAND });
    expect(helper('package', 'unavailable')).toMatchObject({ level: 'bad', command: HELPER_START_COMMAND });
    expect(helper('source', 'not_configured').command).toBe(HELPER_INSTALL_COMMAND);
    expect(helper(undefined, 'not_configured').command).toBe(HELPER_INSTALL_COMMAND);
    // An older packaged host: the newer package, not a rebuild.
    const older = healthItems({ status, host: hostReply({ install: 'package' }), hostError: null, settings: { ...settings, prefsSync: { state: 'unsupported' as const, detail: 'the host does not know prefs', hostPrefs: null, at: 1 } }, reports: ok });
    expect(older.find((x) => x.title === 'Host is older than this extension')).toMatchObject({ command: PACKAGE_INSTALL_COMMAND });
    // A packaged host that is gone or failing, as the extension remembers it: the package again, whatever profile.
    for (const host of ['missing', 'error'] as const) {
      const gone = healthItems({ status: { ...status, host, policy: null }, host: null, hostError: null, settings, reports: ok, profileDir: '/p', install: 'package' });
      expect(gone[0]!.command).toBe(PACKAGE_INSTALL_COMMAND);
    }
    // The packaged commands name no source-tree command, and the source ones no package.
    const packaged = [
      ...commands(healthItems({ status: { ...status, host: 'missing', policy: null }, host: null, hostError: null, settings, reports: ok, install: 'package' })),
      ...commands(items({ install: 'package', actuator: { state: 'not_configured', detail: 'x' } })),
      ...commands(items({ install: 'package', actuator: { state: 'unavailable', detail: 'x' } })),
    ];
    expect(packaged.join('\n')).not.toMatch(/dist\/|npm |setup\.sh|systemctl enable/);
    const source = [
      ...commands(healthItems({ status: { ...status, host: 'missing', policy: null }, host: null, hostError: null, settings, reports: ok, install: 'source' })),
      ...commands(items({ install: 'source', actuator: { state: 'not_configured', detail: 'x' } })),
    ];
    expect(source.join('\n')).not.toMatch(/\.deb|doctor|mpsurf-browser/);
    // Plain sockets: a packaged install starts the browser with its launcher, a source build under mptcpize itself.
    const plain = { wrapped: false, detail: 'no LD_PRELOAD of mptcpize', way: 'none' as const };
    const sockets = (install: StatusReply['install'], browser?: 'chromium' | 'firefox') =>
      healthItems({ status, host: hostReply({ install, browser_mptcp: plain }), hostError: null, settings, reports: ok, ...(browser ? { browser } : {}) }).find((x) => x.title === 'Browser connections are plain TCP')!.command;
    expect(sockets('package')).toBe('mpsurf-browser chromium');
    expect(sockets('package', 'firefox')).toBe('mpsurf-browser firefox');
    expect(sockets('source')).toBe('mptcpize run chromium');
  });

  it('gives the install command, which also finds a browser’s --user-data-dir, when the host is missing', () => {
    const h = healthItems({ status: { ...status, host: 'missing', policy: null }, host: null, hostError: null, settings, reports: ok });
    expect(h[0]).toMatchObject({ level: 'bad', title: 'Host not installed', command: INSTALL_COMMAND });
    expect(h[0]!.detail).toMatch(/--user-data-dir/);
  });
});

describe('radio state', () => {
  const reply = (rrc: unknown) =>
    parseStatusReply({ host: 'mpsurf-host', version: '0.1.0', protocol: 1, pid: 1, uptime_ms: 1, decisions: 0, policy: status.policy!, rrc });
  const rrc = { interface: 'wwan0', tech: 'lte', state: 'idle', since_ms: 10_000, source: 'inferred' };
  it('says the state in words, and what the host weighs when it is unsure', () => {
    expect(radioText(reply(rrc), 12_000)).toBe('asleep for 2 s (LTE, idle)');
    expect(radioText(reply({ ...rrc, state: 'continuous' }), 12_000)).toBe('busy for 2 s (LTE, continuous)');
    const spread = [{ state: 'idle', since_ms: 10_000, p: 0.4 }, { state: 'long_drx', since_ms: 11_000, p: 0.6 }];
    expect(radioText(reply({ ...rrc, spread }), 12_000)).toBe('not sure (traffic it did not see): asleep 40 %, awake, falling asleep 60 %');
  });
  it('refuses a spread that is not one', () => {
    expect(() => reply({ ...rrc, spread: [{ state: 'idle', since_ms: 1, p: 1.5 }] })).toThrow(/spread\[0\]\.p/);
    expect(() => reply({ ...rrc, spread: 'idle' })).toThrow(/spread: expected an array/);
  });
});

describe('path gauges', () => {
  const reply = (paths: unknown[]) =>
    parseStatusReply({ host: 'mpsurf-host', version: '0.1.0', protocol: 1, pid: 1, uptime_ms: 1, decisions: 0, policy: status.policy!, paths });
  const path = { name: 'wwan0', kind: 'cellular', up: true, addrs: [], rtt_ms: 70, down_bps: 9.2e6, up_bps: null, loss: null, rtt_source: 'passive' };
  it('says how old a rate is when the host says so, and nothing when it does not', () => {
    const down = (p: object) => pathViews(reply([p]))?.[0]?.gauges.find((g) => g.label === 'Down')?.value;
    expect(down({ ...path, down_age_ms: 12_400 })).toBe('9.2 Mbit/s, measured 12 s ago');
    expect(down({ ...path, down_age_ms: 300_000 })).toBe('9.2 Mbit/s, measured 5 min ago');
    expect(down({ ...path, down_age_ms: 200 })).toBe('9.2 Mbit/s, measured now');
    expect(down(path)).toBe('9.2 Mbit/s');
    expect(down({ ...path, down_bps: null, down_age_ms: 5000 })).toBe(NOT_MEASURED);
  });
  it('says what a long transfer held under loss when that is below the fastest rate', () => {
    const down = (p: object) => pathViews(reply([p]))?.[0]?.gauges.find((g) => g.label === 'Down')?.value;
    const wifi = { ...path, name: 'wlan0', kind: 'wifi', down_bps: 7.04e6 };
    expect(down({ ...wifi, down_sustained_bps: 2.9e6 })).toBe('7 Mbit/s; 2.9 Mbit/s held under loss');
    expect(down({ ...wifi, down_sustained_bps: 7.04e6 })).toBe('7 Mbit/s');
    for (const bad of [0, -1, 'fast', Number.NaN]) expect(() => reply([{ ...wifi, down_sustained_bps: bad }])).toThrow(ProtocolError);
  });
  it('refuses an age that is not a sane integer', () => {
    for (const bad of [-1, 1.5, 'soon', 1e15]) expect(() => reply([{ ...path, down_age_ms: bad }])).toThrow(ProtocolError);
  });
});
