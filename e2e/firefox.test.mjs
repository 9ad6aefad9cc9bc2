// The extension in Debian's Firefox ESR, driven over WebDriver BiDi (puppeteer-core), with the same checks as in
// Chromium (slice.test.mjs, ui.test.mjs): the welcome page's consent, the header on every request (the origin
// server logs each one), the decision shown in the popup, a setting made in the options page reaching the rules
// and the host, the event page kept while its host runs, the host killed and restarted, and no header without a
// host. The proxy route through the relay is proxy.test.mjs's. Needs the build and /usr/bin/firefox-esr
// (scripts/setup.sh installs it); skips with the reason otherwise.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { hostPids, until, untilRules, untilStatus } from './lib/browser.mjs';
import { launchFirefox, makeFirefoxProfile } from './lib/firefox.mjs';
import { startRecorder } from './lib/recorder.mjs';
import { firefoxExtensionDir, firefoxPath, hostBinary, root, vectorsDir } from './lib/paths.mjs';

const NAVIGATIONS = 20;
// Firefox suspends an idle event page after 30 s; the test makes it 2 s, so that a page that were let go while its
// host runs would be gone within the test's wait.
const IDLE_MS = 2000;
const baseline = JSON.parse(fs.readFileSync(path.join(vectorsDir, 'header.json'), 'utf8')).cases.find((c) => c.name === 'baseline');
const shots = path.join(root, 'out', 'screenshots');

const missing = [firefoxPath, hostBinary, path.join(firefoxExtensionDir, 'manifest.json')].filter((p) => !fs.existsSync(p));
const skip = missing.length ? `not built or not installed: ${missing.join(', ')} (run npm run setup)` : false;

let profile, ff, site, thirdParty;

before(async () => {
  if (skip) return;
  thirdParty = await startRecorder({ host: 'localhost' });
  site = await startRecorder({ host: '127.0.0.1', thirdParty: () => thirdParty.origin });
  profile = makeFirefoxProfile();
  ff = await launchFirefox(profile, { consent: false, prefs: { 'extensions.background.idle.timeout': IDLE_MS } });
});

after(async () => {
  await ff?.close();
  await site?.close();
  await thirdParty?.close();
  profile?.remove();
});

async function load(page, id) {
  await page.goto(`${site.origin}/page/${id}`, { waitUntil: 'load' });
  await page.waitForFunction(() => document.title.startsWith('done'));
  return [...site.forPage(id), ...thirdParty.forPage(id)];
}

test('the add-on runs its event page in Firefox, starts the host (Firefox’s caller arguments) and takes consent from its welcome page', { skip }, async () => {
  assert.equal(await ff.call('browser'), 'firefox');
  const { status } = await untilStatus(ff, (s) => s.host === 'connected', 15000);
  assert.equal(status.policy.theta1, baseline.policy.theta1);
  assert.equal(status.policy.multipath, true);
  // Firefox started the host with its manifest's path and the add-on's ID (PROTOCOL.md §1).
  const [pid] = hostPids(profile.host);
  const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  assert.deepEqual(argv, [profile.host, profile.manifest, 'extension@mpsurf']);
  // Nothing is multipath before the user agrees; the first-run page's button is how they do.
  assert.equal((await ff.call('multipath')).settings.consent_at, null);
  await ff.ext.click('#agree');
  const mp = await until(() => ff.call('multipath'), (m) => m.settings.consent_at !== null, 'consent from the welcome page');
  assert.equal(mp.gate.paused, false, JSON.stringify(mp.gate));
  await ff.ext.waitForFunction(() => /You agreed on/.test(document.getElementById('state').textContent));
  await untilRules(ff, (rules) => rules.length > 0);
  // Firefox knows neither "webtransport" nor "webbundle": the rules it holds name only the types it knows.
  const net = (await ff.call('rules')).find((r) => r.id === 1);
  assert.ok(net.condition.resourceTypes.includes('main_frame') && !net.condition.resourceTypes.includes('webtransport'), JSON.stringify(net));
});

test(`${NAVIGATIONS} of ${NAVIGATIONS} navigations carry the header on every request`, { skip }, async () => {
  const page = await ff.newTab();
  const decided = new Set([baseline.header]);
  for (let i = 0; i < NAVIGATIONS; i++) {
    const seen = await load(page, `f${i}`);
    const paths = seen.map((r) => `${r.host}${r.path}`);
    assert.ok(seen.length >= 6, `navigation ${i}: only ${paths.join(' ')}`);
    assert.ok(seen.some((r) => r.path === '/tp.js'), `navigation ${i}: no third-party request`);
    const own = Object.values(await ff.call('decisions')).find((d) => d && d.origin === site.origin);
    assert.ok(own?.header, `navigation ${i}: no decision recorded for ${site.origin}`);
    decided.add(own.header);
    for (const r of seen) assert.ok(decided.has(r.header), `navigation ${i}: ${r.host}${r.path}: ${r.header} is none of ${[...decided]}`);
  }
  const mine = Object.values(await ff.call('decisions')).find((d) => d && d.origin === site.origin);
  assert.equal(mine.source, 'host');
  assert.equal(mine.model?.id, 'costbenefit');
  // The content script's load reports reach the host, as in Chromium.
  const reports = await until(() => ff.call('reports'), (r) => r.state !== 'unknown', 'the host’s answer to the load reports');
  assert.equal(reports.state, 'ok', JSON.stringify(reports));
  await page.close();
});

test('the popup shows this tab’s decision, the host and the health, as text', { skip }, async () => {
  const page = await ff.newTab();
  await load(page, 'popup-1');
  const decision = await until(
    async () => Object.values(await ff.call('decisions')).find((d) => d && d.origin === site.origin && d.nav && !d.stale),
    (d) => d?.source === 'host',
    'the page’s decision',
  );
  // Opened behind the page's tab, the popup takes the page for "this tab", as the toolbar popup would.
  const popup = await ff.openExtensionPage('popup.html', { active: false });
  await popup.waitForFunction(() => document.getElementById('health').children.length > 0);
  // The host's own status (which says how the browser was started) arrives after the first render.
  await popup.waitForFunction(() => /Browser connections are/.test(document.body.innerText), { timeout: 10000 });
  const text = await popup.evaluate(() => document.body.innerText);
  assert.equal(await popup.evaluate(() => document.getElementById('site').textContent), new URL(site.origin).host);
  assert.match(await popup.evaluate(() => document.getElementById('title').textContent), decision.multipath ? /\+ cellular$/ : / only$/);
  assert.match(text, /Host running/);
  assert.match(text, /Browser connections are plain TCP/);
  // The fix it suggests starts Firefox, not Chromium.
  assert.match(text, /Start Firefox with:\s*mptcpize run firefox/);
  assert.doesNotMatch(text, /chromium/i);
  assert.equal(await popup.evaluate(() => document.getElementById('error').hidden), true);
  fs.mkdirSync(shots, { recursive: true });
  await popup.setViewport({ width: 380, height: 900 });
  await popup.screenshot({ path: path.join(shots, 'popup-firefox.png'), fullPage: true });
  await popup.close();
  await page.close();
});

test('options: a mode and a site rule reach the event page, the rules, the host and the requests', { skip }, async () => {
  const opts = await ff.openExtensionPage('options.html');
  await opts.waitForFunction(() => document.getElementById('sync').textContent !== '');
  await opts.click('#mode-battery_saver');
  await until(() => ff.call('settings'), (s) => s.prefs.mode === 'battery_saver', 'mode in the event page');
  // "never" for the third-party host: its requests say mp=?0 while the page's own keep their decision's header.
  await opts.type('#override-host', 'localhost');
  await opts.select('#override-rule', 'never');
  await opts.click('#override-add');
  const s = await until(() => ff.call('settings'), (x) => x.prefs.overrides.some((o) => o.host === 'localhost' && o.rule === 'never') && x.prefsSync.hostPrefs?.overrides?.length > 0, 'the override in the event page and the host');
  assert.equal(s.prefsSync.state, 'ok', JSON.stringify(s.prefsSync));
  assert.equal(s.prefsSync.hostPrefs.mode, 'battery_saver');
  await untilRules(ff, (rules) => rules.some((r) => r.condition.requestDomains?.includes('localhost')));
  const page = await ff.newTab();
  await load(page, 'never-1');
  const tp = thirdParty.forPage('never-1');
  assert.ok(tp.length >= 1);
  for (const r of tp) assert.match(r.header ?? '', /mp=\?0/, `${r.path} carried ${r.header}`);
  for (const r of site.forPage('never-1')) assert.match(r.header ?? '', /^v=1, mp/, `${r.path} carried ${r.header}`);
  await page.close();
  await opts.close();
});

test(`the event page stays while its host runs (idle timeout ${IDLE_MS} ms)`, { skip }, async () => {
  const [before] = hostPids(profile.host);
  const { reconnects } = await ff.call('status');
  // Nothing asks the event page anything for three idle timeouts: a page Firefox let go would take its host with it.
  await new Promise((r) => setTimeout(r, 3 * IDLE_MS + 500));
  assert.deepEqual(hostPids(profile.host), [before], 'the host process is the same one');
  const s = await ff.call('status');
  assert.equal(s.host, 'connected');
  assert.equal(s.reconnects, reconnects);
});

test('after kill -9 of the host the add-on reconnects and decisions resume', { skip }, async () => {
  const decidedBefore = (await ff.call('status')).lastDecisionAt;
  const before = hostPids(profile.host);
  assert.equal(before.length, 1, `expected one host process, found ${before.length}`);
  const t0 = Date.now();
  process.kill(before[0], 'SIGKILL');
  const { status } = await untilStatus(ff, (s) => s.host === 'connected' && s.reconnects >= 1 && hostPids(profile.host).some((p) => p !== before[0]), 10000);
  await untilRules(ff, (rules) => rules.length > 0);
  console.log(`# reconnect after kill -9: ${Date.now() - t0} ms (reconnects=${status.reconnects})`);
  assert.equal(hostPids(profile.host).length, 1, 'never more than one host process');
  const page = await ff.newTab();
  const seen = await load(page, 'after-kill');
  for (const r of seen.filter((x) => x.host.startsWith('127.0.0.1'))) assert.match(r.header ?? '', /^v=1, mp/, r.path);
  assert.ok((await ff.call('status')).lastDecisionAt > decidedBefore, 'a decision arrived after the reconnect');
  await page.close();
});

test('with the host uninstalled: no header, navigation works, status says missing', { skip }, async () => {
  profile.uninstall();
  for (const pid of hostPids(profile.host)) process.kill(pid, 'SIGKILL');
  const { status } = await untilStatus(ff, (s) => s.host === 'missing', 15000);
  assert.match(status.detail, /is not installed: No such native application org\.mpsurf\.host/);
  assert.deepEqual(await ff.call('rules'), [], 'no header rule may stay installed without a host');
  const page = await ff.newTab();
  const seen = await load(page, 'no-host');
  assert.ok(seen.length >= 6);
  for (const r of seen) assert.equal(r.header, null, `${r.path} carried ${r.header}`);
  await page.close();
});
