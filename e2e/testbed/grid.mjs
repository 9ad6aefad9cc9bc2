// The testbed's measurement grid: page loads under each mode, profile, page and protocol, N repetitions in
// random order, one run record per load in out/runs.jsonl, then the report (dist/report) under out/.
//
//   npm run testbed -- --grid full                 # every page, 4 modes, h2 + http/1.1, 3 reps, baseline profile
//   npm run testbed -- --grid seeds                # the seeds' variants (3G, WiFi loss, +50 ms) on the large pages
//   npm run testbed -- --profiles baseline,3g --modes sp-wifi,mp-always --pages e3 --protos h2 --reps 5
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Session, MODES, canRun } from './lib.mjs';
import { DOWNLOAD_MODES, runDownloads, summarize } from './downloads.mjs';
import { dist, root } from '../lib/paths.mjs';

export const GRIDS = {
  // A few loads that still exercise every mode: the smoke test and a quick look.
  smoke: { profiles: ['baseline'], modes: ['sp-wifi', 'mp-always', 'mp-adaptive'], pages: ['e3-20k', 'wiki'], protos: ['h2'], reps: 1 },
  // What npm start shows: MPSurf's own mode on a small, a medium and a large page.
  // In this order, not shuffled: the first large page lets the host measure the links' rates, so the decisions
  // after it come from the cost-benefit model rather than the baseline policy.
  demo: { profiles: ['baseline'], modes: ['mp-adaptive'], pages: ['news-1', 'e3-20k', 'wiki', 'gov', 'e3-50k', 'weather'], protos: ['h2'], reps: 1, ordered: true },
  full: { profiles: ['baseline'], modes: MODES, pages: ['e3', 'table1'], protos: ['h2', 'http/1.1'], reps: 3 },
  // MP-H2 (issue 14): large files under four clients; e2e/testbed/downloads.mjs. Pages are the origin's files.
  downloads: {
    runner: 'downloads',
    profiles: ['baseline', 'att-lte-driving', 'wifi-loss-1'],
    modes: DOWNLOAD_MODES,
    pages: ['1m.bin', '8m.bin', '32m.bin'],
    protos: ['h2'],
    reps: 3,
  },
  seeds: {
    profiles: ['3g', 'wifi-loss-0.5', 'wifi-loss-1', 'wifi-delay+50', 'lte-delay+50'],
    modes: ['sp-wifi', 'sp-cell', 'mp-always'],
    pages: ['e3-10k', 'e3-100k', 'large'],
    protos: ['h2'],
    reps: 3,
  },
};

// Page selectors: a page name, a set name (e3, table1), or "large" (the five largest Table 1 pages).
function expandPages(selectors, corpus) {
  const list = corpus.pages ?? corpus;
  const out = new Set();
  for (const sel of selectors) {
    if (sel === 'large') {
      [...list].filter((p) => p.set === 'table1').sort((a, b) => b.bytes - a.bytes).slice(0, 5).forEach((p) => out.add(p.name));
    } else if (list.some((p) => p.set === sel)) {
      list.filter((p) => p.set === sel).forEach((p) => out.add(p.name));
    } else if (list.some((p) => p.name === sel)) {
      out.add(sel);
    } else {
      throw new Error(`unknown page or set: ${sel}`);
    }
  }
  return [...out];
}

// A seeded shuffle, so a grid's order is random but can be repeated.
function shuffle(xs, seed) {
  let s = seed >>> 0 || 1;
  const rnd = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

export async function runGrid(spec, { outDir = path.join(root, 'out'), seed = Date.now(), log = console.log, onLoad } = {}) {
  const why = canRun();
  if (why) throw new Error(`the testbed cannot run here: ${why}`);
  fs.mkdirSync(outDir, { recursive: true });
  const runsFile = path.join(outDir, 'runs.jsonl');
  const corpus = JSON.parse(execFileSync(path.join(dist, 'origin'), ['corpus', '--list', '--json'], { encoding: 'utf8' }));
  const pages = expandPages(spec.pages, corpus);
  const records = [];
  const runId = new Date().toISOString().replace(/[:.]/g, '-');
  for (const profile of spec.profiles) {
    const loads = [];
    for (const mode of spec.modes) for (const page of pages) for (const proto of spec.protos) for (let rep = 0; rep < spec.reps; rep++) loads.push({ mode, page, proto, rep });
    if (!spec.ordered) shuffle(loads, seed);
    const session = await Session.open({ profile, outDir, log });
    try {
      let i = 0;
      for (const l of loads) {
        const rec = await session.load({ ...l, proto: l.proto === 'h2' ? 'h2' : 'h1', runId: `${runId}-${profile}-${i + 1}` });
        fs.appendFileSync(runsFile, JSON.stringify(rec) + '\n');
        records.push(rec);
        i++;
        log(formatLoad(rec, `${i}/${loads.length}`));
        onLoad?.(rec);
      }
    } finally {
      await session.close();
    }
  }
  return { records, runsFile };
}

export function formatLoad(r, n = '') {
  if (!r.ok) return `${n} ${r.profile} ${r.mode} ${r.page} ${r.proto}: FAILED ${r.error}`;
  const mb = (x) => (x / 1e6).toFixed(2);
  const d = r.decision ? `multipath=${r.decision.multipath} θ1=${r.decision.theta1} θ2=${r.decision.theta2 ?? 'none'} — ${r.decision.reason}` +
    (r.decision.actuation ? `\n      actuation: ${r.decision.actuation}` : '') : '';
  return (
    `${n} ${r.profile} ${r.mode.padEnd(11)} ${r.page.padEnd(8)} ${r.proto.padEnd(8)} PLT ${(r.plt_ms / 1000).toFixed(2)} s` +
    `  wlan0 ${mb(r.link_bytes.wlan0.rx)} MB  wwan0 ${mb(r.link_bytes.wwan0.rx)} MB  header ${r.header_seen ? 'on every request' : 'MISSING'}` +
    (d ? `\n      decision: ${d}` : '')
  );
}

export function writeReport(outDir) {
  const report = path.join(dist, 'report');
  execFileSync(report, ['--runs', path.join(outDir, 'runs.jsonl'), '--out', outDir], { stdio: 'inherit' });
  return path.join(outDir, 'report.md');
}

async function main() {
  const { values } = parseArgs({
    options: {
      grid: { type: 'string', default: 'full' },
      profiles: { type: 'string' },
      modes: { type: 'string' },
      pages: { type: 'string' },
      protos: { type: 'string' },
      reps: { type: 'string' },
      out: { type: 'string', default: path.join(root, 'out') },
      seed: { type: 'string' },
      fresh: { type: 'boolean', default: false },
    },
  });
  const base = GRIDS[values.grid];
  if (!base) throw new Error(`unknown grid ${values.grid}; one of ${Object.keys(GRIDS).join(', ')}`);
  const list = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);
  const spec = {
    profiles: values.profiles ? list(values.profiles) : base.profiles,
    modes: values.modes ? list(values.modes) : base.modes,
    pages: values.pages ? list(values.pages) : base.pages,
    protos: values.protos ? list(values.protos) : base.protos,
    reps: values.reps ? Number(values.reps) : base.reps,
    ordered: base.ordered,
  };
  if (base.runner === 'downloads') {
    if (values.fresh) fs.rmSync(path.join(values.out, 'runs.jsonl'), { force: true });
    console.log(`grid: ${JSON.stringify(spec)}`);
    const { records } = await runDownloads(spec, { outDir: values.out, seed: values.seed ? Number(values.seed) : undefined });
    const text = summarize(records);
    fs.writeFileSync(path.join(values.out, 'downloads.txt'), text + '\n');
    console.log(`\n${text}\n\nruns in ${path.join(values.out, 'runs.jsonl')}, summary in ${path.join(values.out, 'downloads.txt')}`);
    return;
  }
  for (const m of spec.modes) if (!MODES.includes(m)) throw new Error(`unknown mode ${m}; one of ${MODES.join(', ')}`);
  if (values.fresh) fs.rmSync(path.join(values.out, 'runs.jsonl'), { force: true });
  console.log(`grid: ${JSON.stringify(spec)}`);
  const { records } = await runGrid(spec, { outDir: values.out, seed: values.seed ? Number(values.seed) : undefined });
  const failed = records.filter((r) => !r.ok).length;
  console.log(`${records.length} loads, ${failed} failed; runs in ${path.join(values.out, 'runs.jsonl')}`);
  console.log(`report: ${writeReport(values.out)}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    console.error(err.message || err);
    process.exit(1);
  });
}
