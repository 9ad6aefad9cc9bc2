// The vertical slice in real Chromium: extension -> native host -> Multipath-Policy header.
// Needs the build (npm run build) and /usr/bin/chromium; `npm test` provides both.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launch, makeProfile, untilStatus, untilRules, hostPids } from './lib/browser.mjs';
import { startRecorder } from './lib/recorder.mjs';
import { chromiumPath, hostBinary, extensionDir, vectorsDir } from './lib/paths.mjs';

const NAVIGATIONS = 50;
const headerVectors = JSON.parse(fs.readFileSync(path.join(vectorsDir, 'header.json'), 'utf8')).cases;
const baseline = headerVectors.find((c) => c.name === 'baseline');

const missing = [chromiumPath, hostBinary, path.join(extensionDir, 'manifest.json')].filter((p) => !fs.existsSync(p));
const skip = missing.length ? `not built or not installed: ${missing.join(', ')} (run npm run build / npm start)` : false;

let profile, browser, site, thirdParty;

before(async () => {
  if (skip) return;
  thirdParty = await startRecorder({ host: 'localhost' });
  site = await startRecorder({ host: '127.0.0.1', thirdParty: () => thirdParty.origin });
  profile = makeProfile();
  browser = await launch(profile.dir);
});

after(async () => {
  await browser?.context.close();
  await site?.close();
  await thirdParty?.close();
  profile?.remove();
});

test('the host is connected and hands out the baseline policy', { skip }, async () => {
  const { status } = await untilStatus(browser.worker, (s) => s.host === 'connected');
  await untilRules(browser.worker, (rules) => rules.length > 0);
  assert.equal(status.policy.theta1, baseline.policy.theta1);
  assert.equal(status.policy.theta2, baseline.policy.theta2);
  assert.equal(status.policy.deadline_ms, baseline.policy.deadline_ms);
  assert.equal(status.policy.multipath, true);
});

test(`${NAVIGATIONS} of ${NAVIGATIONS} navigations carry the header on every request`, { skip }, async () => {
  const page = await browser.context.newPage();
  let carried = 0;
  const decided = new Set([baseline.header]); // the network-wide header, then each decision's for this origin
  for (let i = 0; i < NAVIGATIONS; i++) {
    const id = `n${i}`;
    await page.goto(`${site.origin}/page/${id}`, { waitUntil: 'load' });
    await page.waitForFunction(() => document.title.startsWith('done'));
    const seen = [...site.forPage(id), ...thirdParty.forPage(id)];
    const paths = seen.map((r) => `${r.host}${r.path}`);
    // main frame, css, js, image, fetch, third-party script
    assert.ok(seen.length >= 6, `navigation ${i}: only ${paths.join(' ')}`);
    assert.ok(seen.some((r) => r.path.startsWith('/page/')), `navigation ${i}: no main-frame request`);
    assert.ok(seen.some((r) => r.path === '/tp.js'), `navigation ${i}: no third-party request`);
    // Each request carries a header: the network-wide policy's, or the origin's previous decision's, until the
    // page's own decision is in, then that one (the model's, for this page's path class and what it has learned).
    const decisions = await browser.worker.evaluate(() => self.mpsurf.decisions());
    const own = Object.values(decisions).find((d) => d && d.origin === site.origin);
    assert.ok(own?.header, `navigation ${i}: no decision recorded for ${site.origin}`);
    decided.add(own.header);
    for (const r of seen) assert.ok(decided.has(r.header), `navigation ${i}: ${r.host}${r.path}: ${r.header} is none of ${[...decided]}`);
    carried++;
  }
  assert.equal(carried, NAVIGATIONS);
  const decisions = await browser.worker.evaluate(() => self.mpsurf.decisions());
  const mine = Object.values(decisions).filter((d) => d && d.origin === site.origin);
  assert.ok(mine.length >= 1, `no decision recorded for ${site.origin}: ${JSON.stringify(decisions)}`);
  assert.equal(mine[0].source, 'host');
  assert.equal(mine[0].model?.id, 'costbenefit');
  await page.close();
});

test('after kill -9 of the host the extension reconnects and decisions resume', { skip }, async () => {
  const decidedBefore = await browser.worker.evaluate(() => self.mpsurf.status().lastDecisionAt);
  const before = hostPids(profile.host);
  assert.equal(before.length, 1, `expected one host process, found ${before.length}`);
  const t0 = Date.now();
  process.kill(before[0], 'SIGKILL');
  const { status } = await untilStatus(
    browser.worker,
    (s) => s.host === 'connected' && s.reconnects >= 1 && hostPids(profile.host).some((p) => p !== before[0]),
    10000,
  );
  const reconnectMs = Date.now() - t0;
  // The hello reply marks the host connected; the network-wide rule is installed right after it.
  await untilRules(browser.worker, (rules) => rules.length > 0);
  console.log(`# reconnect after kill -9: ${reconnectMs} ms (reconnects=${status.reconnects})`);
  assert.equal(hostPids(profile.host).length, 1, 'never more than one host process');

  const page = await browser.context.newPage();
  await page.goto(`${site.origin}/page/after-kill`, { waitUntil: 'load' });
  // The page's fetch may end after the load event, as in the other navigations.
  await page.waitForFunction(() => document.title.startsWith('done'));
  const seen = site.forPage('after-kill');
  assert.ok(seen.length >= 5, `only ${seen.map((r) => r.path).join(' ')}`);
  for (const r of seen) assert.match(r.header ?? '', /^v=1, mp/, r.path);
  const decided = await browser.worker.evaluate(() => self.mpsurf.status().lastDecisionAt);
  assert.ok(decided > decidedBefore, 'a decision arrived after the reconnect');
  await page.close();
});

test('with the host uninstalled: no header, navigation works, status says missing', { skip }, async () => {
  profile.uninstall();
  for (const pid of hostPids(profile.host)) process.kill(pid, 'SIGKILL');
  const { status } = await untilStatus(browser.worker, (s) => s.host === 'missing', 15000);
  assert.match(status.detail, /not found|missing/i);
  const rules = await browser.worker.evaluate(() => self.mpsurf.rules());
  assert.deepEqual(rules, [], 'no header rule may stay installed without a host');

  const page = await browser.context.newPage();
  const resp = await page.goto(`${site.origin}/page/no-host`, { waitUntil: 'load' });
  assert.equal(resp.status(), 200);
  await page.waitForFunction(() => document.title.startsWith('done'));
  const seen = [...site.forPage('no-host'), ...thirdParty.forPage('no-host')];
  assert.ok(seen.length >= 6);
  for (const r of seen) assert.equal(r.header, null, `${r.path} carried ${r.header}`);
  await page.close();
});
