// The grid's argument handling and planning, without running the testbed: profiles and corpus files by relative
// and absolute path, output names from the profile's id, page selection, random order, the time estimate, and the
// command line's --help, bad flags and --dry-run. Needs nothing but Node (dist/origin for the --dry-run part).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GRIDS, UsageError, parseGridArgs, expandPages, planLoads, shuffle, estimateSeconds, buildPlan } from './grid.mjs';
import { Session, readProfile, siteAddresses, traceOffsetMs } from './lib.mjs';
import { dist, root } from '../lib/paths.mjs';

const gridScript = path.join(root, 'e2e', 'testbed', 'grid.mjs');
const haveOrigin = fs.existsSync(path.join(dist, 'origin'));

// A researcher's own link: the baseline under another id, in a directory of its own.
function myLink(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-grid-args-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const p = JSON.parse(fs.readFileSync(path.join(root, 'e2e', 'profiles', 'baseline.json'), 'utf8'));
  p.id = 'my-link';
  fs.writeFileSync(path.join(dir, 'my-link.json'), JSON.stringify(p));
  return dir;
}

// A manifest as dist/origin corpus --list --json gives it, cut down to what the grid reads.
const manifest = {
  pages: [
    { name: 'e3-20k', set: 'e3', host: 'e3-20k.origin.test', proto: 'h2', bytes: 20000 },
    { name: 'wiki', set: 'table1', host: 'wiki.origin.test', proto: 'h2', bytes: 601200 },
    { name: 'gov', set: 'table1', host: 'gov.origin.test', proto: 'h2', bytes: 2774700 },
    { name: 'news-list', set: 'mixed', host: 'news.origin.test', proto: 'h2', bytes: 60000 },
    { name: 'news-gallery-1', set: 'mixed', host: 'news.origin.test', proto: 'h2', bytes: 3000000 },
    { name: 'forum-album-1', set: 'mixed', host: 'forum.origin.test', proto: 'http/1.1', bytes: 2000000 },
  ],
};

test('a profile file by absolute path: read, and outputs named after its id', (t) => {
  const dir = myLink(t);
  const abs = path.join(dir, 'my-link.json');
  const a = parseGridArgs(['--grid', 'decisions', '--profiles', abs], { cwd: '/' });
  assert.deepEqual(a.spec.profiles, [abs]);
  assert.equal(a.profiles[0].id, 'my-link');
  assert.equal(a.profiles[0].tech, 'lte');
  // The grid's own settings stay; only the profiles changed.
  assert.deepEqual(a.spec.modes, GRIDS.decisions.modes);
  assert.equal(a.spec.reps, GRIDS.decisions.reps);
});

test('a profile file by relative path, against the directory npm was started in', (t) => {
  const dir = myLink(t);
  const a = parseGridArgs(['--profiles', 'my-link.json,baseline'], { cwd: dir });
  assert.deepEqual(a.spec.profiles, [path.join(dir, 'my-link.json'), 'baseline']);
  assert.deepEqual(a.profiles.map((p) => p.id), ['my-link', 'baseline']);
  const b = parseGridArgs(['--profiles', './my-link.json', '--out', 'res', '--corpus', 'my-link.json'], { cwd: dir });
  assert.equal(b.outDir, path.join(dir, 'res'));
  assert.deepEqual(b.corpus, [path.join(dir, 'my-link.json')]);
});

test('bad arguments are usage errors with one clear line', (t) => {
  const dir = myLink(t);
  const cases = [
    [['--bogus'], /Unknown option/],
    [['stray'], /Unexpected argument/],
    [['--grid', 'nope'], /unknown grid nope/],
    [['--modes', 'sp-wifi,mp-sometimes'], /unknown mode mp-sometimes/],
    [['--protos', 'h3'], /unknown protocol h3/],
    [['--reps', '0'], /--reps 0/],
    [['--reps', '2.5'], /--reps 2.5/],
    [['--trace-reps', '0'], /--trace-reps 0/],
    [['--seed=-1'], /--seed -1/], [['--seed', 'x'], /--seed x/],
    [['--history', 'forever'], /--history forever/],
    [['--preference', 'eco'], /--preference eco: one of performance, balanced, battery-saver/],
    [['--preference', ','], /--preference: empty/],
    [['--first-rep=-1'], /--first-rep -1/],
    [['--pages', ','], /--pages: empty/],
    [['--profiles', 'nope-profile'], /no built-in profile nope-profile/],
    [['--profiles', path.join(dir, 'missing.json')], /does not exist/],
    [['--profiles', `${path.join(dir, 'my-link.json')},./my-link.json`], /two profiles have the id my-link/],
    [['--corpus', 'absent.json'], /no such file/],
    [['--browser', 'safari'], /--browser safari: one of chromium, firefox/],
    [['--grid', 'downloads', '--browser', 'firefox'], /the downloads grid runs no browser/],
  ];
  for (const [argv, re] of cases) {
    assert.throws(() => parseGridArgs(argv, { cwd: dir }), (err) => err instanceof UsageError && re.test(err.message) && !err.message.includes('\n'), argv.join(' '));
  }
  fs.writeFileSync(path.join(dir, 'bad.json'), '{"id": "Bad Id", "links": {"wwan0": {"tech": "lte"}}}');
  assert.throws(() => parseGridArgs(['--profiles', 'bad.json'], { cwd: dir }), /is not a profile id/);
  assert.deepEqual(parseGridArgs(['-h']), { help: true });
  // Chromium unless told: the grids measured so far ran in it.
  assert.equal(parseGridArgs([], { cwd: dir }).spec.browser, 'chromium');
  assert.equal(parseGridArgs(['--browser', 'firefox'], { cwd: dir }).spec.browser, 'firefox');
});

test('page selectors: names, sets, site hosts and "large"', () => {
  assert.deepEqual(expandPages(['news.origin.test'], manifest), ['news-list', 'news-gallery-1']);
  assert.deepEqual(expandPages(['mixed'], manifest), ['news-list', 'news-gallery-1', 'forum-album-1']);
  assert.deepEqual(expandPages(['large', 'e3-20k'], manifest), ['gov', 'wiki', 'e3-20k']);
  assert.deepEqual(expandPages(['wiki', 'table1'], manifest), ['wiki', 'gov']);
  assert.throws(() => expandPages(['nope'], manifest), /unknown page, set or site: nope/);
});

test('the plan: every combination once per rep, the site protocol resolved, shuffled by the seed', () => {
  const spec = { modes: ['sp-wifi', 'mp-adaptive'], protos: ['site'], reps: 3 };
  const pages = ['news-list', 'forum-album-1'];
  const a = planLoads(spec, pages, manifest, 42);
  assert.equal(a.length, 2 * 2 * 3);
  const key = (l) => `${l.mode} ${l.page} ${l.proto} ${l.rep}`;
  assert.equal(new Set(a.map(key)).size, a.length);
  for (const l of a) assert.equal(l.proto, l.page === 'forum-album-1' ? 'http/1.1' : 'h2');
  // The same seed gives the same order; another seed another; ordered grids keep theirs.
  assert.deepEqual(planLoads(spec, pages, manifest, 42), a);
  assert.notDeepEqual(planLoads(spec, pages, manifest, 43).map(key), a.map(key));
  const ordered = planLoads({ ...spec, ordered: true }, pages, manifest, 42);
  assert.deepEqual(ordered.map(key).slice(0, 3), ['sp-wifi news-list h2 0', 'sp-wifi news-list h2 1', 'sp-wifi news-list h2 2']);
  // Both protocols asked for, and the site's one as well: each once.
  assert.equal(planLoads({ ...spec, protos: ['site', 'h2', 'http/1.1'] }, pages, manifest, 1).length, 2 * 2 * 2 * 3);
  // The shuffle is a permutation.
  const xs = [...Array(50).keys()];
  assert.deepEqual([...shuffle([...xs], 9)].sort((x, y) => x - y), xs);
});

test('preferences: the adaptive modes once per preference, the others once; repetitions from --first-rep', () => {
  const a = parseGridArgs(['--grid', 'decisions', '--profiles', 'baseline', '--pages', 'gov']);
  assert.deepEqual(a.spec.modes, ['sp-wifi', 'mp-always', 'mp-rule', 'mp-adaptive']);
  assert.deepEqual(a.spec.preferences, ['performance', 'balanced', 'battery_saver']);
  // Other grids decide in the mode a fresh install has; the command line takes the options page's names.
  assert.deepEqual(parseGridArgs(['--grid', 'smoke']).spec.preferences, ['performance']);
  assert.deepEqual(parseGridArgs(['--preference', 'battery-saver,performance,battery_saver']).spec.preferences, ['battery_saver', 'performance']);
  const spec = { modes: ['sp-wifi', 'mp-rule', 'mp-adaptive'], protos: ['site'], reps: 2, preferences: ['performance', 'battery_saver'], firstRep: 3 };
  const loads = planLoads(spec, ['gov', 'news-list'], manifest, 7);
  assert.equal(loads.length, 2 * 2 * (1 + 1 + 2));
  for (const l of loads) {
    assert.ok(l.rep === 3 || l.rep === 4, `rep ${l.rep}`);
    assert.equal(l.preference !== undefined, l.mode === 'mp-adaptive', JSON.stringify(l));
  }
  // Each page and repetition has one load of each mode and one adaptive load per preference: the report pairs them.
  const key = (l) => `${l.page} ${l.rep}`;
  for (const k of new Set(loads.map(key))) {
    const of = loads.filter((l) => key(l) === k).map((l) => `${l.mode}${l.preference ? ' ' + l.preference : ''}`).sort();
    assert.deepEqual(of, ['mp-adaptive battery_saver', 'mp-adaptive performance', 'mp-rule', 'sp-wifi']);
  }
  // Interleaved: one random order over every mode and preference, not a block of each (which would change kind 3 times).
  const kinds = loads.map((l) => `${l.mode}${l.preference ?? ''}`);
  const changes = kinds.filter((k, i) => i > 0 && k !== kinds[i - 1]).length;
  assert.ok(changes > 6, `${changes} changes of mode in ${kinds.join(', ')}`);
});

test('the time estimate grows with the loads and the bytes over the WiFi rate', () => {
  const profile = { wifiDownMbit: 7.04 };
  const small = estimateSeconds([{ profile, loads: [{ page_bytes: 60000 }] }]);
  const large = estimateSeconds([{ profile, loads: [{ page_bytes: 3000000 }] }]);
  const slowWiFi = estimateSeconds([{ profile: { wifiDownMbit: 2 }, loads: [{ page_bytes: 3000000 }] }]);
  assert.ok(small > 0 && large > small && slowWiFi > large, `${small} ${large} ${slowWiFi}`);
  assert.ok(Math.abs(estimateSeconds([{ profile, loads: [{ page_bytes: 1 }, { page_bytes: 1 }] }]) - 2 * estimateSeconds([{ profile, loads: [{ page_bytes: 1 }] }])) < 10);
  const plan = buildPlan({ spec: { modes: ['sp-wifi'], pages: ['gov'], protos: ['h2'], reps: 2 }, profiles: [readProfile('3g')] }, manifest, 1);
  assert.equal(plan[0].profile.wifiDownMbit, 7.04);
  assert.deepEqual(plan[0].loads.map((l) => l.page_bytes), [2774700, 2774700]);
});

test('a trace-driven profile runs the grid\'s trace repetitions, the others its repetitions', () => {
  const a = parseGridArgs(['--grid', 'decisions', '--profiles', 'baseline,att-lte-driving', '--pages', 'gov']);
  assert.deepEqual(a.profiles.map((p) => p.trace), [false, true]);
  const reps = (parsed) => buildPlan(parsed, manifest, 1).map((p) => Math.max(...p.loads.map((l) => l.rep)) + 1);
  assert.deepEqual(reps(a), [GRIDS.decisions.reps, GRIDS.decisions.traceReps]);
  assert.ok(GRIDS.decisions.traceReps > GRIDS.decisions.reps);
  // --trace-reps sets them; it never lowers a trace profile below --reps.
  assert.deepEqual(reps(parseGridArgs(['--grid', 'decisions', '--profiles', 'baseline,att-lte-driving', '--pages', 'gov', '--trace-reps', '7'])), [3, 7]);
  assert.deepEqual(reps(parseGridArgs(['--grid', 'decisions', '--profiles', 'baseline,att-lte-driving', '--pages', 'gov', '--reps', '4', '--trace-reps', '2'])), [4, 4]);
  // Grids without traceReps run every profile alike.
  assert.deepEqual(reps(parseGridArgs(['--grid', 'proxy', '--profiles', 'baseline,att-lte-driving', '--pages', 'gov'])), [3, 3]);
});

test('each corpus site gets a server address of its own', () => {
  const a = siteAddresses(manifest, '10.200.3.2');
  assert.deepEqual(Object.keys(a), ['e3-20k.origin.test', 'wiki.origin.test', 'gov.origin.test', 'news.origin.test', 'forum.origin.test']);
  assert.equal(new Set(Object.values(a)).size, 5);
  assert.equal(a['e3-20k.origin.test'], '10.200.3.16');
  const many = { pages: [...Array(240).keys()].map((i) => ({ host: `s${i}.test` })) };
  assert.throws(() => siteAddresses(many, '10.200.3.2'), /more than the server's \/24/);
});

test('the command: --help exits 0, a bad flag 2 with one line', () => {
  const help = spawnSync(process.execPath, [gridScript, '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^usage: npm run testbed/);
  assert.match(help.stdout, /--grid NAME .*decisions, decisions-quick/);
  const bad = spawnSync(process.execPath, [gridScript, '--nope'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
  assert.equal(bad.stdout, '');
});

test('the command with a profile file by absolute path plans loads and names outputs after its id', { skip: !haveOrigin && 'dist/origin is not built' }, (t) => {
  const dir = myLink(t);
  const abs = path.join(dir, 'my-link.json');
  const out = path.join(dir, 'out');
  // npm runs scripts from the package root and says where it was started in INIT_CWD.
  const r = spawnSync(process.execPath, [gridScript, '--grid', 'decisions-quick', '--profiles', abs, '--reps', '1', '--out', 'out', '--seed', '3', '--dry-run'], {
    encoding: 'utf8',
    cwd: root,
    env: { ...process.env, INIT_CWD: dir },
  });
  assert.equal(r.status, 0, r.stderr);
  // 5 pages x (sp-wifi, mp-always, mp-rule, and mp-adaptive under 3 preferences), 1 repetition.
  assert.match(r.stdout, new RegExp(`profile my-link \\(${abs.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\): 30 loads`));
  assert.ok(r.stdout.includes(path.join(out, 'origin-my-link.jsonl')), r.stdout);
  assert.ok(r.stdout.includes(path.join(out, 'timeline', 'my-link')), r.stdout);
  assert.ok(!r.stdout.includes(`origin-${abs}`));
  assert.match(r.stdout, /30 loads; estimated \d+ (s|min)/);
  assert.match(r.stdout, / mp-adaptive news-list h2 rep 0 battery_saver\n/);
  assert.ok(!fs.existsSync(out), 'a dry run wrote output');
  // The corpus manifest the plan used is the origin's own.
  const names = JSON.parse(execFileSync(path.join(dist, 'origin'), ['corpus', '--list', '--json'], { encoding: 'utf8' })).pages.map((p) => p.name);
  for (const p of GRIDS['decisions-quick'].pages) assert.ok(names.includes(p), p);
  for (const p of GRIDS.decisions.pages) assert.ok(names.includes(p), p);
});

test('trace offsets: one per page and repetition, the same in every mode, spread over the first 5 minutes', () => {
  assert.equal(traceOffsetMs('gov', 0), traceOffsetMs('gov', 0));
  const offsets = [];
  for (const page of ['gov', 'wiki', 'news-list', 'forum-album-1']) for (const rep of [0, 1, 2]) offsets.push(traceOffsetMs(page, rep));
  for (const o of offsets) assert.ok(Number.isInteger(o) && o >= 0 && o < 300000, `offset ${o}`);
  assert.ok(new Set(offsets).size >= 11, `12 loads share offsets: ${offsets}`);
  assert.ok(Math.max(...offsets) - Math.min(...offsets) > 60000, `offsets bunched: ${offsets}`);
});

// A load's byte counts start once the links are quiet: what a previous load left in a link's queue is not the next
// load's. Counters that keep moving are given up on after maxMs, and the record says so.
test('a load starts counting once both links have been quiet', async () => {
  const readings = (moves) => {
    let i = 0;
    let rx = 0;
    return {
      counters: () => ({ wlan0: { rx_bytes: 0, tx_bytes: 0 }, wwan0: { rx_bytes: (rx += i++ < moves ? 1500 : 0), tx_bytes: 0 } }),
      inFlight: () => 0,
    };
  };
  const draining = readings(4);
  const q = await Session.prototype.quietCounters.call(draining, { quietMs: 60, maxMs: 2000, everyMs: 10 });
  assert.equal(q.quiet, true);
  assert.ok(q.waitedMs >= 60, `waited ${q.waitedMs} ms`);
  assert.equal(q.counters.wwan0.rx_bytes, 4 * 1500, 'the reading taken before the last bytes arrived');
  const busy = readings(Infinity);
  const b = await Session.prototype.quietCounters.call(busy, { quietMs: 60, maxMs: 150, everyMs: 10 });
  assert.equal(b.quiet, false);
  assert.ok(b.waitedMs >= 150 && b.waitedMs < 1000, `waited ${b.waitedMs} ms`);
  // Counters still, but a packet inside a link (a trace's delivery gap): not quiet until it has come out.
  let held = 12;
  const gap = { counters: () => ({ wlan0: { rx_bytes: 0, tx_bytes: 0 }, wwan0: { rx_bytes: 0, tx_bytes: 0 } }), inFlight: () => (held-- > 0 ? 1 : 0) };
  const g = await Session.prototype.quietCounters.call(gap, { quietMs: 20, maxMs: 2000, everyMs: 10 });
  assert.equal(g.quiet, true);
  assert.ok(held < 0, `returned with ${held + 1} checks of a packet in flight left`);
});
