// Benchmark (not a test): decide round-trip latency through a real Chromium native-messaging port, and
// the time from webNavigation.onBeforeNavigate to the per-origin header rule being in place.
import { launch, makeProfile, untilStatus } from './lib/browser.mjs';
import { startRecorder } from './lib/recorder.mjs';
import { commandLine } from './lib/cli.mjs';

commandLine('bench-slice', `usage: node e2e/bench-slice.mjs

Benchmark: decide round trips through a real Chromium native-messaging port, and the time from onBeforeNavigate to
the per-origin header rule. MPSURF_BENCH_N (default 2000) round trips, MPSURF_BENCH_NAVS (default 60) navigations.
`);

const N = Number(process.env.MPSURF_BENCH_N || 2000);
const NAVS = Number(process.env.MPSURF_BENCH_NAVS || 60);

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const fmt = (xs) =>
  `p50 ${pct(xs, 50).toFixed(3)} ms  p99 ${pct(xs, 99).toFixed(3)} ms  mean ${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(3)} ms  (n=${xs.length})`;

const profile = makeProfile();
const { context, worker } = await launch(profile.dir);
const site = await startRecorder({ host: '127.0.0.1' });
try {
  await untilStatus(worker, (s) => s.host === 'connected');
  const rt = await worker.evaluate((n) => self.mpsurf.benchDecide(n), N);
  console.log(`decide round trip, service worker -> host -> service worker:  ${fmt(rt)}`);

  const page = await context.newPage();
  const ruleLag = [];
  for (let i = 0; i < NAVS; i++) {
    // A new origin each time (the port changes the origin), so every navigation installs a new rule.
    const other = await startRecorder({ host: '127.0.0.1' });
    await page.goto(`${other.origin}/page/b${i}`, { waitUntil: 'load' });
    const t = await worker.evaluate((o) => self.mpsurf.navTimings(o), other.origin);
    if (t && t.ruleInstalledAt && t.navStartedAt) ruleLag.push(t.ruleInstalledAt - t.navStartedAt);
    await other.close();
  }
  console.log(`onBeforeNavigate -> per-origin rule in place:                 ${fmt(ruleLag)}`);
} finally {
  await context.close();
  await site.close();
  profile.remove();
}
