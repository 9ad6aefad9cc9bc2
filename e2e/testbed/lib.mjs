// Driving the two-path testbed: the namespaces and link emulators (dist/testbed), the origin server
// (dist/origin in the server namespace) and real Chromium in the client namespace under mptcpize.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { launch, makeProfile, untilStatus, untilRules } from '../lib/browser.mjs';
import { dist, root, hostBinary, extensionId } from '../lib/paths.mjs';

export const testbedBin = path.join(dist, 'testbed');
export const originBin = path.join(dist, 'origin');
const wrapper = path.join(root, 'e2e', 'testbed', 'chromium-in-client.sh');

export const MODES = ['sp-wifi', 'sp-cell', 'mp-always', 'mp-adaptive'];
// The testbed's kernel setting for each mode; mp-adaptive is resolved per load from the host's decision.
const KERNEL_MODE = { 'sp-wifi': 'sp-wifi', 'sp-cell': 'sp-cell', 'mp-always': 'mp' };

export function canRun() {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces)';
  if (!fs.existsSync('/proc/sys/net/mptcp/enabled')) return 'the kernel has no MPTCP';
  if (!fs.existsSync('/dev/net/tun')) return 'no /dev/net/tun';
  for (const [bin, what] of [[testbedBin, 'dist/testbed'], [originBin, 'dist/origin'], [hostBinary, 'dist/mpsurf-host']]) {
    if (!fs.existsSync(bin)) return `${what} is not built (npm run build / npm start)`;
  }
  for (const cmd of ['mptcpize', 'ip']) {
    try {
      execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'pipe' });
    } catch {
      return `${cmd} is not installed`;
    }
  }
  return null;
}

function tb(...args) {
  return execFileSync(testbedBin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

// waitForLine resolves with the first stdout line that pred accepts, or rejects when the process exits.
function waitForLine(child, pred, what, timeoutMs = 60000) {
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout });
    const timer = setTimeout(() => reject(new Error(`${what}: not ready after ${timeoutMs} ms`)), timeoutMs);
    rl.on('line', (line) => {
      if (pred(line)) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? sig}) before it was ready`));
    });
  });
}

function stopChild(child, timeoutMs = 15000) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
      resolve();
    }, timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      resolve();
    }
  });
}

// Session: one testbed up with one profile, the origin server in it, torn down by close().
export class Session {
  static async open({ profile = 'baseline', outDir, log = () => {} }) {
    fs.mkdirSync(outDir, { recursive: true });
    const s = new Session();
    s.outDir = outDir;
    s.profile = profile;
    s.timelineDir = path.join(outDir, 'timeline', profile);
    fs.mkdirSync(s.timelineDir, { recursive: true });
    s.originLog = path.join(outDir, `origin-${profile}.jsonl`);
    fs.rmSync(s.originLog, { force: true });
    const cleanup = () => s.close();
    s.onSignal = () => cleanup().finally(() => process.exit(130));
    process.once('SIGINT', s.onSignal);
    process.once('SIGTERM', s.onSignal);
    try {
      log(`testbed up: profile ${profile}`);
      s.testbed = spawn(testbedBin, ['up', '--profile', profile, '--timeline', s.timelineDir], {
        detached: true,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await waitForLine(s.testbed, (l) => l.trim() === 'ready', 'testbed up');
      s.info = JSON.parse(tb('info', '--json'));
      s.serverAddr = s.info.server.addr;
      s.cellTech = profileTech(profile);
      s.origin = spawn(
        'ip',
        ['netns', 'exec', 'mps-server', originBin, 'serve', '--listen', ':443', '--listen-h1', ':8443', '--log', s.originLog],
        { detached: true, stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const start = JSON.parse(await waitForLine(s.origin, (l) => l.startsWith('{'), 'origin server'));
      s.spki = start.spki_sha256;
      s.pages = JSON.parse(execFileSync(originBin, ['corpus', '--list', '--json'], { encoding: 'utf8' }));
      return s;
    } catch (err) {
      await s.close();
      throw err;
    }
  }

  page(name) {
    const list = Array.isArray(this.pages) ? this.pages : this.pages.pages;
    const p = list.find((x) => x.name === name);
    if (!p) throw new Error(`no page ${name} in the corpus`);
    return p;
  }

  counters() {
    return JSON.parse(tb('counters', '--json'));
  }

  async close() {
    process.removeListener('SIGINT', this.onSignal);
    process.removeListener('SIGTERM', this.onSignal);
    await stopChild(this.origin);
    await stopChild(this.testbed);
    this.origin = this.testbed = null;
  }

  // readOrigin returns the origin's log lines of the given type written at or after sinceNs.
  readOrigin(type, sinceNs) {
    if (!fs.existsSync(this.originLog)) return [];
    return fs
      .readFileSync(this.originLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((x) => x.type === type && (x.open_ns ?? x.time_ns) >= sinceNs);
  }

  // decideDirect asks a host process the same question the extension asks, for a mode chosen before the
  // browser opens its first connection (mp-adaptive until per-connection actuation exists).
  decideDirect(origin) {
    const req = JSON.stringify({ v: 1, id: 1, type: 'decide', body: { origin, tab: -1, nav: 'testbed' } });
    const framed = execFileSync(hostBinary, ['frame', req]);
    const out = execFileSync(hostBinary, [`chrome-extension://${extensionId}/`], { input: framed, stdio: ['pipe', 'pipe', 'pipe'] });
    const reply = JSON.parse(execFileSync(hostBinary, ['unframe'], { input: out, encoding: 'utf8' }).trim().split('\n')[0]);
    if (!reply.ok) throw new Error(`host refused to decide: ${JSON.stringify(reply.error)}`);
    return reply.body;
  }

  // load performs one cold page load in a fresh browser profile and returns its run record.
  async load({ page, mode, proto = 'h2', rep = 0, runId }) {
    const p = this.page(page);
    const host = 'origin.test'; // the origin server's certificate name (dist/origin serve --name)
    const port = proto === 'h2' ? 443 : 8443;
    const origin = port === 443 ? `https://${host}` : `https://${host}:${port}`;
    const url = origin + p.path;
    let decision = null;
    let kernelMode = KERNEL_MODE[mode];
    if (mode === 'mp-adaptive') {
      decision = this.decideDirect(origin);
      kernelMode = decision.multipath ? 'mp' : 'sp-wifi';
    }
    tb('mode', kernelMode);

    const profile = makeProfile({ prefix: 'mpsurf-tb-' });
    const rec = {
      run_id: runId,
      mode,
      profile: this.profile,
      cell_tech: this.cellTech,
      page,
      page_bytes: p.bytes,
      objects: p.objects,
      proto: proto === 'h2' ? 'h2' : 'http/1.1',
      rep,
      kernel_mode: kernelMode,
      ok: false,
      timeline_dir: path.relative(this.outDir, this.timelineDir),
    };
    let browser;
    try {
      browser = await launch(profile.dir, {
        executablePath: wrapper,
        args: [
          `--ignore-certificate-errors-spki-list=${this.spki}`,
          `--host-resolver-rules=MAP ${host} ${this.serverAddr}, MAP *.${host} ${this.serverAddr}`,
          '--disable-quic',
        ],
      });
      await untilStatus(browser.worker, (s) => s.host === 'connected', 15000);
      await untilRules(browser.worker, (r) => r.length > 0);
      const before = this.counters();
      const tab = await browser.context.newPage();
      const startNs = BigInt(Date.now()) * 1000000n;
      await tab.goto(url, { waitUntil: 'load', timeout: 180000 });
      const nav = await tab.evaluate(() => {
        const n = performance.getEntriesByType('navigation')[0];
        return { plt: n.loadEventEnd - n.startTime, proto: n.nextHopProtocol };
      });
      await new Promise((r) => setTimeout(r, 300));
      const after = this.counters();
      const decisions = await browser.worker.evaluate(() => self.mpsurf.decisions());
      const seen = Object.values(decisions).find((d) => d && d.origin === origin);
      decision = decision ?? (seen ? pickDecision(seen) : null);
      if (mode === 'mp-adaptive' && seen) decision = pickDecision(seen);
      rec.start_unix_ns = Number(startNs);
      rec.end_unix_ns = Number(startNs) + Math.round(nav.plt * 1e6);
      rec.plt_ms = nav.plt;
      rec.next_hop_protocol = nav.proto;
      rec.link_bytes = diffCounters(before, after);
      rec.decision = decision;
      rec.ok = true;
    } catch (err) {
      rec.error = String(err.message || err).split('\n')[0];
    } finally {
      await browser?.context.close().catch(() => {});
      profile.remove();
    }
    if (rec.ok) {
      // Connections close with the browser; their per-subflow totals are logged then.
      await new Promise((r) => setTimeout(r, 300));
      const conns = this.readOrigin('conn', rec.start_unix_ns - 5e9).filter((c) => c.open_ns >= rec.start_unix_ns - 1e9);
      const reqs = this.readOrigin('request', rec.start_unix_ns);
      rec.server_path_bytes = { wlan0: 0, wwan0: 0 };
      for (const c of conns) for (const sf of c.subflows || []) if (sf.path) rec.server_path_bytes[sf.path] = (rec.server_path_bytes[sf.path] || 0) + sf.bytes_sent;
      rec.requests = reqs.length;
      rec.header_seen = reqs.length > 0 && reqs.every((r) => r.mp_policy && r.mp_policy.raw);
      rec.header_missing = reqs.filter((r) => !(r.mp_policy && r.mp_policy.raw)).map((r) => r.path).slice(0, 5);
      rec.mptcp_conns = conns.filter((c) => c.mptcp).length;
      rec.conns = conns.length;
    }
    try {
      tb('flush');
    } catch {}
    return rec;
  }
}

// profileTech reads the cellular technology (lte or 3g) of a built-in profile or a profile file.
function profileTech(profile) {
  const file = fs.existsSync(profile) ? profile : path.join(root, 'e2e', 'profiles', `${profile}.json`);
  return JSON.parse(fs.readFileSync(file, 'utf8')).links.wwan0.tech;
}

function pickDecision(d) {
  return { multipath: d.multipath, theta1: d.theta1, theta2: d.theta2 ?? null, reason: d.reason };
}

function diffCounters(a, b) {
  const out = {};
  for (const ifname of ['wlan0', 'wwan0']) {
    const x = a[ifname] || a.interfaces?.[ifname];
    const y = b[ifname] || b.interfaces?.[ifname];
    out[ifname] = { rx: y.rx_bytes - x.rx_bytes, tx: y.tx_bytes - x.tx_bytes };
  }
  return out;
}
