// The MPTCP proxy route in Debian's Firefox ESR (proxy.test.mjs's checks in Chromium), in the two-path testbed with
// its proxy host running the real Squid (MPTCP, TLS, Basic auth) and an origin that speaks plain TCP only: Firefox
// routes each request to the host's relay by the add-on's proxy.onRequest listener, meets the relay's 407, which the
// add-on answers with the relay's credentials (webRequest.onAuthRequired), and the page arrives through the proxy
// over both links; with wrong credentials at the proxy the page still loads (DIRECT) and the add-on takes the proxy
// out of its routes and says why. Needs root, kernel MPTCP, /dev/net/tun, the build, Debian's squid and
// firefox-esr; skips with the reason otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session, canRun, PREFIX } from './testbed/lib.mjs';
import { squidMissing } from './testbed/proxy.mjs';
import { firefoxExtensionDir, firefoxPath } from './lib/paths.mjs';

function whyNot() {
  const why = canRun() ?? squidMissing();
  if (why) return why;
  const missing = [firefoxPath, path.join(firefoxExtensionDir, 'manifest.json')].filter((p) => !fs.existsSync(p));
  if (missing.length) return `not built or not installed: ${missing.join(', ')}`;
  const busy = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').some((l) => l.startsWith(`${PREFIX}-`));
  return busy ? `another testbed with prefix ${PREFIX} is running` : null;
}
const skip = whyNot() ?? false;

test('Firefox: the auth flow through the relay to Squid; wrong credentials fall back to DIRECT', { skip, timeout: 5 * 60 * 1000 }, async (t) => {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-ffproxy-'));
  fs.chmodSync(outDir, 0o755); // Squid runs as its own user and reads its files under it
  const session = await Session.open({ outDir, proxy: true, originMptcp: false, browser: 'firefox', log: (m) => t.diagnostic(m) });
  t.after(async () => {
    await session.close();
    fs.rmSync(outDir, { recursive: true, force: true });
  });
  const page = 'wiki';

  const direct = await session.load({ page, mode: 'sp-wifi', runId: 'direct' });
  assert.ok(direct.ok, direct.error);
  assert.equal(direct.browser, 'firefox');
  assert.equal(direct.header_seen, true, `requests without the header: ${direct.header_missing}`);
  t.diagnostic(`direct: PLT ${direct.plt_ms.toFixed(0)} ms`);

  // Squid logs each tunnel with the user it authenticated: the relay's own credentials reached it only after the
  // add-on answered the relay's 407.
  const via = await session.load({ page, mode: 'proxy-always', runId: 'via' });
  assert.ok(via.ok, via.error);
  assert.equal(via.proxy.used, true, 'the page went through the proxy');
  assert.equal(via.pac, true, `the add-on routed it: ${JSON.stringify(via.proxy_view)}`);
  assert.equal(via.header_seen, true, `requests without the header: ${via.header_missing}`);
  const log = session.proxy.accessLog().filter((l) => / CONNECT origin\.test:443 mpsurf /.test(l));
  assert.ok(log.length > 0, `Squid logged no authenticated tunnel: ${session.proxy.accessLog().slice(-5).join('\n')}`);
  assert.ok(via.link_bytes.wwan0.rx > 50_000, `the proxy leg used the cellular link too: ${JSON.stringify(via.link_bytes)}`);
  t.diagnostic(`via proxy: PLT ${via.plt_ms.toFixed(0)} ms, ${log.length} tunnels, wwan0 ${via.link_bytes.wwan0.rx} bytes`);

  // Wrong credentials at the proxy: Squid answers 407 to the relay, which resets the browser's tunnel; Firefox
  // falls through to DIRECT (the route's second entry) and the add-on drops the proxy from its routes.
  const wrong = path.join(outDir, 'wrong.json');
  fs.writeFileSync(wrong, JSON.stringify({ ...session.proxy.config(), password: 'not-the-password' }), { mode: 0o600 });
  const refused = await session.load({ page, mode: 'proxy-always', runId: 'wrong', hostEnv: { MPSURF_PROXY_CONFIG: wrong } });
  assert.ok(refused.ok, `the page must load directly: ${refused.error}`);
  assert.equal(refused.proxy.used, false);
  assert.ok(refused.plt_ms < direct.plt_ms + 1500, `fallback took ${refused.plt_ms} ms (direct ${direct.plt_ms} ms)`);
  assert.equal(refused.pac, false, 'the add-on took the proxy out of its routes');
  assert.match(refused.proxy_view?.fallback?.reason ?? '', /407/, JSON.stringify(refused.proxy_view));
  t.diagnostic(`fallback: wrong credentials PLT ${refused.plt_ms.toFixed(0)} ms, direct ${direct.plt_ms.toFixed(0)} ms`);
});
