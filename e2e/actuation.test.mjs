// Per-connection actuation in the two-path testbed: real Chromium under mptcpize, its native host deciding each
// origin and telling the actuator (userspace path manager in the client namespace). Checks, from the origin
// server's per-subflow log and from the kernel, that every connection to a multipath-decided origin got the
// cellular subflow and no single-path one did; then that kill -9 of the host or of the actuator leaves nothing
// behind. Needs root, kernel MPTCP, /dev/net/tun and the build; skips with the reason otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session, Actuator, adaptiveMix, classifyConns, mptcpSysctls, canRun, testbedBin, CLIENT_NS, CELL_ADDR } from './testbed/lib.mjs';
import { hostBinary } from './lib/paths.mjs';

const SP_ADDR = '10.200.3.3'; // a second server address, so that the actuator can tell sp.origin.test apart
const LEASE_MS = 2000; // native-host/host/actuate.go actuatorLease

function whyNot() {
  const why = canRun();
  if (why) return why;
  if (!fs.existsSync('/proc/sys/net/mptcp/path_manager') && !fs.existsSync('/proc/sys/net/mptcp/pm_type'))
    return 'the kernel has no userspace MPTCP path manager';
  const busy = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').some((l) => l.startsWith('mps-'));
  return busy ? 'another testbed with prefix mps is running' : null;
}
const skip = whyNot() ?? false;

// cellSubflows counts established TCP subflows from the cellular address in the client namespace.
function cellSubflows() {
  const out = execFileSync('ip', ['netns', 'exec', CLIENT_NS, 'ss', '-tnH', 'state', 'established', 'src', CELL_ADDR], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean).length;
}

async function until(pred, timeoutMs, stepMs = 50) {
  const t0 = Date.now();
  for (;;) {
    const v = await pred();
    if (v) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) return null;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

const pct = (a, b) => (b === 0 ? 'n/a' : `${((100 * a) / b).toFixed(1)} % (${a}/${b})`);

test('actuation: cellular subflows only for multipath-decided origins; kill -9 of host and actuator undone', { skip, timeout: 10 * 60 * 1000 }, async (t) => {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-act-'));
  t.after(() => fs.rmSync(outDir, { recursive: true, force: true }));
  const session = await Session.open({ outDir, names: { 'sp.origin.test': SP_ADDR }, log: (m) => t.diagnostic(m) });
  let actuator;
  t.after(async () => {
    await actuator?.stop();
    await session.close();
  });
  execFileSync(testbedBin, ['mode', 'sp-wifi']); // the in-kernel path manager adds nothing
  const pristine = mptcpSysctls();
  actuator = await Actuator.start({ log: (m) => t.diagnostic(m) });
  assert.equal(mptcpSysctls().path_manager ?? mptcpSysctls().pm_type, pristine.path_manager ? 'userspace' : '1');

  const loads = [];
  for (let i = 0; i < 2; i++) {
    loads.push({ host: 'origin.test', page: 'e3-100k', multipath: true });
    loads.push({ host: 'sp.origin.test', page: 'search', multipath: false });
  }
  const t0ns = Date.now() * 1e6;
  const mix = await adaptiveMix(session, actuator, loads, { log: (m) => t.diagnostic(m) });
  await new Promise((r) => setTimeout(r, 500)); // conn lines are written at close
  const conns = session.readOrigin('conn', t0ns - 1e9).filter((c) => c.open_ns >= t0ns);
  const recs = ((await actuator.status()).result.backend.connections ?? []).filter((r) => r.established_ns >= t0ns);

  // A second browser: kill -9 its host while its pooled connections hold cellular subflows.
  let hostKill = null;
  await adaptiveMix(session, actuator, [{ host: 'origin.test', page: 'e3-100k', multipath: true }], {
    onHost: async ({ hostPid }) => {
      // The browser still holds its pooled connections: the helper holds a lease and cellular subflows.
      const st = (await actuator.status()).result;
      const before = { lease_left_ms: st.lease_left_ms, multipath_addresses: st.backend.multipath_addresses, subflows: cellSubflows() };
      const killedAt = new Date().toISOString();
      process.kill(hostPid, 'SIGKILL');
      const undoneMs = await until(async () => {
        const s = (await actuator.status()).result;
        return s.backend.multipath_addresses === 0 && cellSubflows() === 0;
      }, LEASE_MS + 3000);
      // How it was undone: the lease lapsing, or the browser restarting the host (a new hello ends the old session).
      const audit = fs.readFileSync(path.join(actuator.stateDir, 'audit.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
      const after = audit.filter((a) => a.time > killedAt && a.verb !== 'status').map((a) => a.verb);
      hostKill = { before, undoneMs, by: after.includes('lease-expired') ? 'lease expiry' : after.includes('hello') ? 'new host session' : after.join(',') };
    },
  });

  // Every decision reached the actuator.
  t.diagnostic(`decisions: ${JSON.stringify(mix.decisions)}`);
  for (const d of mix.decisions) assert.equal(d.actuation, 'ok', `${d.origin}: actuation ${d.actuation}`);
  const decided = {};
  for (const d of mix.decisions) for (const a of (d.addrs ?? '').split(',').filter(Boolean)) decided[a] = d.multipath;
  assert.equal(decided[session.serverAddr], true);
  assert.equal(decided[SP_ADDR], false);

  // Host killed: its changes were undone within lease + 1 s.
  t.diagnostic(`host kill -9: ${JSON.stringify(hostKill)}`);
  assert.ok(hostKill.before.multipath_addresses >= 1 && hostKill.before.subflows >= 1, `nothing held before the kill: ${JSON.stringify(hostKill.before)}`);
  assert.ok(hostKill.undoneMs !== null && hostKill.undoneMs <= LEASE_MS + 1000, `undone after ${hostKill.undoneMs} ms`);

  // The server's view: connections by the address they reached, with or without a wwan0 subflow; the kernel's
  // view, from the actuator's records of MPTCP events.
  const srv = classifyConns(conns, decided);
  const kMP = recs.filter((r) => r.multipath);
  const kSP = recs.filter((r) => !r.multipath);
  t.diagnostic(`server log: multipath-decided conns with a wwan0 subflow ${pct(srv.mp.cell, srv.mp.n)}; single-path-decided with one ${pct(srv.sp.cell, srv.sp.n)}; by address ${JSON.stringify(srv.byAddr)}`);
  t.diagnostic(`kernel (actuator events): multipath-decided with a cellular subflow ${pct(kMP.filter((r) => r.subflow).length, kMP.length)}; single-path with one ${pct(kSP.filter((r) => r.subflow).length, kSP.length)}`);
  assert.ok(srv.mp.n >= 1 && srv.sp.n >= 1, `too few connections: ${JSON.stringify(srv)}`);
  assert.equal(srv.undecided.n, 0, 'a connection reached an address no decision covered');
  assert.equal(srv.mp.cell, srv.mp.n, 'a multipath-decided connection had no wwan0 subflow');
  assert.equal(srv.sp.cell, 0, 'a single-path-decided connection had a wwan0 subflow');
  assert.ok(kMP.length >= 1 && kMP.every((r) => r.subflow), `kernel: ${JSON.stringify(kMP)}`);
  assert.ok(kSP.length >= 1 && kSP.every((r) => !r.subflow), `kernel: ${JSON.stringify(kSP)}`);

  // Actuator killed: the namespace keeps the userspace path manager until --restore, which brings back every
  // /proc/sys/net/mptcp value; a restart after a crash restores too.
  process.kill(actuator.pid, 'SIGKILL');
  await actuator.stop();
  assert.notDeepEqual(mptcpSysctls(), pristine, 'the kill left nothing to restore: the check would prove nothing');
  execFileSync('ip', ['netns', 'exec', CLIENT_NS, hostBinary, 'actuator', '--restore', '--state-dir', actuator.stateDir], { stdio: 'pipe' });
  assert.deepEqual(mptcpSysctls(), pristine);

  actuator = await Actuator.start();
  process.kill(actuator.pid, 'SIGKILL');
  await actuator.stop();
  actuator = await Actuator.start();
  assert.match(actuator.stderr, /restored the undo record/);
  await actuator.stop();
  actuator = null;
  assert.deepEqual(mptcpSysctls(), pristine);
});
