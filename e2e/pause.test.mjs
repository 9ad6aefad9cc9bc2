// A cellular cap reached, or the user's pause, stops multipath at once everywhere, not at the next decision: real
// Chromium in the two-path testbed, its host deciding every origin multipath from the first byte (a fixed policy
// file), the helper with the userspace path manager in the client namespace giving connections their cellular
// subflows. A large transfer runs on a connection that has its cellular subflow:
//   1. direct (the browser's own MPTCP connection): the daily cap (1 MB) is passed while it runs; the host's usage
//      (stored every second here), the extension's gate and its pause follow;
//   2. through the user's MPTCP proxy (the host's relay, its tunnel with a cellular subflow from the helper): the
//      user presses pause while it runs.
// From the moment the pause reached the host, the helper's cellular subflows close; what the server had already
// sent into the cellular link still arrives (at most the link's bandwidth-delay product and queue); from then on
// the test counts the cellular link's bytes, both ways, while the transfer goes on and another large page loads:
// none. Needs root, kernel MPTCP, /dev/net/tun, the build and
// Debian's squid; skips with the reason otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session, Actuator, testbedBin, testbedSkip, assertPrefixFree, writePolicy, cellSubflows, linkBytes } from './testbed/lib.mjs';
import { PROXY_ADDR } from './testbed/proxy.mjs';
import { launch, makeProfile, untilStatus } from './lib/browser.mjs';
import { root } from './lib/paths.mjs';

const wrapper = path.join(root, 'e2e', 'testbed', 'chromium-in-client.sh');
const BIG = '/dl/8m.bin'; // 8 MiB: about 4 s over both baseline links; the 1 MB cap is passed about 1 s in
const CAP = 1_000_000; // the smallest daily cap the extension takes
// What the server had already sent into the emulated LTE link when the subflow closed still arrives: at most the
// link's bandwidth-delay product and its queue (e2e/profiles/baseline.json: 9.185 Mbit/s, 70 ms, 75 kB queue).
const LTE_INFLIGHT = Math.round((9.185e6 * 0.07) / 8) + 75_000;

const skip = testbedSkip({ userspace: true, squid: true });

const cellBytes = () => linkBytes('wwan0');

async function until(pred, timeoutMs, stepMs = 50) {
  const t0 = Date.now();
  for (;;) {
    const v = await pred();
    if (v) return { v, ms: Date.now() - t0 };
    if (Date.now() - t0 > timeoutMs) return null;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

// quiet waits until the cellular link has carried nothing for 300 ms: packets that closing a subflow sends, and
// those already in the emulated link, belong to before.
async function quiet() {
  let last = cellBytes();
  let since = Date.now();
  for (const t0 = Date.now(); Date.now() - t0 < 5000; ) {
    await new Promise((r) => setTimeout(r, 50));
    const now = cellBytes();
    if (now !== last) [last, since] = [now, Date.now()];
    else if (Date.now() - since >= 300) return now;
  }
  return cellBytes();
}

// run opens a browser with its host deciding every origin multipath from the first byte, starts the large
// transfer on a page of origin.test, lets stop() pause multipath, and counts what the cellular link carried after.
async function run(t, session, actuator, { name, env = {}, setup = async () => {}, stop, subflowDst }) {
  const profile = makeProfile({ prefix: 'mpsurf-pause-' });
  const policy = path.join(profile.dir, 'policy.json');
  writePolicy(policy, true, { theta1: 0 });
  let browser;
  try {
    browser = await launch(profile.dir, {
      executablePath: wrapper,
      env: { MPSURF_ACTUATOR: actuator.socket, MPSURF_HOSTS: session.hostsEnv(), MPSURF_POLICY: policy, MPSURF_NAMES: 'wlan0=wifi,wwan0=cellular', MPSURF_LOG: path.join(session.outDir, `host-pause-${name}.log`), ...env },
      args: [`--ignore-certificate-errors-spki-list=${session.spki}`, `--host-resolver-rules=${session.resolverRules()}`, '--disable-quic'],
    });
    const { worker } = browser;
    await untilStatus(worker, (s) => s.host === 'connected', 15000);
    await setup(worker);
    const tab = await browser.context.newPage();
    await tab.goto('https://origin.test/healthz', { waitUntil: 'load' });
    const cell0 = cellBytes();
    await tab.evaluate((u) => {
      self.big = fetch(u).then((r) => r.arrayBuffer()).then((b) => b.byteLength);
    }, BIG);
    const joined = await until(() => cellSubflows(subflowDst) >= 1 && cellBytes() - cell0 > 300_000, 10000);
    assert.ok(joined, `${name}: the transfer's connection never got its cellular subflow, or it carried nothing`);
    t.diagnostic(`${name}: cellular subflow up ${joined.ms} ms into the transfer`);
    const paused = await stop(worker);
    const pausedAt = cellBytes();
    const stillRunning = await tab.evaluate(() => Promise.race([self.big.then(() => false), new Promise((r) => setTimeout(() => r(true), 0))]));
    // The helper closes the cellular subflows it opened as soon as the pause reaches the host.
    const gone = await until(() => cellSubflows() === 0, 5000, 10);
    const c0 = await quiet();
    // Another large page while the transfer goes on, then the transfer's end.
    const tab2 = await browser.context.newPage();
    await tab2.goto(`https://origin.test${session.urlPath('travel', 'origin.test')}`, { waitUntil: 'load', timeout: 120000 });
    const bytes = await tab.evaluate(() => self.big);
    const c1 = cellBytes();
    const r = { name, why: paused.why, cell_before_pause: pausedAt - cell0, subflows_closed_ms: gone?.ms ?? null, settle_bytes: c0 - pausedAt, cell_after: c1 - c0, transfer_running_at_pause: stillRunning, transfer_bytes: bytes };
    t.diagnostic(`${name}: ${JSON.stringify(r)}`);
    return r;
  } finally {
    await browser?.context.close().catch(() => {});
    profile.remove();
  }
}

test('pause and caps: no cellular byte after a cap is reached or the user pauses, on open connections and tunnels', { skip, timeout: 6 * 60 * 1000 }, async (t) => {
  assertPrefixFree();
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-pause-'));
  fs.chmodSync(outDir, 0o755); // Squid runs as its own user and reads its files under it
  const session = await Session.open({ outDir, proxy: true, log: (m) => t.diagnostic(m) });
  let actuator;
  t.after(async () => {
    await actuator?.stop();
    await session.close();
    fs.rmSync(outDir, { recursive: true, force: true });
  });
  execFileSync(testbedBin, ['mode', 'sp-wifi']); // no in-kernel subflows: only the helper's
  actuator = await Actuator.start({ log: (m) => t.diagnostic(m) });

  // 1. The daily cap, passed while the transfer runs on the browser's own MPTCP connection.
  const cap = await run(t, session, actuator, {
    name: 'cap',
    env: { MPSURF_USAGE_EVERY: '1s' },
    setup: (w) => w.evaluate((c) => self.mpsurf.setMultipath({ ...self.mpsurf.multipath().settings, daily_cap_bytes: c }), CAP),
    subflowDst: session.serverAddr,
    stop: async (w) => {
      const got = await until(async () => {
        await w.evaluate(() => self.mpsurf.refresh());
        const v = await w.evaluate(() => self.mpsurf.multipath());
        return v.gate.why === 'cap_daily' && v.hostApplied ? v.gate : null;
      }, 30000, 100);
      assert.ok(got, 'the daily cap was never reached and applied');
      return got.v;
    },
  });

  // 2. The user's pause, while the transfer runs through the relay's tunnel to the proxy.
  const pause = await run(t, session, actuator, {
    name: 'pause (proxy tunnel)',
    env: { MPSURF_PROXY_CONFIG: session.proxyConfigFile(), MPSURF_MPTCPIZE: '0' },
    setup: async (w) => {
      await w.evaluate(() => self.mpsurf.setMultipath({ ...self.mpsurf.multipath().settings, route: 'all' }));
      assert.ok(await until(() => w.evaluate(() => self.mpsurf.proxy().active === true), 10000), 'the relay never became the route');
    },
    subflowDst: PROXY_ADDR,
    stop: async (w) => {
      await w.evaluate(() => self.mpsurf.setMultipath({ ...self.mpsurf.multipath().settings, paused: true }));
      const got = await until(async () => {
        const v = await w.evaluate(() => self.mpsurf.multipath());
        return v.gate.why === 'user' && v.hostApplied ? v.gate : null;
      }, 5000);
      assert.ok(got, 'the pause never reached the host');
      return got.v;
    },
  });

  for (const r of [cap, pause]) {
    assert.ok(r.cell_before_pause > 0, `${r.name}: the cellular link carried nothing before the pause: the test would prove nothing`);
    assert.equal(r.transfer_running_at_pause, true, `${r.name}: the transfer ended before the pause`);
    assert.equal(r.transfer_bytes, 8 << 20, `${r.name}: the transfer did not complete`);
    assert.ok(r.subflows_closed_ms !== null, `${r.name}: cellular subflows stayed open after the pause`);
    assert.ok(r.settle_bytes <= LTE_INFLIGHT * 1.1, `${r.name}: ${r.settle_bytes} bytes reached the cellular link after the pause, more than was in flight (${LTE_INFLIGHT})`);
    assert.equal(r.cell_after, 0, `${r.name}: the cellular link carried ${r.cell_after} bytes after the pause`);
  }
  assert.ok(cap.cell_before_pause >= CAP, `the cap of ${CAP} bytes was not passed: ${cap.cell_before_pause}`);
});
