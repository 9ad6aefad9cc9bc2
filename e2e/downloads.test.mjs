// A download started in real Chromium (under mptcpize, in the testbed's client namespace) is handed by the
// extension to the native host, which fetches it over WiFi and cellular at once with MP-H2 from a plain-TCP
// server, while Chrome's own copy is cancelled. Checks the file byte for byte, bytes on both links, Chrome's copy
// cancelled, nothing left behind; then that a host killed mid-way (kill -9) is restarted by the extension and the
// download resumes from its partial file. Needs root, kernel MPTCP, /dev/net/tun and the build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session, testbedBin, testbedSkip, assertPrefixFree } from './testbed/lib.mjs';
import { downloadFiles } from './testbed/downloads.mjs';
import { launch, makeProfile, untilStatus, hostPids } from './lib/browser.mjs';
import { root } from './lib/paths.mjs';

const wrapper = path.join(root, 'e2e', 'testbed', 'chromium-in-client.sh');
const TCP_PORT = 9443;

const skip = testbedSkip();

async function until(pred, timeoutMs, stepMs = 200) {
  const t0 = Date.now();
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) return null;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

const sha256 = (file) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

function linkDiff(a, b) {
  const rx = (c, i) => (c[i] || c.interfaces?.[i]).rx_bytes;
  return { wlan0: rx(b, 'wlan0') - rx(a, 'wlan0'), wwan0: rx(b, 'wwan0') - rx(a, 'wwan0') };
}

// startDownload clicks a link to url in a tab, as a user would.
async function startDownload(context, session, url) {
  const tab = await context.newPage();
  await tab.goto(`https://origin.test:${TCP_PORT}/healthz`);
  await tab.evaluate((u) => {
    const a = document.createElement('a');
    a.href = u;
    document.body.append(a);
    a.click();
  }, url);
  return tab;
}

test('downloads: a Chromium download completes over both links through the host, and resumes after the host is killed', { skip, timeout: 6 * 60 * 1000 }, async (t) => {
  assertPrefixFree();
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-dl-'));
  const cert = path.join(outDir, 'origin.pem');
  const session = await Session.open({ outDir, log: (m) => t.diagnostic(m), originArgs: ['--listen-tcp', `:${TCP_PORT}`, '--cert-out', cert] });
  const profile = makeProfile({ prefix: 'mpsurf-dl-profile-' });
  let browser;
  t.after(async () => {
    await browser?.context.close().catch(() => {});
    profile.remove();
    await session.close();
    fs.rmSync(outDir, { recursive: true, force: true });
  });
  execFileSync(testbedBin, ['mode', 'sp-wifi']); // Chromium's own connections: WiFi only
  const files = Object.fromEntries(downloadFiles().map((f) => [f.name, f]));
  browser = await launch(profile.dir, {
    executablePath: wrapper,
    env: { ...session.hostBaseEnv(), MPSURF_HOSTS: session.hostsEnv(), MPSURF_DOWNLOAD_CA: cert, MPSURF_ACTUATOR: 'off' },
    args: [`--ignore-certificate-errors-spki-list=${session.spki}`, `--host-resolver-rules=${session.resolverRules()}`, '--disable-quic'],
  });
  const { worker } = browser;
  await untilStatus(worker, (s) => s.host === 'connected', 15000);
  await worker.evaluate(() => self.mpsurf.setDownloads(true));

  // 1. One download, start to end.
  const f8 = files['8m.bin'];
  const before = session.counters();
  const tab = await startDownload(browser.context, session, `https://origin.test:${TCP_PORT}${f8.path}`);
  const done = await until(async () => {
    const v = await worker.evaluate(() => self.mpsurf.downloads());
    return v.downloads.find((d) => d.state?.state === 'done' || d.state?.state === 'failed');
  }, 120000);
  const after = session.counters();
  await tab.close();
  assert.ok(done, 'the download was never handed over or never finished');
  t.diagnostic(`download: ${JSON.stringify(done.state)}`);
  assert.equal(done.state.state, 'done', done.state.reason);
  assert.ok(done.chromeCanceled, "Chrome's own download was not cancelled");
  assert.equal(sha256(done.state.file), f8.sha256, 'the file differs from the origin\'s');
  assert.equal(fs.existsSync(done.state.file + '.mpsurf-part'), false, 'a partial file is left');
  const links = linkDiff(before, after);
  t.diagnostic(`link bytes: wlan0 ${links.wlan0}, wwan0 ${links.wwan0}`);
  const perPath = Object.fromEntries(done.state.paths.map((p) => [p.name, p.bytes]));
  assert.ok(perPath.wlan0 > 1e6 && perPath.wwan0 > 1e6, `both paths carry a share: ${JSON.stringify(perPath)}`);
  assert.ok(links.wwan0 >= perPath.wwan0, `the cellular link carried the host's cellular share: ${links.wwan0} < ${perPath.wwan0}`);
  const chrome = await worker.evaluate((id) => chrome.downloads.search({ id }), done.chromeId);
  assert.equal(chrome[0]?.state, 'interrupted', `Chrome's copy: ${JSON.stringify(chrome[0])}`);

  // 2. The host is killed mid-way: the extension starts a new host, which resumes from the partial file.
  const f32 = files['32m.bin'];
  const tab2 = await startDownload(browser.context, session, `https://origin.test:${TCP_PORT}${f32.path}`);
  const running = await until(async () => {
    const v = await worker.evaluate(() => self.mpsurf.downloads());
    return v.downloads.find((d) => d.url.endsWith(f32.path) && d.state?.state === 'running' && d.state.received > 4e6);
  }, 60000);
  assert.ok(running, 'the second download never ran');
  const [pid] = hostPids(profile.host);
  process.kill(pid, 'SIGKILL');
  t.diagnostic(`killed host ${pid} at ${running.state.received} bytes`);
  const resumed = await until(async () => {
    const v = await worker.evaluate(() => self.mpsurf.downloads());
    const d = v.downloads.find((x) => x.url.endsWith(f32.path));
    return d && (d.state?.state === 'done' || d.state?.state === 'failed') ? d : null;
  }, 180000);
  await tab2.close();
  assert.ok(resumed, 'the download did not finish after the host was killed');
  t.diagnostic(`after kill: ${JSON.stringify(resumed.state)}`);
  assert.equal(resumed.state.state, 'done', resumed.state.reason);
  assert.equal(sha256(resumed.state.file), f32.sha256, 'the resumed file differs from the origin\'s');
  const fetched = resumed.state.paths.reduce((n, p) => n + p.bytes, 0);
  assert.ok(fetched < f32.bytes, `the new host fetched ${fetched} bytes: it started over instead of resuming`);
});
