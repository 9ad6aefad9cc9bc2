// Smoke grid on the two-path testbed: what must hold physically and logically. Needs root, kernel MPTCP,
// /dev/net/tun and the build; skips with the reason otherwise. The full grid is a benchmark (npm run testbed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { canRun, PREFIX } from './testbed/lib.mjs';
import { GRIDS, runGrid } from './testbed/grid.mjs';
import { root } from './lib/paths.mjs';

const skip = canRun() ?? false;

// Downlink rates of the baseline profile, Mbit/s (e2e/profiles/baseline.json).
const baseline = JSON.parse(fs.readFileSync(path.join(root, 'e2e', 'profiles', 'baseline.json'), 'utf8'));
const sumDownMbit = baseline.links.wlan0.down.rate_mbit + baseline.links.wwan0.down.rate_mbit;

function netnsNames() {
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.split(' ')[0])
    .filter(Boolean);
}
function rootLinks() {
  return execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(':')[1].trim().split('@')[0])
    .sort();
}
function processesRunning(binaryPath) {
  return fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        return fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').includes(binaryPath);
      } catch {
        return false;
      }
    });
}

test('smoke grid on the baseline profile', { skip, timeout: 15 * 60 * 1000 }, async (t) => {
  const linksBefore = rootLinks();
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-smoke-'));
  t.after(() => fs.rmSync(outDir, { recursive: true, force: true }));

  const { records } = await runGrid(GRIDS.smoke, { outDir, seed: 7, log: (m) => t.diagnostic(m) });
  assert.equal(records.length, 6);
  for (const r of records) assert.ok(r.ok, `${r.mode} ${r.page}: ${r.error}`);

  const by = (mode, page) => records.find((r) => r.mode === mode && r.page === page);
  const large = 'wiki';
  // Multipath carries data on the cellular link; single-path WiFi leaves it (almost) silent.
  const mp = by('mp-always', large);
  assert.ok(mp.link_bytes.wwan0.rx > 20000, `mp-always moved only ${mp.link_bytes.wwan0.rx} B on wwan0`);
  assert.ok(mp.server_path_bytes.wwan0 > 20000, `server saw ${mp.server_path_bytes.wwan0} B on the wwan0 subflow`);
  assert.ok(mp.mptcp_conns > 0, 'connections were MPTCP');
  for (const r of records.filter((x) => x.mode === 'sp-wifi')) {
    assert.ok(r.link_bytes.wwan0.rx + r.link_bytes.wwan0.tx < 2000, `sp-wifi ${r.page}: ${JSON.stringify(r.link_bytes.wwan0)} on wwan0`);
    assert.equal(r.server_path_bytes.wwan0, 0);
  }
  // No load can beat the two links' summed downlink rate.
  for (const r of records) {
    const floorMs = ((r.page_bytes * 8) / (sumDownMbit * 1e6)) * 1000;
    assert.ok(r.plt_ms >= floorMs, `${r.mode} ${r.page}: PLT ${r.plt_ms} ms < ${floorMs.toFixed(1)} ms`);
  }
  // The server saw the policy header on every request of every load.
  for (const r of records) {
    assert.ok(r.requests >= r.objects, `${r.mode} ${r.page}: ${r.requests} requests for ${r.objects} objects`);
    assert.ok(r.header_seen, `${r.mode} ${r.page}: no header on ${r.header_missing}`);
  }
  // MPSurf's own mode decided, and said why.
  for (const r of records.filter((x) => x.mode === 'mp-adaptive')) {
    assert.equal(typeof r.decision?.multipath, 'boolean');
    assert.ok(r.decision.reason.length > 0);
  }

  // Teardown leaves no namespace, link or process behind.
  assert.deepEqual(netnsNames().filter((n) => n.startsWith(`${PREFIX}-`)), []);
  assert.deepEqual(rootLinks(), linksBefore);
  for (const bin of ['testbed', 'origin']) assert.deepEqual(processesRunning(path.join(root, 'dist', bin)), [], `${bin} still running`);
});
