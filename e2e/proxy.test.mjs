// The MPTCP proxy deployment in real browsers (issue 13), in the two-path testbed with its proxy host running the
// real Squid (MPTCP, TLS, Basic auth) and an origin that speaks plain TCP only:
//   - the auth flow: the browser meets the relay's 407, the extension answers it with the relay's credentials, the
//     relay authenticates to Squid with the user's, and the page arrives through the proxy over both links;
//   - wrong credentials at the proxy, and a proxy that accepts and then stalls: the relay resets the browser's tunnel
//     (at once on a refusal, at its one-second budget on a stall), the page still loads with every request DIRECT,
//     and the extension takes the proxy out of its routes and says why. The fallback is shown by those records, not
//     by the load's duration, which a busy machine stretches; that the relay gives up within its budget is timed
//     against a stalled proxy in the relay's own tests (native-host/relay TestRelayFailsFast).
// In Chromium the route is the extension's PAC script; in Debian's Firefox ESR its proxy.onRequest listener, by the
// same rule (the stalled proxy is Chromium's case only: the relay's side of it is the same in both). Needs root,
// kernel MPTCP, /dev/net/tun, the build and Debian's squid (and firefox-esr); skips with the reason otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session, testbedSkip, assertPrefixFree } from './testbed/lib.mjs';
import { firefoxExtensionDir, firefoxPath } from './lib/paths.mjs';

const skip = testbedSkip({ squid: true });
const ffMissing = [firefoxPath, path.join(firefoxExtensionDir, 'manifest.json')].filter((p) => !fs.existsSync(p));
const ffSkip = skip || (ffMissing.length ? `not built or not installed: ${ffMissing.join(', ')}` : false);

// fellBack checks a load through a failing proxy by its records: the relay reset at least one tunnel of the
// browser's, Squid logged none established, and every request reached the origin from the client itself (DIRECT).
function fellBack(rec) {
  assert.ok(rec.ok, `the page must load directly: ${rec.error}`);
  assert.equal(rec.proxy.used, false);
  assert.ok(rec.proxy_view?.stats?.failures >= 1, `the relay reset no tunnel: ${JSON.stringify(rec.proxy_view)}`);
  assert.ok(rec.requests > 0, 'the origin logged no request of the page');
  assert.equal(rec.proxy.requests_via, 0, `${rec.proxy.requests_via} of ${rec.requests} requests came through the proxy`);
}

// What a fallback's record says: the relay's resets and the requests that reached the origin DIRECT.
const fallbackNote = (rec) =>
  `PLT ${rec.plt_ms.toFixed(0)} ms, ${rec.proxy_view.stats.failures} relay resets, ${rec.proxy.requests_direct}/${rec.requests} requests DIRECT`;

async function proxyChecks(t, browser, { stalled }) {
  assertPrefixFree();
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-proxy-'));
  fs.chmodSync(outDir, 0o755); // Squid runs as its own user and reads its files under it
  const session = await Session.open({ outDir, proxy: true, originMptcp: false, browser, log: (m) => t.diagnostic(m) });
  t.after(async () => {
    try {
      process.kill(-session.proxy.child.pid, 'SIGCONT');
    } catch {}
    await session.close();
    fs.rmSync(outDir, { recursive: true, force: true });
  });
  assert.match(session.proxyServer ?? '', /^squid\/5\./, 'the proxy test reads the software from Squid');
  const page = 'wiki';

  // Direct, for the time a page takes without the proxy.
  const direct = await session.load({ page, mode: 'sp-wifi', runId: 'direct' });
  assert.ok(direct.ok, direct.error);
  assert.equal(direct.browser, browser);
  t.diagnostic(`direct: PLT ${direct.plt_ms.toFixed(0)} ms`);

  // The auth flow. Squid logs each tunnel with the user it authenticated.
  const via = await session.load({ page, mode: 'proxy-always', runId: 'via' });
  assert.ok(via.ok, via.error);
  assert.equal(via.proxy.used, true, 'the page went through the proxy');
  assert.equal(via.pac, true, `the extension routed it: ${JSON.stringify(via.proxy_view)}`);
  assert.equal(via.header_seen, true, `requests without the header: ${via.header_missing}`);
  assert.equal(via.origin_mptcp, false);
  assert.equal(via.proxy.requests_direct, 0, `${via.proxy.requests_direct} of ${via.requests} requests bypassed the proxy`);
  const log = session.proxy.accessLog().filter((l) => / CONNECT origin\.test:443 mpsurf /.test(l));
  assert.ok(log.length > 0, `Squid logged no authenticated tunnel: ${session.proxy.accessLog().slice(-5).join('\n')}`);
  assert.ok(via.link_bytes.wwan0.rx > 50_000, `the proxy leg used the cellular link too: ${JSON.stringify(via.link_bytes)}`);
  t.diagnostic(`via proxy: PLT ${via.plt_ms.toFixed(0)} ms, ${log.length} tunnels, wwan0 ${via.link_bytes.wwan0.rx} bytes`);

  // Wrong credentials at the proxy: Squid answers 407 to the relay, which resets the browser's tunnel.
  const wrong = path.join(outDir, 'wrong.json');
  fs.writeFileSync(wrong, JSON.stringify({ ...session.proxy.config(), password: 'not-the-password' }), { mode: 0o600 });
  const refused = await session.load({ page, mode: 'proxy-always', runId: 'wrong', hostEnv: { MPSURF_PROXY_CONFIG: wrong } });
  fellBack(refused);
  assert.equal(refused.pac, false, 'the extension took the proxy out of its routes');
  assert.match(refused.proxy_view?.fallback?.reason ?? '', /407/, JSON.stringify(refused.proxy_view));
  if (!stalled) {
    t.diagnostic(`fallback: wrong credentials ${fallbackNote(refused)}; direct PLT ${direct.plt_ms.toFixed(0)} ms`);
    return;
  }

  // A proxy that accepts connections and then never answers (SIGSTOP: the kernel still completes handshakes).
  process.kill(-session.proxy.child.pid, 'SIGSTOP');
  const hung = await session.load({ page, mode: 'proxy-always', runId: 'stalled' });
  process.kill(-session.proxy.child.pid, 'SIGCONT');
  fellBack(hung);
  assert.equal(hung.pac, false);
  assert.match(hung.proxy_view?.fallback?.reason ?? '', /no answer from the proxy within 1s/, JSON.stringify(hung.proxy_view));
  t.diagnostic(`fallback: wrong credentials ${fallbackNote(refused)}; stalled proxy ${fallbackNote(hung)}; direct PLT ${direct.plt_ms.toFixed(0)} ms`);
}

test('proxy: auth flow through the relay to Squid; wrong credentials and a stalled proxy fall back to DIRECT', { skip, timeout: 6 * 60 * 1000 }, (t) =>
  proxyChecks(t, 'chromium', { stalled: true }),
);

test('proxy in Firefox: auth flow through the relay to Squid; wrong credentials fall back to DIRECT', { skip: ffSkip, timeout: 5 * 60 * 1000 }, (t) =>
  proxyChecks(t, 'firefox', { stalled: false }),
);
