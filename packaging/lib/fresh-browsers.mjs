// The browser half of packaging/check-on-fresh-debian. It runs in the fresh system's network namespace (nsenter
// -n), from this repository's node_modules, while the browsers run inside that system as a user of it, started the
// way a user starts them there (Debian's /usr/bin/chromium and /usr/bin/firefox-esr), with the packaged extension
// and the packaged host. It serves a page on the system's loopback, drives the browser over its remote debugging
// port (Chromium: the DevTools protocol through playwright-core; Firefox: WebDriver BiDi through puppeteer-core),
// and prints one JSON line of what it saw: the Multipath-Policy header on the page's requests (sent only with the
// host's decision), and for Chromium the extension's own state (host connected, the page's decision).
//
//   node packaging/lib/fresh-browsers.mjs chromium|firefox DEBUG_PORT
import { startRecorder } from '../../e2e/lib/recorder.mjs';
import { extensionId } from '../../e2e/lib/paths.mjs';

const [browser, debugPort] = process.argv.slice(2);
const usage = 'usage: node packaging/lib/fresh-browsers.mjs chromium|firefox DEBUG_PORT';
if (process.argv[2] === '--help' || process.argv[2] === '-h') {
  console.log(usage);
  process.exit(0);
}
if (!['chromium', 'firefox'].includes(browser) || !/^\d+$/.test(debugPort ?? '')) {
  console.error(`fresh-browsers: ${usage}`);
  process.exit(2);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, timeoutMs) {
  const t0 = Date.now();
  let last;
  while (Date.now() - t0 < timeoutMs) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = String(e);
    }
    await sleep(200);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
}

const site = await startRecorder({ host: '127.0.0.1' });
const origin = site.origin;
const out = { browser, origin };
try {
  if (browser === 'chromium') {
    const { chromium } = await import('playwright-core');
    const b = await until('Chromium answers on its debugging port', () => chromium.connectOverCDP(`http://127.0.0.1:${debugPort}`), 30000);
    const context = b.contexts()[0];
    // The packaged extension, loaded by Debian's chromium from /usr/share/chromium/extensions.
    const worker = await until(
      'the packaged extension starts',
      () => context.serviceWorkers().find((w) => w.url().startsWith(`chrome-extension://${extensionId}/`)),
      30000,
    );
    out.extension = worker.url();
    out.host = (await until('the packaged host answers', async () => {
      const s = await worker.evaluate(() => self.mpsurf.status());
      return s.host === 'connected' ? s : null;
    }, 30000)).host;
    // Consent as the first-run page's button gives it (nothing is multipath before).
    out.gate = await worker.evaluate(() => self.mpsurf.consent());
    const page = await context.newPage();
    await page.goto(`${origin}/page/chromium`);
    out.decision = await until('the page is decided', async () => {
      const d = await worker.evaluate(() => self.mpsurf.decisions());
      return (Array.isArray(d) ? d : Object.values(d ?? {})).find((x) => JSON.stringify(x).includes(origin)) ?? null;
    }, 20000);
    await b.close();
  } else {
    const puppeteer = (await import('puppeteer-core')).default;
    const b = await until(
      'Firefox answers WebDriver BiDi on its debugging port',
      () => puppeteer.connect({ browserWSEndpoint: `ws://127.0.0.1:${debugPort}/session`, protocol: 'webDriverBiDi' }),
      30000,
    );
    const page = await b.newPage();
    // The add-on loads in the background at startup: the page is loaded until its requests carry the header.
    await until('a page load carries the header', async () => {
      await page.goto(`${origin}/page/firefox`, { waitUntil: 'load' });
      return site.requests.some((r) => r.header);
    }, 60000);
    out.userAgent = await page.evaluate(() => navigator.userAgent);
    await b.disconnect();
  }
  const page = site.requests.filter((r) => r.page === browser);
  out.requests = page.length;
  out.withHeader = page.filter((r) => r.header).length;
  out.header = page.find((r) => r.header)?.header ?? null;
  out.ok = out.requests > 0 && out.withHeader > 0;
} catch (e) {
  out.ok = false;
  out.error = String(e?.stack ?? e);
} finally {
  await site.close();
}
console.log(JSON.stringify(out));
process.exit(out.ok ? 0 : 1);
