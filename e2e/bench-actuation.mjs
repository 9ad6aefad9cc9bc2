// Benchmark (not a test) of per-connection actuation in the testbed:
//   - cellular subflow creation delay after the connection's ESTABLISHED event, p50/p99, with the actuator's
//     userspace path manager (mp-adaptive) next to the in-kernel path manager (mp-always) in the same run, both
//     timed from `ip mptcp monitor` in the client namespace (plus the actuator's own records);
//   - per-origin precision (multipath-decided connections with a wwan0 subflow / all of them) and the reverse
//     (single-path-decided connections without one / all of them), from the origin server's per-subflow log.
//
//   node e2e/bench-actuation.mjs [--loads 40] [--kernel-loads 10] [--per-browser 2]
// Needs root, kernel MPTCP and the build; the issue asks for at least 200 loads (--loads 200).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { commandLine } from './lib/cli.mjs';
import { Session, Actuator, adaptiveMix, classifyConns, canRun, testbedBin, CLIENT_NS, CELL_ADDR } from './testbed/lib.mjs';

const SP_ADDR = '10.200.3.3';

const USAGE = `usage: node e2e/bench-actuation.mjs [--loads N] [--kernel-loads N] [--per-browser N] [--mp-page P] [--sp-page P]

Benchmark of per-connection actuation in the testbed (root, kernel MPTCP, the build): subflow creation delay after
ESTABLISHED, userspace PM (actuator) against the in-kernel PM, and per-origin precision.
  --loads N          mp-adaptive page loads (default 40; at least 2)
  --kernel-loads N   mp-always loads, the in-kernel baseline of the same run (default 10)
  --per-browser N    loads per browser before a fresh one (default 2)
  --mp-page P        the page of the origin decided multipath (default e3-100k)
  --sp-page P        the page of the origin decided single-path (default search)
`;

// Monitor timestamps MPTCP events as `ip mptcp monitor` prints them (one line per event, flushed).
class Monitor {
  constructor() {
    this.events = [];
    this.child = spawn('ip', ['netns', 'exec', CLIENT_NS, 'ip', 'mptcp', 'monitor'], { stdio: ['ignore', 'pipe', 'ignore'] });
    readline.createInterface({ input: this.child.stdout }).on('line', (l) => {
      const t = process.hrtime.bigint();
      const m = l.match(/^\[\s*(\w+)\]\s+token=(\w+)(.*)$/);
      if (m) this.events.push({ t, type: m[1], token: m[2], rest: m[3] });
    });
  }
  // delays returns, per connection with a cellular subflow, ms from ESTABLISHED to SF_ESTABLISHED.
  delays(cellAddr) {
    const est = new Map();
    const out = [];
    for (const e of this.events) {
      if (e.type === 'ESTABLISHED') est.set(e.token, e.t);
      if (e.type === 'SF_ESTABLISHED' && e.rest.includes(`saddr4=${cellAddr} `) && est.has(e.token)) {
        out.push(Number(e.t - est.get(e.token)) / 1e6);
        est.delete(e.token);
      }
    }
    return out;
  }
  reset() {
    this.events = [];
  }
  stop() {
    this.child.kill('SIGTERM');
  }
}

function quantile(xs, q) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}
const fmt = (xs) => `p50 ${quantile(xs, 0.5).toFixed(2)} ms, p99 ${quantile(xs, 0.99).toFixed(2)} ms (n=${xs.length})`;

async function main() {
  const values = commandLine('bench-actuation', USAGE, {
    loads: { type: 'string', default: '40' },
    'kernel-loads': { type: 'string', default: '10' },
    'per-browser': { type: 'string', default: '2' },
    'mp-page': { type: 'string', default: 'e3-100k' },
    'sp-page': { type: 'string', default: 'search' },
  });
  const N = Number(values.loads);
  const K = Number(values['kernel-loads']);
  const per = Math.max(1, Number(values['per-browser']));
  if (!(N >= 2) || !(K >= 0)) throw new Error('--loads must be at least 2 and --kernel-loads at least 0');
  const why = canRun();
  if (why) throw new Error(`the testbed cannot run here: ${why}`);

  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-bench-act-'));
  const session = await Session.open({ outDir, names: { 'sp.origin.test': SP_ADDR }, log: console.log });
  let actuator;
  const mon = new Monitor();
  try {
    // In-kernel path manager: mp-always, one fresh browser per load.
    execFileSync(testbedBin, ['mode', 'mp']);
    mon.reset();
    for (let i = 0; i < K; i++) {
      const r = await session.load({ page: values['mp-page'], mode: 'mp-always', rep: i, runId: `bench-kernel-${i}` });
      if (!r.ok) console.log(`kernel load ${i + 1}: FAILED ${r.error}`);
    }
    await new Promise((r) => setTimeout(r, 300));
    const kernelDelays = mon.delays(CELL_ADDR);

    // Userspace path manager through the actuator: alternate multipath and single-path origins.
    execFileSync(testbedBin, ['mode', 'sp-wifi']);
    actuator = await Actuator.start();
    mon.reset();
    const t0ns = Date.now() * 1e6;
    const loads = [];
    for (let i = 0; i < N; i++) {
      loads.push(i % 2 === 0 ? { host: 'origin.test', page: values['mp-page'], multipath: true } : { host: 'sp.origin.test', page: values['sp-page'], multipath: false });
    }
    const decided = {};
    let notOk = 0;
    for (let i = 0; i < loads.length; i += per) {
      const mix = await adaptiveMix(session, actuator, loads.slice(i, i + per));
      for (const d of mix.decisions) {
        if (d.actuation !== 'ok') notOk++;
        for (const a of (d.addrs ?? '').split(',').filter(Boolean)) decided[a] = d.multipath;
      }
      process.stdout.write(`\rloads ${Math.min(i + per, N)}/${N}`);
    }
    console.log('');
    await new Promise((r) => setTimeout(r, 500));
    const userDelays = mon.delays(CELL_ADDR);
    const st = (await actuator.status()).result.backend;
    const recs = (st.connections ?? []).filter((r) => r.established_ns >= t0ns);
    const ownDelays = recs.filter((r) => r.subflow && r.subflow_delay_us > 0).map((r) => r.subflow_delay_us / 1000);
    const conns = session.readOrigin('conn', t0ns - 1e9).filter((c) => c.open_ns >= t0ns);
    const srv = classifyConns(conns, decided, { minLifeMs: 95 }); // 25 ms to the client's ESTABLISHED + one 70 ms LTE RTT

    const kMP = recs.filter((r) => r.multipath);
    const kSP = recs.filter((r) => !r.multipath);
    const lines = [
      `loads: ${N} adaptive (${per} per browser), ${K} mp-always; decisions not actuated: ${notOk}`,
      `subflow delay after ESTABLISHED, ip mptcp monitor:`,
      `  userspace PM (actuator): ${fmt(userDelays)}`,
      `  in-kernel PM:            ${fmt(kernelDelays)}`,
      `  actuator's own records:  ${fmt(ownDelays)}`,
      `per origin, server log (conns by the address they reached):`,
      `  origin.test (multipath):       precision ${srv.mp.cell + srv.mpShort.cell}/${srv.mp.n + srv.mpShort.n} with a wwan0 subflow = ${((100 * (srv.mp.cell + srv.mpShort.cell)) / (srv.mp.n + srv.mpShort.n)).toFixed(1)} %; held at least 95 ms by the server: ${srv.mp.cell}/${srv.mp.n}`,
      `  sp.origin.test (single path):  ${srv.sp.n - srv.sp.cell}/${srv.sp.n} without one = ${((100 * (srv.sp.n - srv.sp.cell)) / srv.sp.n).toFixed(1)} %`,
      `  connections to undecided addresses: ${srv.undecided.n}`,
      `per origin, kernel events (actuator): multipath ${kMP.filter((r) => r.subflow).length}/${kMP.length} with a subflow; single path ${kSP.filter((r) => !r.subflow).length}/${kSP.length} without; subflow errors ${st.stats.subflow_errors}`,
    ];
    // A connection that ends before the join's handshake (one LTE round trip after it was asked for) can have no
    // cellular subflow whatever the path manager: such misses are listed with how long the connection lived.
    const missed = recs.filter((r) => r.multipath && !r.subflow);
    const lived = (r) => (r.closed_ns && r.established_ns ? ((r.closed_ns - r.established_ns) / 1e6).toFixed(1) : 'open');
    const LTE_RTT_MS = 70; // e2e/profiles/baseline.json
    const longMP = kMP.filter((r) => !r.closed_ns || (r.closed_ns - r.established_ns) / 1e6 >= LTE_RTT_MS);
    lines.push(`  multipath-decided connections that lived at least one LTE RTT (${LTE_RTT_MS} ms) after ESTABLISHED: ${longMP.filter((r) => r.subflow).length}/${longMP.length} with a subflow`);
    if (missed.length) {
      lines.push(`multipath-decided connections without a subflow: ${missed.length}`);
      for (const r of missed) lines.push(`  token ${r.token}: asked ${r.asked_ns ? 'yes' : 'no'}, lived ${lived(r)} ms after ESTABLISHED${r.error ? `, ${r.error}` : ''}`);
    }
    console.log(lines.join('\n'));
  } finally {
    mon.stop();
    await actuator?.stop();
    await session.close();
    fs.rmSync(outDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err.stack || err.message || err);
  process.exit(1);
});
