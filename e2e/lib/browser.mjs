// Launching real Chromium with the unpacked extension and a registered native host (Firefox: firefox.mjs). Both
// launchers return the same small interface that browser-agnostic code (the testbed) uses: call(name, ...args) runs
// one function of the extension's test API (self.mpsurf in background.ts) and resolves with its JSON result,
// newTab() opens a page whose goto/evaluate/close work alike in playwright and puppeteer, close() ends the browser.
import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromiumPath, extensionDir, hostBinary } from './paths.mjs';

// Flags that keep Chromium from reaching for the network on its own (component updates, sync, metrics): the test
// machines reach no network beyond the package registries, and a test must not depend on one.
const quietFlags = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--metrics-recording-only',
];

// makeProfile creates a fresh user-data-dir with the host registered in it. The host binary is
// copied into the profile so that tests can find "their" host process by its path.
export function makeProfile({ prefix = 'mpsurf-profile-', copyHost = true } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  let host = hostBinary;
  if (copyHost) {
    host = path.join(dir, 'mpsurf-host');
    fs.copyFileSync(hostBinary, host);
    fs.chmodSync(host, 0o755);
  }
  execFileSync(host, ['install', '--user-data-dir', dir, '--path', host], { stdio: 'pipe' });
  return {
    dir,
    host,
    uninstall() {
      execFileSync(host, ['uninstall', '--user-data-dir', dir], { stdio: 'pipe' });
    },
    remove() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// launch starts Chromium on the profile with the extension loaded and waits for its service worker. The user's
// consent (MPSurf's first-run page) is given unless consent is false: without it nothing is multipath.
export async function launch(profileDir, { headless = true, executablePath = chromiumPath, args = [], env, consent = true } = {}) {
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath,
    headless,
    args: [
      ...quietFlags,
      `--disable-extensions-except=${extensionDir}`,
      `--load-extension=${extensionDir}`,
      ...args,
    ],
    // The host's decision log goes into the profile, never into the user's real one.
    env: { ...process.env, MPSURF_DB: path.join(profileDir, 'mpsurf.db'), ...env },
  });
  let [worker] = context.serviceWorkers();
  if (!worker) worker = await context.waitForEvent('serviceworker', { timeout: 15000 });
  if (consent) await worker.evaluate(() => self.mpsurf.consent());
  return {
    kind: 'chromium',
    context,
    worker,
    call: (name, ...args) => worker.evaluate(([n, a]) => self.mpsurf[n](...a), [name, args]),
    newTab: () => context.newPage(),
    close: () => context.close(),
  };
}

// until polls fn until pred holds of its result, or throws after timeoutMs naming what never held and the last result.
export async function until(fn, pred, what, timeoutMs = 10000) {
  const t0 = Date.now();
  let last;
  while (Date.now() - t0 < timeoutMs) {
    last = await fn();
    if (pred(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} never held within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
}

// readApi calls one function of the extension's test API through a launched browser (call) or a playwright worker.
function readApi(w, name, ...args) {
  return typeof w.call === 'function' ? w.call(name, ...args) : w.evaluate(([n, a]) => self.mpsurf[n](...a), [name, args]);
}

// withoutDailyLimit turns the daily cellular data limit off (a fresh install has one): a testbed run measures the
// model's decisions over many loads of one session's emulated cellular link, not the user's limits. worker: a
// launched browser (either kind) or a playwright service worker.
export async function withoutDailyLimit(worker) {
  const { settings } = await readApi(worker, 'multipath');
  await readApi(worker, 'setMultipath', { ...settings, daily_cap_bytes: null });
}

// untilStatus polls the extension's status until pred holds or the timeout passes. worker: as withoutDailyLimit.
export async function untilStatus(worker, pred, timeoutMs = 10000) {
  const t0 = Date.now();
  let last;
  while (Date.now() - t0 < timeoutMs) {
    last = await readApi(worker, 'status');
    if (pred(last)) return { status: last, waitedMs: Date.now() - t0 };
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`status never matched within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
}

// untilRules polls the extension's session rules until pred holds or the timeout passes (worker: as untilStatus).
export async function untilRules(worker, pred, timeoutMs = 10000) {
  const t0 = Date.now();
  let last;
  while (Date.now() - t0 < timeoutMs) {
    last = await readApi(worker, 'rules');
    if (pred(last)) return last;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`rules never matched within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
}

// hostPids lists the live processes running the given host binary.
export function hostPids(binary) {
  const pids = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv0 = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')[0];
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (argv0 === binary && state !== 'Z') pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}
