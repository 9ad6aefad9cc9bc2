// Launching Debian's Firefox ESR with the extension's Firefox build (dist/extension-firefox) and a registered native
// host, driven over WebDriver BiDi by puppeteer-core: no patched browser, and no browser download (puppeteer-core
// fetches none; executablePath names Debian's). Returns the interface browser.mjs's launch returns (call, newTab,
// close), so that browser-agnostic code drives either browser.
//
// How the test reaches the extension: Firefox's BiDi neither lists an add-on's background page nor navigates to
// moz-extension: URLs, but it runs scripts in any tab, the add-on's own pages included. The add-on opens its
// first-run page (welcome.html) when it is installed; from there runtime.getBackgroundPage() gives the event page,
// whose test API (self.mpsurf, background.ts) `call` runs. Pages the test opens itself (the popup, the options) are
// opened from that tab with tabs.create, as a user's click would open them.
import puppeteer from 'puppeteer-core';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { firefoxExtensionDir, firefoxPath, hostBinary } from './paths.mjs';

// makeFirefoxProfile creates a directory with a home of its own (Firefox reads per-user host manifests from
// ~/.mozilla/native-messaging-hosts/, never from the profile) and the host registered there by the host's own
// `install --browser firefox`, and a Firefox profile beside it. The host binary is copied in, so that a test finds
// "its" host process by its path.
export function makeFirefoxProfile({ prefix = 'mpsurf-ff-', copyHost = true } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const home = path.join(dir, 'home');
  fs.mkdirSync(home);
  let host = hostBinary;
  if (copyHost) {
    host = path.join(dir, 'mpsurf-host');
    fs.copyFileSync(hostBinary, host);
    fs.chmodSync(host, 0o755);
  }
  const env = { ...process.env, HOME: home };
  execFileSync(host, ['install', '--browser', 'firefox', '--path', host], { stdio: 'pipe', env });
  return {
    dir,
    home,
    host,
    firefoxDir: path.join(dir, 'firefox'),
    manifest: path.join(home, '.mozilla', 'native-messaging-hosts', 'org.mpsurf.host.json'),
    uninstall() {
      execFileSync(host, ['uninstall', '--browser', 'firefox'], { stdio: 'pipe', env });
    },
    remove() {
      // Retried: a Firefox that is still shutting down may write its last files meanwhile.
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}

// Preferences that keep Firefox from reaching for the network on its own (the test machines reach no network beyond
// the package registries), on top of those puppeteer sets (which point remote settings, updates and telemetry at a
// name that does not resolve): experiments, captive-portal and connectivity checks, DNS over HTTPS, OCSP. Firefox's
// own requests take the add-on's routes like a page's: one to a Mozilla service would go through the testbed's
// relay to a proxy that cannot resolve it.
const quietPrefs = {
  'app.normandy.enabled': false,
  'messaging-system.rsexperimentloader.enabled': false,
  'network.captive-portal-service.enabled': false,
  'network.connectivity-service.enabled': false,
  'browser.region.network.url': '',
  'network.trr.mode': 5,
  'network.dns.disablePrefetch': true,
  'network.prefetch-next': false,
  'security.OCSP.enabled': 0,
  'extensions.blocklist.enabled': false,
  'dom.push.connection.enabled': false,
};

async function href(page) {
  return page.evaluate(() => location.href).catch(() => '');
}

// untilPage waits for a tab whose location passes pred (BiDi reports an add-on page's URL as about:blank, so each
// tab is asked) and returns it.
async function untilPage(browser, pred, what, timeoutMs = 15000) {
  const t0 = Date.now();
  while (Date.now() - t0 < timeoutMs) {
    for (const p of await browser.pages()) if (pred(await href(p))) return p;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: no such tab within ${timeoutMs} ms`);
}

// launchFirefox starts Firefox on the profile with the add-on installed (temporarily, as about:debugging does: an
// unsigned build; extension: the build's directory, or a packaged .xpi) and waits for its first-run page. The
// user's consent is given through the test API unless consent is false. prefs: more Firefox preferences;
// acceptInsecureCerts: accept any certificate (the testbed's origin has a test certificate), as Chromium's
// --ignore-certificate-errors-spki-list does there.
export async function launchFirefox(profile, { headless = true, executablePath = firefoxPath, env = {}, prefs = {}, args = [], consent = true, acceptInsecureCerts = false, extension = firefoxExtensionDir } = {}) {
  fs.mkdirSync(profile.firefoxDir, { recursive: true });
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath,
    headless,
    acceptInsecureCerts,
    userDataDir: profile.firefoxDir,
    args,
    // The host's decision log goes into the profile, never into the user's real one; HOME is the profile's, where
    // the host's manifest is.
    env: { ...process.env, HOME: profile.home, MPSURF_DB: path.join(profile.dir, 'mpsurf.db'), ...env },
    extraPrefsFirefox: { ...quietPrefs, ...prefs },
  });
  try {
    const id = await browser.installExtension(extension);
    // 30 s: on this shared machine a Firefox under mptcpize in the testbed once took more than 15 s to get there.
    const ext = await untilPage(browser, (u) => /^moz-extension:\/\/[^/]+\/welcome\.html/.test(u), 'the add-on’s first-run page', 30000);
    const base = (await href(ext)).replace(/welcome\.html.*$/, '');
    const call = (name, ...a) =>
      ext.evaluate(
        async (n, list) => {
          const bg = await globalThis.browser.runtime.getBackgroundPage();
          const v = await bg.mpsurf[n](...list);
          // Plain JSON out of the event page's compartment.
          return v === undefined ? null : JSON.parse(JSON.stringify(v));
        },
        name,
        a,
      );
    let opened = 0;
    const d = {
      kind: 'firefox',
      browser,
      id,
      base,
      ext,
      call,
      newTab: () => browser.newPage(),
      close: () => browser.close(),
      // openExtensionPage opens one of the add-on's pages in a new tab (active: in front, as a click on a link does;
      // or behind the current tab, which the popup then takes for "this tab") and returns it.
      async openExtensionPage(file, { active = true } = {}) {
        const url = `${base}${file}#t${++opened}`;
        await ext.evaluate((u, act) => globalThis.browser.tabs.create({ url: u, active: act }).then(() => undefined), url, active);
        return untilPage(browser, (u) => u === url, file);
      },
    };
    if (consent) await call('consent');
    return d;
  } catch (e) {
    await browser.close().catch(() => {});
    throw e;
  }
}
