// The popup and options pages in real Chromium: settings reach the service worker's rules and the host, a "never"
// override puts mp=?0 on a site's requests, and screenshots of both pages land in out/screenshots/.
// Needs the build (npm run build) and /usr/bin/chromium.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launch, makeProfile, until, untilStatus, untilRules, hostPids } from './lib/browser.mjs';
import { startRecorder } from './lib/recorder.mjs';
import { chromiumPath, hostBinary, extensionDir, extensionId, root } from './lib/paths.mjs';

const missing = [chromiumPath, hostBinary, path.join(extensionDir, 'manifest.json')].filter((p) => !fs.existsSync(p));
const skip = missing.length ? `not built or not installed: ${missing.join(', ')} (run npm run build)` : false;
const shots = path.join(root, 'out', 'screenshots');
const base = `chrome-extension://${extensionId}`;

let profile, browser, site;

before(async () => {
  if (skip) return;
  fs.mkdirSync(shots, { recursive: true });
  site = await startRecorder({ host: '127.0.0.1' });
  profile = makeProfile({ prefix: 'mpsurf-ui-' });
  browser = await launch(profile.dir);
  await untilStatus(browser.worker, (s) => s.host === 'connected');
  await untilRules(browser.worker, (rules) => rules.length > 0);
});

after(async () => {
  await browser?.context.close();
  await site?.close();
  profile?.remove();
});

const settings = () => browser.worker.evaluate(() => self.mpsurf.settings());

test('the popup shows the decision, paths, chart and health, as text', { skip }, async () => {
  const page = await browser.context.newPage();
  await page.goto(`${site.origin}/page/ui-1`, { waitUntil: 'load' });
  // The content script reports the load once the load event is over.
  const loads = await until(() => browser.worker.evaluate(() => self.mpsurf.loads()), (l) => l.length >= 1, 'a load report');
  assert.equal(loads[0].origin, site.origin);
  assert.ok(loads[0].plt_ms > 0 && loads[0].transfer_bytes > 0, JSON.stringify(loads[0]));
  assert.equal(loads[0].protocol, 'http/1.1');
  // The report's reply follows the load record by a round trip to the host.
  const reports = await until(() => browser.worker.evaluate(() => self.mpsurf.reports()), (r) => r.state !== 'unknown', 'the host’s answer to the load report');
  // The host this build ships takes load reports: anything but "ok" (unsupported, an error) fails.
  assert.equal(reports.state, 'ok', JSON.stringify(reports));
  assert.match(reports.detail, /the host keeps \d+ loads of /);

  // The popup reads "the current tab"; opened in a tab of its own, that is itself, so it shows the no-page state.
  const popup = await browser.context.newPage();
  await popup.setViewportSize({ width: 380, height: 760 });
  await popup.goto(`${base}/popup.html`);
  await popup.waitForFunction(() => document.getElementById('health').children.length > 0);
  // The host's own status (which says how the browser was started) arrives after the first render.
  await popup.waitForFunction(() => /Browser connections are/.test(document.body.innerText), null, { timeout: 10000 });
  const text = await popup.locator('body').innerText();
  assert.match(text, /Host running/);
  // This browser was started without mptcpize, and the host sees that in its inherited environment.
  assert.match(text, /Browser connections are plain TCP/);
  assert.match(text, /mptcpize run chromium/);
  assert.match(text, /Helper not installed/);
  assert.match(text, /sudo MPSURF_ENABLE_ACTUATOR=1 bash scripts\/setup\.sh/);
  assert.match(text, /not measured yet|Delay/);
  assert.equal(await popup.locator('#chart svg rect').count(), loads.length);
  assert.equal(await popup.locator('#error').isHidden(), true);
  await popup.screenshot({ path: path.join(shots, 'popup.png'), fullPage: true });
  await popup.emulateMedia({ colorScheme: 'dark' });
  await popup.screenshot({ path: path.join(shots, 'popup-dark.png'), fullPage: true });
  await popup.close();
  await page.close();
});

test('a page that loads before its decision arrives is reported once the decision comes', { skip }, async (t) => {
  // The host is stopped from before the navigation until the page's load report waits in the service worker: the
  // decision comes after the load, as a busy host's does for a fast page. The host keeps the report either way.
  const pids = hostPids(profile.host);
  assert.equal(pids.length, 1, `host processes: ${pids}`);
  const loadsBefore = (await browser.worker.evaluate(() => self.mpsurf.loads())).length;
  const reportsBefore = await browser.worker.evaluate(() => self.mpsurf.reports());
  const page = await browser.context.newPage();
  let waited;
  process.kill(pids[0], 'SIGSTOP');
  try {
    await page.goto(`${site.origin}/page/late-1`, { waitUntil: 'load' });
    // Held, unless the page took longer than the decide timeout (2 s): then the safe default is its record.
    waited = await until(
      () => browser.worker.evaluate((o) => ({ held: self.mpsurf.heldReports(), nav: self.mpsurf.navTimings(o), decisions: self.mpsurf.decisions() }), site.origin),
      (s) => s.held > 0 || (s.nav !== null && s.decisions[String(s.nav.tab)]?.nav === s.nav.nav),
      'the load report held, or the navigation decided',
    );
  } finally {
    process.kill(pids[0], 'SIGCONT');
  }
  const { nav, tab } = waited.nav;
  if (waited.held === 0) t.diagnostic(`not held: the page loaded after the decide timeout (${JSON.stringify(waited.decisions[String(tab)])})`);
  const loads = await until(() => browser.worker.evaluate(() => self.mpsurf.loads()), (l) => l.length > loadsBefore, 'the late page’s load report');
  const rec = (await browser.worker.evaluate(() => self.mpsurf.decisions()))[String(tab)];
  assert.equal(rec.nav, nav, JSON.stringify(rec));
  assert.equal(loads.at(-1).origin, site.origin);
  assert.equal(loads.at(-1).multipath, rec.source === 'none' ? null : rec.multipath, JSON.stringify({ load: loads.at(-1), rec }));
  assert.equal(await browser.worker.evaluate(() => self.mpsurf.heldReports()), 0);
  const reports = await until(() => browser.worker.evaluate(() => self.mpsurf.reports()), (r) => r.at > reportsBefore.at, 'the host’s answer to the late page’s report');
  assert.equal(reports.state, 'ok', JSON.stringify(reports));
  await page.close();
});

test('options: changes reach the service worker, the rules and the host', { skip }, async () => {
  const opts = await browser.context.newPage();
  await opts.setViewportSize({ width: 900, height: 1400 });
  await opts.goto(`${base}/options.html`);
  await opts.waitForFunction(() => document.getElementById('sync').textContent !== '');

  await opts.check('#mode-battery_saver');
  await until(settings, (s) => s.prefs.mode === 'battery_saver', 'mode in the service worker');
  await opts.fill('#deadline', '5');
  await opts.locator('#deadline').dispatchEvent('change');
  await until(settings, (s) => s.prefs.deadline_ms === 5000, 'deadline in the service worker');

  // An invalid host is refused with a message and changes nothing.
  await opts.fill('#override-host', 'bad host!');
  await opts.click('#override-add');
  assert.match(await opts.locator('#override-error').innerText(), /space|not a valid/);
  // An IDN is stored in punycode.
  await opts.fill('#override-host', 'Bücher.example');
  await opts.selectOption('#override-rule', 'always');
  await opts.click('#override-add');
  const s1 = await until(settings, (s) => s.prefs.overrides.some((o) => o.host === 'xn--bcher-kva.example'), 'IDN override');
  assert.deepEqual(s1.prefs.overrides, [{ host: 'xn--bcher-kva.example', rule: 'always' }]);
  const rules = await browser.worker.evaluate(() => self.mpsurf.rules());
  const ov = rules.find((r) => r.condition.requestDomains?.includes('xn--bcher-kva.example'));
  assert.ok(ov, `no override rule: ${JSON.stringify(rules)}`);
  assert.equal(ov.priority, 4);
  assert.match(ov.action.requestHeaders[0].value, /(^|, )mp(,|$)/);

  // The host this build ships takes preferences: "unsupported" or an error fails, and the host must have applied
  // the last change (the IDN rule) with the earlier ones.
  const sync = (
    await until(settings, (s) => s.prefsSync.state !== 'unknown' && s.prefsSync.hostPrefs?.overrides?.length !== 0, 'the host’s answer to the preferences')
  ).prefsSync;
  assert.equal(sync.state, 'ok', JSON.stringify(sync));
  assert.equal(sync.hostPrefs.mode, 'battery_saver');
  assert.equal(sync.hostPrefs.deadline_ms, 5000);
  assert.deepEqual(sync.hostPrefs.overrides, [{ host: 'xn--bcher-kva.example', rule: 'always' }]);
  assert.doesNotMatch(await opts.locator('#sync').innerText(), /does not support/);
  await opts.screenshot({ path: path.join(shots, 'options.png'), fullPage: true });
  await opts.emulateMedia({ colorScheme: 'dark' });
  await opts.screenshot({ path: path.join(shots, 'options-dark.png'), fullPage: true });
  await opts.close();
});

test('a "never" override puts mp=?0 on the site; scope "never" removes every header', { skip }, async () => {
  const opts = await browser.context.newPage();
  await opts.goto(`${base}/options.html`);
  await opts.waitForFunction(() => document.getElementById('sync').textContent !== '');
  await opts.fill('#override-host', '127.0.0.1');
  await opts.selectOption('#override-rule', 'never');
  await opts.click('#override-add');
  await until(settings, (s) => s.prefs.overrides.some((o) => o.host === '127.0.0.1' && o.rule === 'never'), 'never override');
  await untilRules(browser.worker, (rules) => rules.some((r) => r.condition.requestDomains?.includes('127.0.0.1')));

  const page = await browser.context.newPage();
  await page.goto(`${site.origin}/page/never-1`, { waitUntil: 'load' });
  await page.waitForFunction(() => document.title.startsWith('done'));
  const seen = site.forPage('never-1');
  assert.ok(seen.length >= 5, JSON.stringify(seen));
  for (const r of seen) assert.match(r.header ?? '', /mp=\?0/, `${r.path} carried ${r.header}`);

  await opts.check('#scope-never');
  await untilRules(browser.worker, (rules) => rules.length === 0);
  await page.goto(`${site.origin}/page/never-2`, { waitUntil: 'load' });
  await page.waitForFunction(() => document.title.startsWith('done'));
  for (const r of site.forPage('never-2')) assert.equal(r.header, null, `${r.path} carried ${r.header}`);

  // Back to all sites and no site rules, so the profile ends as it began.
  await opts.check('#scope-all');
  await untilRules(browser.worker, (rules) => rules.length > 0);
  await page.close();
  await opts.close();
});

test('a bad settings file is refused with a message', { skip }, async () => {
  const opts = await browser.context.newPage();
  await opts.goto(`${base}/options.html`);
  await opts.waitForFunction(() => document.getElementById('sync').textContent !== '');
  const before = await settings();
  await opts.setInputFiles('#import-file', { name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from('{"format":"mpsurf-settings","version":1,"prefs":{"mode":"turbo"}}') });
  await opts.waitForFunction(() => document.getElementById('import-msg').textContent !== '');
  assert.match(await opts.locator('#import-msg').innerText(), /Not imported: .*mode/);
  assert.deepEqual((await settings()).prefs, before.prefs);
  await opts.close();
});

test('options: changes made before the page has read the settings are applied, in order', { skip }, async () => {
  const before = await settings();
  const mode = before.prefs.mode === 'balanced' ? 'battery_saver' : 'balanced';
  const deadline = before.prefs.deadline_ms === 4000 ? 6 : 4;
  // The service worker is held busy, so the page's first question (settings-get) waits as it does on a loaded
  // machine, where its answer waits for the host's status; the user changes the mode and then the deadline meanwhile.
  const BUSY_MS = 4000;
  const busy = browser.worker.evaluate((ms) => {
    const t = Date.now();
    while (Date.now() - t < ms);
    return Date.now();
  }, BUSY_MS);
  const opts = await browser.context.newPage();
  await opts.goto(`${base}/options.html`);
  await opts.check(`#mode-${mode}`);
  await opts.fill('#deadline', String(deadline));
  await opts.locator('#deadline').dispatchEvent('change');
  const changedAt = Date.now();
  const freeAt = await busy;
  assert.ok(changedAt < freeAt, `the changes were made ${changedAt - freeAt} ms after the service worker was free again: the case was not tested`);
  const s = await until(settings, (x) => x.prefs.mode === mode && x.prefs.deadline_ms === deadline * 1000, 'both changes in the service worker');
  assert.deepEqual(s.prefs.overrides, before.prefs.overrides);
  const sync = (await until(settings, (x) => x.prefsSync.state === 'ok' && x.prefsSync.hostPrefs?.mode === mode && x.prefsSync.hostPrefs?.deadline_ms === deadline * 1000, 'the host’s answer')).prefsSync;
  assert.equal(sync.hostPrefs.mode, mode);
  assert.ok(await opts.isChecked(`#mode-${mode}`), 'the page shows the mode it saved');
  await opts.close();
});
