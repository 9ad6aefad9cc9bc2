// The testbed's measurement grid: page loads under each mode, profile, page and protocol, N repetitions in
// random order, one run record per load in out/runs.jsonl, then the report (dist/report) under out/.
// `node e2e/testbed/grid.mjs --help` (or `npm run testbed -- --help`) lists the grids and flags.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Session, MODES, HISTORIES, BROWSERS, PREFERENCES, PER_PREFERENCE, DECIDES, canRun, readProfile, corpusManifest, shuffle, parsePreference } from './lib.mjs';

export { shuffle };
import { DOWNLOAD_MODES, runDownloads, summarize } from './downloads.mjs';
import { markdown as proxyMarkdown } from './proxyreport.mjs';
import { dist, root } from '../lib/paths.mjs';

// The decisions benchmark's pages (issue 11): small (< 200 kB) and large (>= 1 MB) pages, same-origin sites that
// mix both (news, shop, the HTTP/1.1-only forum), a medium page, and second pages of path classes the host has
// seen (news-article-2, news-gallery-2, shop-product-2), so that what it learned from one page is put to a test.
const DECISION_PAGES = [
  'news-list', 'news-article-1', 'news-article-2', 'news-gallery-1', 'news-gallery-2',
  'shop-list', 'shop-product-1', 'shop-product-2',
  'forum-thread-1', 'forum-album-1',
  'search', 'wiki', 'gov',
];
const DECISION_PROFILES = ['baseline', '3g', 'wifi-loss-1', 'poor-wifi-fast-lte', 'att-lte-driving'];
// mp-rule: seed 001 §4.2's example policy (multipath once 200 kB have come) carried out by MPSurf's own host and
// helper, so that only the decision differs from mp-adaptive's: the simple rule the model has to beat.
const DECISION_MODES = ['sp-wifi', 'mp-always', 'mp-rule', 'mp-adaptive'];

// The grids, by name. A grid gives profiles, modes, pages (names, set names, site hosts or "large"), protocols
// ("h2", "http/1.1", or "site": each page's own site's), repetitions, and optionally ordered: true (no shuffle)
// and history (what mp-adaptive's host remembers, see lib.mjs). Flags override any of them.
export const GRIDS = {
  // A few loads that still exercise every mode: the smoke test and a quick look.
  smoke: { profiles: ['baseline'], modes: ['sp-wifi', 'mp-always', 'mp-adaptive'], pages: ['e3-20k', 'wiki'], protos: ['h2'], reps: 1 },
  // What npm start shows: MPSurf's own mode on a small, a medium and a large page.
  // In this order, not shuffled: the first large page lets the host measure the links' rates, so the decisions
  // after it come from the cost-benefit model rather than the baseline policy.
  demo: { profiles: ['baseline'], modes: ['mp-adaptive'], pages: ['news-1', 'e3-20k', 'wiki', 'gov', 'e3-50k', 'weather'], protos: ['h2'], reps: 1, ordered: true },
  full: { profiles: ['baseline'], modes: ['sp-wifi', 'sp-cell', 'mp-always', 'mp-adaptive'], pages: ['e3', 'table1'], protos: ['h2', 'http/1.1'], reps: 3 },
  // MP-H2 (issue 14): large files under four clients; e2e/testbed/downloads.mjs. Pages are the origin's files.
  downloads: {
    runner: 'downloads',
    profiles: ['baseline', 'att-lte-driving', 'wifi-loss-1'],
    modes: DOWNLOAD_MODES,
    pages: ['1m.bin', '8m.bin', '32m.bin'],
    protos: ['h2'],
    reps: 3,
  },
  // The MPTCP proxy deployment (issue 13): origins that speak plain TCP only, a proxy host running Squid over MPTCP;
  // each page on its own site, so that proxy-adaptive decides per origin while every tunnel goes to one proxy.
  proxy: {
    profiles: ['baseline', 'att-lte-driving'],
    modes: ['sp-wifi', 'mp-always', 'proxy-always', 'proxy-rule', 'proxy-adaptive'],
    pages: ['e3', 'large'],
    protos: ['h2'],
    reps: 3,
    session: { proxy: true, originMptcp: false },
  },
  seeds: {
    profiles: ['3g', 'wifi-loss-0.5', 'wifi-loss-1', 'wifi-delay+50', 'lte-delay+50'],
    modes: ['sp-wifi', 'sp-cell', 'mp-always'],
    pages: ['e3-10k', 'e3-100k', 'large'],
    protos: ['h2'],
    reps: 3,
  },
  // The decisions benchmark (issue 11 item 8): does mp-adaptive keep mp-always's gain and skip its cost?
  // traceReps: a trace-driven profile's loads replay another stretch of the trace at each repetition (one offset
  // per page and repetition), and beside the AT&T trace the same decision at the same offset took from 0.4 s less
  // to 4.4 s more than mp-always's load (e2e/results/ARCHIVE-2026.md#decisions); with three repetitions one
  // stretch's outage set a page's median. Five make a median that one outage does not move.
  // Every preference a user can set: mp-adaptive runs once per preference (each with a decision log of its own, as
  // three users would have), the other modes, whose loads do not depend on it, once per page and repetition.
  decisions: { profiles: DECISION_PROFILES, modes: DECISION_MODES, pages: DECISION_PAGES, protos: ['site'], reps: 3, traceReps: 5, history: 'session', preferences: PREFERENCES },
  // Its subset for development: two profiles, one site's small and large pages, one Table 1 page.
  'decisions-quick': {
    profiles: ['baseline', 'poor-wifi-fast-lte'],
    modes: DECISION_MODES,
    pages: ['news-list', 'news-article-1', 'news-gallery-1', 'shop-list', 'shop-product-1'],
    protos: ['site'],
    reps: 2,
    history: 'session',
    preferences: PREFERENCES,
  },
};

export const USAGE = `usage: npm run testbed -- [flags]        (or: node e2e/testbed/grid.mjs [flags])

Loads pages in a real browser (Chromium, or Debian's Firefox ESR) over the two-path testbed (needs root and kernel
MPTCP), one run record per load in OUT/runs.jsonl, then writes the report (OUT/report.md, summary.csv, figures) and
prints its summary.

  --grid NAME        ${Object.keys(GRIDS).join(', ')} (default full)
  --profiles LIST    built-in profile ids (e2e/profiles) or profile files (relative or absolute paths), comma-separated
  --modes LIST       ${MODES.join(', ')} (downloads grid: ${DOWNLOAD_MODES.join(', ')})
  --pages LIST       page names, sets (e3, table1, mixed, or a corpus file's set), site hosts, or "large"
                     (downloads grid: the origin's files, e.g. 1m.bin, 8m.bin, 32m.bin)
  --protos LIST      h2, http/1.1, or site (each page's own site's protocol)
  --reps N           repetitions of every (profile, mode, page, protocol)
  --trace-reps N     repetitions on a trace-driven profile, if more than --reps (decisions grid: 5)
  --browser NAME     the browser every load runs in: ${BROWSERS.join(' or ')} (default chromium); the downloads
                     grid runs no browser
  --history H        what mp-adaptive's native host remembers: session (one decision log per profile, fed only
                     by that profile's mp-adaptive loads, in their random order) or none (nothing, every load)
  --preference LIST  the user's preference, set on the extension's options page before each load: performance,
                     balanced, battery-saver (comma-separated; decisions grids: all three, others: performance).
                     mp-adaptive and proxy-adaptive run once per preference; the other modes do not depend on it
                     and run once, and the report values every mode with each preference's weights
  --first-rep N      number the repetitions from N (default 0): more repetitions, on other trace offsets, appended
                     to an earlier run's runs.jsonl
  --corpus FILE      a corpus file (JSON, format of e2e/corpus/mixed.json) whose sites are added; repeatable
  --out DIR          output directory (default out/)
  --seed N           seed of the random load order (default: the time)
  --fresh            start a new runs.jsonl in OUT instead of appending
  --dry-run          print the plan (loads in order, output files, time estimate) and exit without running
  -h, --help         this text

Relative paths are taken from the directory npm was started in (INIT_CWD), else the working directory.
`;

// UsageError is a command-line mistake: one line on stderr, exit 2.
export class UsageError extends Error {}

const list = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);

// parseGridArgs turns command-line flags into a plan's inputs; cwd resolves relative paths. It reads the profile
// files it is given (their ids name the output files) but runs nothing.
export function parseGridArgs(argv, { cwd = process.env.INIT_CWD || process.cwd() } = {}) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        grid: { type: 'string', default: 'full' },
        profiles: { type: 'string' },
        modes: { type: 'string' },
        pages: { type: 'string' },
        protos: { type: 'string' },
        reps: { type: 'string' },
        'trace-reps': { type: 'string' },
        history: { type: 'string' },
        preference: { type: 'string' },
        'first-rep': { type: 'string' },
        browser: { type: 'string', default: 'chromium' },
        corpus: { type: 'string', multiple: true },
        out: { type: 'string' },
        seed: { type: 'string' },
        fresh: { type: 'boolean', default: false },
        'dry-run': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    throw new UsageError(err.message);
  }
  if (values.help) return { help: true };
  const base = GRIDS[values.grid];
  if (!base) throw new UsageError(`unknown grid ${values.grid}; one of ${Object.keys(GRIDS).join(', ')}`);
  const spec = {
    profiles: values.profiles !== undefined ? list(values.profiles) : base.profiles,
    modes: values.modes !== undefined ? list(values.modes) : base.modes,
    pages: values.pages !== undefined ? list(values.pages) : base.pages,
    protos: values.protos !== undefined ? list(values.protos) : base.protos,
    reps: base.reps,
    traceReps: base.traceReps ?? 0,
    ordered: base.ordered ?? false,
    history: values.history ?? base.history ?? 'session',
    preferences: base.preferences ?? ['performance'],
    firstRep: 0,
    browser: values.browser,
    session: base.session,
  };
  if (!BROWSERS.includes(spec.browser)) throw new UsageError(`--browser ${spec.browser}: one of ${BROWSERS.join(', ')}`);
  if (base.runner === 'downloads' && values.browser !== 'chromium') throw new UsageError('--browser: the downloads grid runs no browser');
  if (values.preference !== undefined) {
    const ps = list(values.preference);
    if (ps.length === 0) throw new UsageError('--preference: empty');
    spec.preferences = [];
    for (const p of ps) {
      const v = parsePreference(p);
      if (!v) throw new UsageError(`--preference ${p}: one of performance, balanced, battery-saver`);
      if (!spec.preferences.includes(v)) spec.preferences.push(v);
    }
  }
  if (values['first-rep'] !== undefined) {
    const v = values['first-rep'];
    if (!/^\d+$/.test(v) || Number(v) > 1000) throw new UsageError(`--first-rep ${v}: want a whole number 0..1000`);
    spec.firstRep = Number(v);
  }
  if (values.reps !== undefined) {
    if (!/^\d+$/.test(values.reps) || Number(values.reps) < 1 || Number(values.reps) > 1000) throw new UsageError(`--reps ${values.reps}: want a whole number 1..1000`);
    spec.reps = Number(values.reps);
  }
  if (values['trace-reps'] !== undefined) {
    const v = values['trace-reps'];
    if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 1000) throw new UsageError(`--trace-reps ${v}: want a whole number 1..1000`);
    spec.traceReps = Number(v);
  }
  for (const [k, v] of Object.entries({ profiles: spec.profiles, modes: spec.modes, pages: spec.pages, protos: spec.protos })) {
    if (v.length === 0) throw new UsageError(`--${k}: empty`);
  }
  // A grid with a runner of its own (downloads) takes that runner's modes and pages (files, not corpus pages).
  spec.runner = base.runner;
  const modes = base.runner === 'downloads' ? DOWNLOAD_MODES : MODES;
  for (const m of spec.modes) if (!modes.includes(m)) throw new UsageError(`unknown mode ${m}; one of ${modes.join(', ')}`);
  for (const p of spec.protos) if (!['h2', 'http/1.1', 'site'].includes(p)) throw new UsageError(`unknown protocol ${p}; one of h2, http/1.1, site`);
  if (!HISTORIES.includes(spec.history)) throw new UsageError(`--history ${spec.history}: one of ${HISTORIES.join(', ')}`);
  let seed;
  if (values.seed !== undefined) {
    if (!/^\d+$/.test(values.seed) || Number(values.seed) > 2 ** 32 - 1) throw new UsageError(`--seed ${values.seed}: want a whole number 0..4294967295`);
    seed = Number(values.seed);
  }
  // Profiles: read now, so that a wrong path or id fails before anything runs, and so that output files are
  // named after the profile's id rather than its path.
  const profiles = spec.profiles.map((p) => {
    try {
      return readProfile(p, cwd);
    } catch (err) {
      throw new UsageError(err.message);
    }
  });
  const ids = profiles.map((p) => p.id);
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  if (dup) throw new UsageError(`two profiles have the id ${dup}: their outputs would overwrite each other`);
  spec.profiles = profiles.map((p) => p.arg);
  const corpus = (values.corpus ?? []).map((f) => path.resolve(cwd, f));
  for (const f of corpus) if (!fs.existsSync(f)) throw new UsageError(`--corpus ${f}: no such file`);
  return {
    spec,
    profiles,
    corpus,
    outDir: path.resolve(cwd, values.out ?? path.join(root, 'out')),
    seed,
    fresh: values.fresh,
    dryRun: values['dry-run'],
  };
}

// expandPages resolves page selectors against a corpus manifest: a page name, a set name (e3, table1, mixed, a
// corpus file's set), a site host (all its pages), or "large" (the five largest Table 1 pages).
export function expandPages(selectors, manifest) {
  const pages = manifest.pages;
  const out = new Set();
  for (const sel of selectors) {
    if (sel === 'large') {
      [...pages].filter((p) => p.set === 'table1').sort((a, b) => b.bytes - a.bytes).slice(0, 5).forEach((p) => out.add(p.name));
    } else if (pages.some((p) => p.set === sel)) {
      pages.filter((p) => p.set === sel).forEach((p) => out.add(p.name));
    } else if (pages.some((p) => p.host === sel)) {
      pages.filter((p) => p.host === sel).forEach((p) => out.add(p.name));
    } else if (pages.some((p) => p.name === sel)) {
      out.add(sel);
    } else {
      throw new UsageError(`unknown page, set or site: ${sel}`);
    }
  }
  return [...out];
}

// planLoads lists one profile's loads: every mode x page x protocol x repetition, shuffled unless ordered. "site"
// stands for the page's own protocol; a page asked for under the same protocol twice is loaded once per rep. The
// modes whose host decides by the model (PER_PREFERENCE) run once per preference, the others once: their loads do
// not depend on it. Repetitions are numbered from spec.firstRep.
export function planLoads(spec, pages, manifest, seed) {
  const byName = new Map(manifest.pages.map((p) => [p.name, p]));
  const loads = [];
  const first = spec.firstRep ?? 0;
  const prefs = spec.preferences ?? ['performance'];
  for (const mode of spec.modes) {
    for (const page of pages) {
      const protos = new Set(spec.protos.map((p) => (p === 'site' ? byName.get(page).proto : p)));
      for (const proto of protos) {
        for (let rep = first; rep < first + spec.reps; rep++) {
          if (PER_PREFERENCE.has(mode)) for (const preference of prefs) loads.push({ mode, page, proto, rep, preference });
          else loads.push({ mode, page, proto, rep });
        }
      }
    }
  }
  if (!spec.ordered) shuffle(loads, seed);
  return loads;
}

// Time estimate. Each load costs a fixed part (Chromium start, the host and extension, the actuator for
// mp-adaptive, the waits for counters and logs) plus a share of the page's time over the profile's WiFi downlink
// (sp-wifi takes all of it, the multipath modes less). Fitted (least squares, start-to-start time of consecutive
// loads) on the decisions-quick grid, 60 loads, on this machine kind (2 shared cores, other work running, load
// average 8-15): 6.08 s + 0.49 x page bits / WiFi rate; it ran 7.1 min, estimated 7 min (e2e/results/ARCHIVE-2026.md#decisions).
export const LOAD_FIXED_S = 6.1;
export const TRANSFER_FACTOR = 0.49;
export const PROFILE_SETUP_S = 4;

export function estimateSeconds(plan) {
  let s = 0;
  for (const { profile, loads } of plan) {
    s += PROFILE_SETUP_S;
    for (const l of loads) s += LOAD_FIXED_S + (TRANSFER_FACTOR * l.page_bytes * 8) / (profile.wifiDownMbit * 1e6);
  }
  return s;
}

// wifiDownMbit reads a profile's WiFi downlink rate (a trace's is not read here: a fixed 5 Mbit/s stands for it).
function wifiDownMbit(file) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  return p.links.wlan0.down.rate_mbit ?? 5;
}

// profileSpec is the spec as one profile runs it: a trace-driven one with at least traceReps repetitions.
export function profileSpec(spec, profile) {
  return profile.trace && spec.traceReps > spec.reps ? { ...spec, reps: spec.traceReps } : spec;
}

// buildPlan puts the pieces together: per profile, its loads in order, each with its page's size.
export function buildPlan(parsed, manifest, seed) {
  const pages = expandPages(parsed.spec.pages, manifest);
  const byName = new Map(manifest.pages.map((p) => [p.name, p]));
  return parsed.profiles.map((profile) => ({
    profile: { ...profile, wifiDownMbit: wifiDownMbit(profile.file) },
    loads: planLoads(profileSpec(parsed.spec, profile), pages, manifest, seed).map((l) => ({ ...l, page_bytes: byName.get(l.page).bytes })),
  }));
}

const fmtMin = (s) => (s < 90 ? `${Math.round(s)} s` : `${(s / 60).toFixed(0)} min`);

export async function runGrid(spec, { outDir = path.join(root, 'out'), seed = Date.now(), log = console.log, onLoad, corpus = [] } = {}) {
  const why = canRun();
  if (why) throw new Error(`the testbed cannot run here: ${why}`);
  fs.mkdirSync(outDir, { recursive: true });
  const runsFile = path.join(outDir, 'runs.jsonl');
  const manifest = corpusManifest(corpus);
  const profiles = spec.profiles.map((p) => readProfile(p));
  const plan = buildPlan({ spec, profiles }, manifest, seed);
  const total = plan.reduce((n, p) => n + p.loads.length, 0);
  const estimate = estimateSeconds(plan);
  log(`${total} loads in ${plan.length} profile(s), ${spec.browser ?? 'chromium'}, history ${spec.history ?? 'session'}, preferences ${(spec.preferences ?? ['performance']).join(', ')}; estimated ${fmtMin(estimate)}`);
  const records = [];
  const runId = new Date().toISOString().replace(/[:.]/g, '-');
  const t0 = Date.now();
  let done = 0;
  let estimatedDone = 0;
  for (const { profile, loads } of plan) {
    let session;
    try {
      session = await Session.open({ profile: profile.arg, outDir, log, corpus, history: spec.history ?? 'session',
        proxy: spec.session?.proxy ?? false, originMptcp: spec.session?.originMptcp ?? true, browser: spec.browser ?? 'chromium' });
    } catch (err) {
      // The profile's loads are recorded as failed, so that the report counts them rather than losing them.
      log(`profile ${profile.id}: the testbed did not come up: ${err.message}`);
      for (const [i, l] of loads.entries()) {
        const p = manifest.pages.find((x) => x.name === l.page);
        const rec = failedRecord({ runId: `${runId}-${profile.id}-${i + 1}`, profile, load: l, page: p, error: `testbed: ${err.message}` });
        fs.appendFileSync(runsFile, JSON.stringify(rec) + '\n');
        records.push(rec);
      }
      done += loads.length;
      continue;
    }
    try {
      for (const [i, l] of loads.entries()) {
        const rec = await session.load({ ...l, proto: l.proto === 'h2' ? 'h2' : 'h1', runId: `${runId}-${profile.id}-${i + 1}` });
        fs.appendFileSync(runsFile, JSON.stringify(rec) + '\n');
        records.push(rec);
        done++;
        estimatedDone += LOAD_FIXED_S + (TRANSFER_FACTOR * l.page_bytes * 8) / (profile.wifiDownMbit * 1e6);
        log(formatLoad(rec, `${i + 1}/${loads.length}`));
        if (done % 25 === 0 && done < total) {
          // Remaining time, scaled by how the estimate has fared on this machine so far.
          const elapsed = (Date.now() - t0) / 1000;
          log(`  ${done}/${total} loads in ${fmtMin(elapsed)}; about ${fmtMin(((estimate - estimatedDone) * elapsed) / estimatedDone)} to go`);
        }
        onLoad?.(rec);
      }
    } finally {
      await session.close();
    }
  }
  return { records, runsFile, elapsedS: (Date.now() - t0) / 1000, estimateS: estimate };
}

function failedRecord({ runId, profile, load, page, error }) {
  return {
    run_id: runId, mode: load.mode, profile: profile.id, cell_tech: profile.tech, page: load.page, page_bytes: page.bytes,
    objects: page.objects, proto: load.proto, rep: load.rep, host: page.host, preference: load.preference ?? null, ok: false, error,
    start_unix_ns: null, end_unix_ns: null, plt_ms: null, link_bytes: null, server_path_bytes: null, decision: null,
    header_seen: false, timeline_dir: path.join('timeline', profile.id),
  };
}

export function formatLoad(r, n = '') {
  if (!r.ok) return `${n} ${r.profile} ${r.mode} ${r.page} ${r.proto}: FAILED ${r.error}`;
  const mb = (x) => (x / 1e6).toFixed(2);
  const d = r.decision ? `multipath=${r.decision.multipath} θ1=${r.decision.theta1} θ2=${r.decision.theta2 ?? 'none'}` +
    (r.decision.basis ? ` basis=${r.decision.basis}` : '') + ` — ${r.decision.reason}` +
    (r.decision.actuation ? `\n      actuation: ${r.decision.actuation}` : '') : '';
  return (
    `${n} ${r.profile} ${r.mode.padEnd(11)} ${r.page.padEnd(8)} ${r.proto.padEnd(8)} PLT ${(r.plt_ms / 1000).toFixed(2)} s` +
    `  wlan0 ${mb(r.link_bytes.wlan0.rx)} MB  wwan0 ${mb(r.link_bytes.wwan0.rx)} MB  header ${r.header_seen ? 'on every request' : 'MISSING'}` +
    (r.proxy ? `  proxy ${r.proxy.used ? `used (${r.proxy.tunnels} tunnels)` : 'not used'}` : '') +
    // The other modes' decisions are not carried out (the kernel mode is fixed); only those of the modes whose host
    // decides (MPSurf's model, or the rule) are shown.
    (d && DECIDES.has(r.mode) ? `\n      decision${r.preference ? ` (${r.preference})` : ''}: ${d}` : '')
  );
}

// writeReport runs dist/report on OUT/runs.jsonl; it prints its one-screen summary (decisions included when the
// runs have sp-wifi, mp-always and mp-adaptive loads) and writes OUT/report.md.
export function writeReport(outDir) {
  const report = path.join(dist, 'report');
  execFileSync(report, ['--runs', path.join(outDir, 'runs.jsonl'), '--out', outDir], { stdio: 'inherit' });
  return path.join(outDir, 'report.md');
}

export async function main(argv = process.argv.slice(2)) {
  const parsed = parseGridArgs(argv);
  if (parsed.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const { spec, outDir, fresh, dryRun, corpus } = parsed;
  if (dryRun && spec.runner === 'downloads') throw new UsageError('--dry-run plans page loads; the downloads grid has none');
  const seed = parsed.seed ?? Date.now() % 2 ** 32;
  console.log(`grid: ${JSON.stringify({ ...spec, seed, corpus })}`);
  if (dryRun) {
    const manifest = corpusManifest(corpus);
    const plan = buildPlan(parsed, manifest, seed);
    for (const { profile, loads } of plan) {
      console.log(`profile ${profile.id} (${profile.arg}): ${loads.length} loads; ` +
        `outputs ${path.join(outDir, `origin-${profile.id}.jsonl`)}, ${path.join(outDir, 'timeline', profile.id)}, ${path.join(outDir, `host-${profile.id}-*.db`)}`);
      for (const [i, l] of loads.entries()) console.log(`  ${i + 1} ${l.mode} ${l.page} ${l.proto} rep ${l.rep}${l.preference ? ` ${l.preference}` : ''}`);
    }
    console.log(`${plan.reduce((n, p) => n + p.loads.length, 0)} loads; estimated ${fmtMin(estimateSeconds(plan))}; runs would go to ${path.join(outDir, 'runs.jsonl')}`);
    return 0;
  }
  if (fresh) fs.rmSync(path.join(outDir, 'runs.jsonl'), { force: true });
  if (spec.runner === 'downloads') {
    const { records } = await runDownloads(spec, { outDir, seed });
    const text = summarize(records);
    fs.writeFileSync(path.join(outDir, 'downloads.txt'), text + '\n');
    console.log(`\n${text}\n\nruns in ${path.join(outDir, 'runs.jsonl')}, summary in ${path.join(outDir, 'downloads.txt')}`);
    return 0;
  }
  const { records, elapsedS, estimateS } = await runGrid(spec, { outDir, seed, corpus });
  const failed = records.filter((r) => !r.ok).length;
  console.log(`${records.length} loads, ${failed} failed, in ${fmtMin(elapsedS)} (estimated ${fmtMin(estimateS)}); runs in ${path.join(outDir, 'runs.jsonl')}`);
  console.log(`report: ${writeReport(outDir)}`);
  if (spec.session?.proxy) {
    // The proxy grid's own summary, over every proxy-grid record in the runs file.
    const all = fs.readFileSync(path.join(outDir, 'runs.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((r) => r.proxy);
    const md = proxyMarkdown(all);
    fs.writeFileSync(path.join(outDir, 'proxy-report.md'), md);
    console.log(md);
  }
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      if (err instanceof UsageError) {
        console.error(`grid: ${err.message} (see --help)`);
        process.exit(2);
      }
      console.error(err.message || err);
      process.exit(1);
    },
  );
}
