// Driving the two-path testbed: the namespaces and link emulators (dist/testbed), the origin server
// (dist/origin in the server namespace) and a real browser in the client namespace under mptcpize: Chromium, or
// Debian's Firefox ESR (Session.open's browser).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { launch, makeProfile, untilStatus, untilRules, hostPids, withoutDailyLimit } from '../lib/browser.mjs';
import { launchFirefox, makeFirefoxProfile } from '../lib/firefox.mjs';
import { dist, root, hostBinary, actuatorBinary, extensionId } from '../lib/paths.mjs';
import { SquidProxy, squidMissing, PROXY_ADDR } from './proxy.mjs';
import { asRemote } from '../lib/priority.mjs';
import { TOPO } from '../lib/topo.mjs';

export const testbedBin = path.join(dist, 'testbed');
export const originBin = path.join(dist, 'origin');
const wrapper = path.join(root, 'e2e', 'testbed', 'chromium-in-client.sh');
const firefoxWrapper = path.join(root, 'e2e', 'testbed', 'firefox-in-client.mjs');
// The browsers a session can drive.
export const BROWSERS = ['chromium', 'firefox'];

export const MODES = ['sp-wifi', 'sp-cell', 'mp-always', 'mp-rule', 'mp-adaptive', 'proxy-always', 'proxy-rule', 'proxy-adaptive'];
// The testbed's kernel setting for each mode. In mp-adaptive the in-kernel path manager adds nothing (sp-wifi:
// no subflow endpoint) and the actuator's userspace path manager opens the cellular subflow per connection.
// proxy-always: every https origin through the relay and the proxy, and the in-kernel path manager gives every
// MPTCP connection (the relay's) the cellular subflow; proxy-adaptive: only origins decided multipath, with θ1/θ2
// per tunnel from the actuator (set-conn-policy). mp-rule and proxy-rule are mp-adaptive and proxy-adaptive with
// the host's every decision fixed to seed 001 §4.2's example policy (policy-models/baseline.json: multipath once
// 200 kB have come): the same host, helper and actuation, only the decision differs.
const KERNEL_MODE = {
  'sp-wifi': 'sp-wifi', 'sp-cell': 'sp-cell', 'mp-always': 'mp', 'mp-rule': 'sp-wifi', 'mp-adaptive': 'sp-wifi',
  'proxy-always': 'mp', 'proxy-rule': 'sp-wifi', 'proxy-adaptive': 'sp-wifi',
};
const PROXY_ROUTE = { 'proxy-always': 'all', 'proxy-rule': 'decided', 'proxy-adaptive': 'decided' };
// The modes whose native host decides by MPSurf's model (measures the links, keeps the session's decision log).
const ADAPTIVE = new Set(['mp-adaptive', 'proxy-adaptive']);
// The modes whose host follows the rule's policy file; it measures too, as the adaptive host does, so that the
// two modes' hosts put the same probes on the links.
const RULE = new Set(['mp-rule', 'proxy-rule']);
export const RULE_POLICY = path.join(root, 'policy-models', 'baseline.json');
// The modes whose host decides (by the model or the rule) and whose decisions the helper carries out.
export const DECIDES = new Set([...ADAPTIVE, ...RULE]);
// The modes whose decisions depend on the user's preference: the grid runs them once per preference.
export const PER_PREFERENCE = ADAPTIVE;

// The user's preferences (the extension's options page, extension/src/prefs.ts Mode), as the grid's records and
// the model name them; parsePreference also takes the command line's battery-saver.
export const PREFERENCES = ['performance', 'balanced', 'battery_saver'];
export function parsePreference(s) {
  const v = String(s).trim().replace(/-/g, '_');
  return PREFERENCES.includes(v) ? v : null;
}

// The namespaces' name prefix: MPS_PREFIX, as dist/testbed reads it, so that two testbeds can run side by side.
export const PREFIX = process.env.MPS_PREFIX || 'mps';
export const CLIENT_NS = PREFIX + TOPO.namespace_suffixes.client;
export const SERVER_NS = PREFIX + TOPO.namespace_suffixes.server;
const PROXY_NS = PREFIX + TOPO.namespace_suffixes.proxy;
// Fixed addresses and interfaces of the testbed (e2e/topo/names.go, through names.json).
export const CELL_ADDR = TOPO.addresses.cell;
const WIFI_IF = TOPO.interfaces.wifi;
const CELL_IF = TOPO.interfaces.cell;
export const ACTUATOR_SOCKET = `/run/mpsurf/actuator-${PREFIX}.sock`;
export const ACTUATOR_STATE = `/run/mpsurf/actuator-${PREFIX}`;

// Actuator: `mpsurf-actuator --backend userspace` as root in the client namespace, for the browser's host
// to reach over its socket. It selects the userspace path manager there and restores the namespace on exit.
export class Actuator {
  static async start({ socket = ACTUATOR_SOCKET, stateDir = ACTUATOR_STATE, log = () => {} } = {}) {
    fs.mkdirSync(path.dirname(socket), { recursive: true });
    const a = new Actuator();
    a.socket = socket;
    a.stateDir = stateDir;
    a.stderr = '';
    a.child = spawn(
      'ip',
      ['netns', 'exec', CLIENT_NS, actuatorBinary, '--backend', 'userspace', '--socket', socket, '--state-dir', stateDir,
        '--allow-uid', '0', '--cell-addr', CELL_ADDR],
      { detached: true, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    a.child.stderr.on('data', (b) => {
      a.stderr = (a.stderr + b).slice(-8192);
    });
    const t0 = Date.now();
    for (;;) {
      if (a.child.exitCode !== null) throw new Error(`actuator exited (${a.child.exitCode}): ${a.stderr.trim()}`);
      if (a.stderr.includes('actuator started')) break;
      if (Date.now() - t0 > 10000) {
        await a.stop();
        throw new Error(`actuator not ready after 10 s: ${a.stderr.trim()}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    log(`actuator up (pid ${a.child.pid})`);
    return a;
  }

  // The actuator's own process (ip netns exec execs it, so the pid is the same).
  get pid() {
    return this.child.pid;
  }

  status() {
    return actuatorCall(this.socket, { id: 1, verb: 'status' });
  }

  // stop ends the actuator; its state directory (audit log) goes too unless an undo record is left to restore.
  async stop() {
    await stopChild(this.child);
    if (!fs.existsSync(path.join(this.stateDir, 'undo.json'))) fs.rmSync(this.stateDir, { recursive: true, force: true });
    try {
      fs.rmdirSync(path.dirname(this.socket)); // only when empty: an installed unit's socket keeps it
    } catch {
      // not empty, or gone already
    }
  }
}

// actuatorCall sends one request line and resolves with the response line, or rejects within timeoutMs.
export function actuatorCall(socket, req, timeoutMs = 3000) {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(socket);
    let buf = '';
    const timer = setTimeout(() => {
      c.destroy();
      reject(new Error(`actuator ${req.verb}: no answer in ${timeoutMs} ms`));
    }, timeoutMs);
    c.on('connect', () => c.write(JSON.stringify(req) + '\n'));
    c.on('data', (b) => {
      buf += b;
      const i = buf.indexOf('\n');
      if (i >= 0) {
        clearTimeout(timer);
        c.end();
        resolve(JSON.parse(buf.slice(0, i)));
      }
    });
    c.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

// mptcpSysctls reads /proc/sys/net/mptcp/* as the client namespace sees it.
export function mptcpSysctls(ns = CLIENT_NS) {
  const out = execFileSync('ip', ['netns', 'exec', ns, 'sh', '-c', 'cd /proc/sys/net/mptcp && for f in *; do printf "%s=%s\\n" "$f" "$(cat $f)"; done'], {
    encoding: 'utf8',
  });
  return Object.fromEntries(out.split('\n').filter(Boolean).map((l) => l.split(/=(.*)/s).slice(0, 2)));
}

/**
 * Throws, saying why and what to do, unless PREFIX's namespaces are free for a test. A testbed of this prefix that
 * runs (it holds its lock under /run/mpsurf, e2e/topo/lock.go; `testbed info` asks) is another run's, and the test
 * must not take it over; namespaces named PREFIX-* without one are left over from a run that did not clean up, a
 * fault to fix, not a reason to skip. Namespaces of other prefixes (testbeds side by side) are not looked at.
 */
export function assertPrefixFree() {
  const info = JSON.parse(execFileSync(testbedBin, ['info', '--json', '--prefix', PREFIX], { encoding: 'utf8' }));
  if (info.running) {
    throw new Error(`a testbed with prefix ${PREFIX} is running (pid ${info.pid}): run the tests with another MPS_PREFIX, or stop it with \`dist/testbed down --prefix ${PREFIX}\``);
  }
  const left = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.split(' ')[0])
    .filter((n) => n.startsWith(`${PREFIX}-`));
  if (left.length > 0) {
    throw new Error(
      `namespaces left behind with prefix ${PREFIX}: ${left.join(', ')} (no testbed of that prefix runs); remove them with \`dist/testbed down --prefix ${PREFIX}\` or \`${left.map((n) => `ip netns del ${n}`).join('; ')}\``,
    );
  }
}

export function canRun() {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces)';
  if (!fs.existsSync('/proc/sys/net/mptcp/enabled')) return 'the kernel has no MPTCP';
  if (!fs.existsSync('/dev/net/tun')) return 'no /dev/net/tun';
  for (const [bin, what] of [[testbedBin, 'dist/testbed'], [originBin, 'dist/origin'], [hostBinary, 'dist/mpsurf-host'], [actuatorBinary, 'dist/mpsurf-actuator']]) {
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

// testbedSkip says why a testbed test cannot run on this machine (canRun), or, when asked, that the kernel has no
// userspace path manager or Squid is missing; false when it can run. Whether the prefix's namespaces are free is
// not a reason to skip: each test asserts it (assertPrefixFree).
export function testbedSkip({ userspace = false, squid = false } = {}) {
  const why = canRun() ?? (squid ? squidMissing() : null);
  if (why) return why;
  if (userspace && !fs.existsSync('/proc/sys/net/mptcp/path_manager') && !fs.existsSync('/proc/sys/net/mptcp/pm_type'))
    return 'the kernel has no userspace MPTCP path manager';
  return false;
}

// cellSubflows counts established TCP subflows from the cellular address in the client namespace, to dst when given.
export function cellSubflows(dst) {
  const args = ['netns', 'exec', CLIENT_NS, 'ss', '-tnH', 'state', 'established', 'src', CELL_ADDR, ...(dst ? ['dst', dst] : [])];
  return execFileSync('ip', args, { encoding: 'utf8' }).split('\n').filter(Boolean).length;
}

// linkBytes is a client-namespace device's rx+tx bytes (IP packets on the TUN links) from /proc/net/dev.
export function linkBytes(dev) {
  const out = execFileSync('ip', ['netns', 'exec', CLIENT_NS, 'cat', '/proc/net/dev'], { encoding: 'utf8' });
  const line = out.split('\n').find((l) => l.trim().startsWith(`${dev}:`));
  if (!line) throw new Error(`${dev} not in /proc/net/dev of ${CLIENT_NS}`);
  const f = line.split(':')[1].trim().split(/\s+/).map(Number);
  return f[0] + f[8];
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
  // names: extra host names, each on its own server address ({ 'sp.origin.test': '10.200.3.3' }), so that the
  // actuator (which maps destination addresses to origins) can tell their connections apart.
  // proxy: the proxy host with Squid (e2e/testbed/proxy.mjs) between the router and the origin; originMptcp false:
  // the origin listens with plain TCP, as nearly every website does.
  // originArgs: more flags for the origin server (the downloads grid adds its plain-TCP listener).
  //
  // profile: a built-in profile id or a profile file (an absolute path, or one relative to the working directory);
  // output files are named after the profile's own id. corpus: corpus files (absolute paths) whose sites the
  // origin serves beside the built-in ones. history: what the mp-adaptive loads' native host remembers, "session"
  // (one decision log for this profile's mp-adaptive loads, fed by no other mode) or "none" (a new one per load).
  // browser: the browser every load of the session runs in, "chromium" or "firefox".
  static async open({ profile = 'baseline', outDir, log = () => {}, names = {}, proxy = false, originMptcp = true, originArgs = [], corpus = [], history = 'session', browser = 'chromium' }) {
    if (!HISTORIES.includes(history)) throw new Error(`history ${history}: want one of ${HISTORIES.join(', ')}`);
    if (!BROWSERS.includes(browser)) throw new Error(`browser ${browser}: want one of ${BROWSERS.join(', ')}`);
    fs.mkdirSync(outDir, { recursive: true });
    const s = new Session();
    const prof = readProfile(profile);
    s.outDir = outDir;
    s.profile = prof.id;
    s.profileArg = prof.arg;
    s.cellTech = prof.tech;
    s.corpus = corpus;
    s.history = history;
    s.browser = browser;
    s.timelineDir = path.join(outDir, 'timeline', s.profile);
    fs.mkdirSync(s.timelineDir, { recursive: true });
    s.originLog = path.join(outDir, `origin-${s.profile}.jsonl`);
    fs.rmSync(s.originLog, { force: true });
    // Each deciding mode keeps a decision log of its own (hostKind), and each preference too: the two adaptive
    // modes must not teach each other, nor three users with different preferences.
    const dbFile = new RegExp(`^host-${s.profile.replace(/[.+]/g, '\\$&')}-.+\\.db(-wal|-shm)?$`);
    for (const f of fs.readdirSync(outDir)) if (dbFile.test(f)) fs.rmSync(path.join(outDir, f), { force: true });
    const cleanup = () => s.close();
    s.onSignal = () => cleanup().finally(() => process.exit(130));
    process.once('SIGINT', s.onSignal);
    process.once('SIGTERM', s.onSignal);
    try {
      s.pages = corpusManifest(corpus);
      log(`testbed up: profile ${s.profile}`);
      // --exit-with-parent: a grid stopped hard (SIGKILL, a crash) still takes its namespaces down with it.
      const [upBin, ...upArgs] = asRemote([testbedBin, 'up', '--profile', s.profileArg, '--timeline', s.timelineDir, '--exit-with-parent', ...(proxy ? ['--proxy'] : [])]);
      s.testbed = spawn(upBin, upArgs, {
        detached: true,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await waitForLine(s.testbed, (l) => l.trim() === 'ready', 'testbed up');
      s.info = JSON.parse(tb('info', '--json'));
      s.serverAddr = s.info.server.addr;
      // Every corpus site on a server address of its own: the actuator tells origins apart by destination address.
      const sites = siteAddresses(s.pages, s.serverAddr);
      s.names = { 'origin.test': s.serverAddr, 'third.origin.test': s.serverAddr, ...sites, ...names };
      for (const addr of new Set([...Object.values(sites), ...Object.values(names)])) {
        if (addr === s.serverAddr) continue;
        execFileSync('ip', ['-n', SERVER_NS, 'addr', 'add', `${addr}/24`, 'dev', s.info.server.if], { stdio: 'pipe' });
      }
      // CUBIC, decoupled per subflow: Linux's default when the seeds measured (seed 000 §4.1.4); this machine's
      // namespaces would otherwise inherit the host's BBR. The certificate covers every site's name by itself.
      const [originCmd, ...originArgv] = asRemote(['ip', 'netns', 'exec', SERVER_NS, originBin, 'serve', '--listen', ':443', '--listen-h1', ':8443',
        '--log', s.originLog, '--cc', 'cubic',
        '--name', Object.keys({ 'origin.test': 1, ...names }).filter((n) => n !== 'third.origin.test').join(','),
        ...corpus.flatMap((f) => ['--corpus', f]), ...(originMptcp ? [] : ['--mptcp=false']), ...originArgs]);
      s.origin = spawn(originCmd, originArgv,
        // Its error log (mostly browsers dropping speculative connections mid-handshake) goes to a file.
        { detached: true, stdio: ['ignore', 'pipe', fs.openSync(path.join(outDir, `origin-${s.profile}.stderr`), 'w')] },
      );
      const start = JSON.parse(await waitForLine(s.origin, (l) => l.startsWith('{'), 'origin server'));
      s.spki = start.spki_list; // both origins' certificates
      s.originMptcp = originMptcp;
      if (proxy) {
        s.proxy = await SquidProxy.start({ ns: PROXY_NS, dir: path.join(outDir, `squid-${s.profile}`), names: s.names, log });
        s.proxyServer = s.proxyTest().software ?? null;
      }
      return s;
    } catch (err) {
      await s.close();
      throw err;
    }
  }

  // resolverRules maps every name to its server address; the named ones before the wildcard.
  resolverRules() {
    const rules = Object.entries(this.names).map(([n, a]) => `MAP ${n} ${a}`);
    return [...rules, `MAP *.origin.test ${this.serverAddr}`].join(', ');
  }

  // hostBaseEnv is what the native host needs to measure the testbed's paths and to remember across loads, as
  // it would across page loads in one long browser session: the interface kinds (the testbed's TUN devices carry
  // no wireless or WWAN marks in sysfs), the probe target for RTT, the radio technology, and one decision log
  // for the whole session (each load's browser profile is new, so it would otherwise start from nothing).
  //
  // Only mp-adaptive loads decide anything: their host keeps the session's decision log (history "session") or
  // starts from nothing (history "none"; the log then lives in the load's browser profile and goes with it). The
  // other modes' hosts only set the header: they measure nothing and keep their log in the load's browser profile,
  // so that no sp-wifi or mp-always load teaches the adaptive host page sizes or link rates.
  //
  // mp-rule and proxy-rule hosts measure as the adaptive ones do and keep a session log of their own, but every
  // decision is the rule's policy file (MPSURF_POLICY). The adaptive modes' logs are per preference.
  hostBaseEnv(mode = 'mp-adaptive', preference = 'performance') {
    const kind = hostKind(mode, preference);
    const env = {
      MPSURF_NAMES: `${WIFI_IF}=wifi,${CELL_IF}=cellular`,
      MPSURF_PROBE_TARGET: `${this.serverAddr}:443`,
      MPSURF_CELL: this.cellTech,
      MPSURF_LOG: path.join(this.outDir, `host-${this.profile}-${kind}.log`),
    };
    if (!DECIDES.has(mode)) env.MPSURF_NO_MEASURE = '1';
    else if (this.history === 'session') env.MPSURF_DB = this.hostDB(mode, preference);
    if (RULE.has(mode)) env.MPSURF_POLICY = RULE_POLICY;
    // The rate probe (a path with no rate yet): the first 64 KiB of the origin's 1 MB file, its key pinned.
    if (DECIDES.has(mode)) Object.assign(env, { MPSURF_PROBE_URL: `https://${this.serverAddr}/dl/1m.bin`, MPSURF_PROBE_PINS: this.spki });
    return env;
  }

  // hostDB is the session's decision log of a deciding mode (and, for the adaptive modes, preference).
  hostDB(mode, preference = 'performance') {
    return path.join(this.outDir, `host-${this.profile}-${hostKind(mode, preference)}.db`);
  }

  // proxyConfigFile writes the proxy settings the host's relay reads (mode 0600, as the host itself writes them).
  proxyConfigFile() {
    const file = path.join(this.outDir, `proxy-${this.profile}.json`);
    if (!fs.existsSync(file)) {
      const { server, user, password, pin } = this.proxy.config();
      fs.writeFileSync(file, JSON.stringify({ server, user, password, pin }), { mode: 0o600 });
    }
    return file;
  }

  // proxyTest runs `mpsurf-host proxy test` from the client namespace (in-kernel path manager on, so that the test
  // connection gets its cellular subflow): what the proxy reports itself as, MPTCP, subflows, credentials.
  proxyTest() {
    const before = tb('info', '--json');
    tb('mode', 'mp');
    try {
      const out = execFileSync('ip', ['netns', 'exec', CLIENT_NS, hostBinary, 'proxy', 'test', '--json', '--target', 'origin.test:443'], {
        encoding: 'utf8',
        env: { ...process.env, MPSURF_PROXY_CONFIG: this.proxyConfigFile(), MPSURF_NAMES: `${WIFI_IF}=wifi,${CELL_IF}=cellular` },
      });
      return JSON.parse(out);
    } catch (e) {
      return JSON.parse(e.stdout || '{}');
    } finally {
      tb('mode', JSON.parse(before).mode || 'sp-wifi');
    }
  }

  // hostsFile writes the names as an /etc/hosts for Firefox, which has no resolver rules of its own
  // (firefox-in-client.mjs mounts it in the client namespace): every named host on its address.
  hostsFile() {
    const file = path.join(this.outDir, `hosts-${this.profile}`);
    const lines = ['127.0.0.1 localhost', '::1 localhost', ...Object.entries(this.names).map(([n, a]) => `${a} ${n}`)];
    fs.writeFileSync(file, lines.join('\n') + '\n');
    return file;
  }

  // launchBrowser starts the session's browser in the client namespace with a fresh profile, the native host
  // registered in it with env, and resolves once the host is connected: { profile, browser } (browser.mjs's
  // interface). Chromium takes the testbed's names and certificates as flags; Firefox reads the names from the
  // hosts file and accepts the origin's test certificate through its BiDi session. Neither uses QUIC: the origin
  // serves TCP only, and the seeds measured TCP.
  async launchBrowser({ prefix, env }) {
    if (this.browser === 'firefox') {
      const profile = makeFirefoxProfile({ prefix });
      try {
        const browser = await launchFirefox(profile, {
          executablePath: firefoxWrapper,
          env: { ...env, MPSURF_HOSTS_FILE: this.hostsFile() },
          acceptInsecureCerts: true,
          prefs: { 'network.http.http3.enable': false },
        });
        return { profile, browser };
      } catch (e) {
        profile.remove();
        throw e;
      }
    }
    const profile = makeProfile({ prefix });
    try {
      const browser = await launch(profile.dir, {
        executablePath: wrapper,
        env,
        args: [`--ignore-certificate-errors-spki-list=${this.spki}`, `--host-resolver-rules=${this.resolverRules()}`, '--disable-quic'],
      });
      return { profile, browser };
    } catch (e) {
      profile.remove();
      throw e;
    }
  }

  // hostsEnv is MPSURF_HOSTS for the native host: the same names, since Chromium's resolver rules are its own.
  hostsEnv() {
    return Object.entries(this.names).map(([n, a]) => `${n}=${a}`).join(',');
  }

  page(name) {
    const p = this.pages.pages.find((x) => x.name === name);
    if (!p) throw new Error(`no page ${name} in the corpus`);
    return p;
  }

  // urlPath is where page is on host: its own path on its site's host, /p/<name>/ on any other.
  urlPath(name, host) {
    const p = this.page(name);
    return host === p.host ? p.path : `/p/${p.name}/`;
  }

  counters() {
    return JSON.parse(tb('counters', '--json'));
  }

  // inFlight: packets inside the emulated links now (queued or delayed), both directions of every link.
  inFlight() {
    const stats = JSON.parse(tb('stats'));
    return Object.values(stats).reduce((n, s) => n + s.down.in_flight + s.up.in_flight, 0);
  }

  // quietCounters waits until neither client interface has received or sent a byte for quietMs and no packet is
  // left inside an emulated link (at most maxMs), and returns that reading: a load's bytes then start at zero.
  // Without it, what a previous load left in an emulated link's queue (an mp-always load over a 0.5 Mbit/s EVDO
  // trace drains for seconds after its browser closed) was counted as the next load's cellular bytes, whatever
  // that load decided. Quiet counters alone did not show it: the EVDO trace has delivery gaps of over a second,
  // and a held-out check counted such leftovers as small pages' cellular bytes
  // (e2e/results/ARCHIVE-2026.md, Decisions).
  async quietCounters({ quietMs = 300, maxMs = 20000, everyMs = 50 } = {}) {
    const t0 = Date.now();
    let last = this.counters();
    let since = Date.now();
    for (;;) {
      if (Date.now() - since >= quietMs && this.inFlight() === 0) return { counters: last, waitedMs: Date.now() - t0, quiet: true };
      if (Date.now() - t0 >= maxMs) return { counters: last, waitedMs: Date.now() - t0, quiet: false };
      await new Promise((r) => setTimeout(r, everyMs));
      const now = this.counters();
      const moved = Object.entries(diffCounters(last, now)).some(([, c]) => c.rx !== 0 || c.tx !== 0);
      if (moved) since = Date.now();
      last = now;
    }
  }

  async close() {
    process.removeListener('SIGINT', this.onSignal);
    process.removeListener('SIGTERM', this.onSignal);
    await this.proxy?.stop();
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

  // load performs one cold page load in a fresh browser profile and returns its run record. host: the page's own
  // site unless given (a name the origin's certificate covers); proto: "h2" or "h1" (the HTTP/1.1-only port), or
  // "site" for the protocol the page's site serves.
  async load({ page, mode, proto = 'h2', rep = 0, runId, host, hostEnv = {}, preference = 'performance' }) {
    if (!PREFERENCES.includes(preference)) throw new Error(`preference ${preference}: want one of ${PREFERENCES.join(', ')}`);
    const p = this.page(page);
    host ??= p.host;
    if (proto === 'site') proto = p.proto === 'http/1.1' ? 'h1' : 'h2';
    const port = proto === 'h2' ? 443 : 8443;
    const origin = port === 443 ? `https://${host}` : `https://${host}:${port}`;
    const url = origin + this.urlPath(page, host);
    let decision = null;
    const kernelMode = KERNEL_MODE[mode];
    // Every key the report needs is present from the start, so that a failed load is still a record it counts.
    const rec = {
      run_id: runId,
      mode,
      profile: this.profile,
      browser: this.browser,
      cell_tech: this.cellTech,
      page,
      page_bytes: p.bytes,
      objects: p.objects,
      proto: proto === 'h2' ? 'h2' : 'http/1.1',
      rep,
      host,
      history: DECIDES.has(mode) ? this.history : null,
      // The user's preference the adaptive host decided under (set on the options page); the other modes' loads
      // do not depend on it.
      preference: PER_PREFERENCE.has(mode) ? preference : null,
      kernel_mode: kernelMode,
      ...(this.proxy ? { proxy: { server: this.proxyServer ?? null, used: false }, origin_mptcp: this.originMptcp } : {}),
      ok: false,
      start_unix_ns: null,
      end_unix_ns: null,
      plt_ms: null,
      link_bytes: null,
      server_path_bytes: null,
      decision: null,
      header_seen: false,
      timeline_dir: path.relative(this.outDir, this.timelineDir),
    };
    // mp-adaptive: the host's decision, through the extension, reaches the kernel per connection via the actuator.
    let actuator = null;
    let profile;
    let browser;
    const route = PROXY_ROUTE[mode];
    try {
      if (route && !this.proxy) throw new Error(`mode ${mode} needs the proxy host (Session.open({ proxy: true }))`);
      tb('mode', kernelMode);
      rec.trace_offset_ms = traceOffsetMs(page, rep);
      if (DECIDES.has(mode)) actuator = await Actuator.start();
      ({ profile, browser } = await this.launchBrowser({
        prefix: 'mpsurf-tb-',
        env: {
          ...this.hostBaseEnv(mode, preference),
          ...(actuator ? { MPSURF_ACTUATOR: actuator.socket, MPSURF_HOSTS: this.hostsEnv() } : {}),
          // Proxy modes: the host's relay reaches the proxy over MPTCP; the browser itself stays plain TCP.
          ...(route ? { MPSURF_PROXY_CONFIG: this.proxyConfigFile(), MPSURF_MPTCPIZE: '0' } : {}),
          ...hostEnv,
        },
      }));
      await untilStatus(browser, (s) => s.host === 'connected', 15000);
      await untilRules(browser, (r) => r.length > 0);
      await withoutDailyLimit(browser);
      if (PER_PREFERENCE.has(mode)) rec.preference_set_ms = await setPreference(browser, preference);
      if (this.proxy) {
        const { settings } = await browser.call('multipath');
        await browser.call('setMultipath', { ...settings, route: route ?? 'off' });
        if (route) await untilProxy(browser, (v) => v.status?.relay && v.route === route, 10000);
      }
      const tab = await browser.newTab();
      const { counters: before, waitedMs, quiet } = await this.quietCounters();
      rec.quiet_wait_ms = waitedMs;
      rec.quiet = quiet;
      // A trace-driven link starts this load at the page's and repetition's own point of its trace, the same in
      // every mode (traceOffsetMs): otherwise each load met whatever stretch the trace had reached, and on the AT&T
      // trace one mode's load of a page fell into an outage that the other modes' loads missed. The rewind also
      // restarts every link's random loss for that point, so that the modes' loads of one page and repetition
      // draw the same losses. It comes last before the load, after the browser's and the host's start-up traffic.
      tb('rewind', String(rec.trace_offset_ms));
      const startNs = BigInt(Date.now()) * 1000000n;
      await tab.goto(url, { waitUntil: 'load', timeout: 180000 });
      const nav = await tab.evaluate(() => {
        const n = performance.getEntriesByType('navigation')[0];
        // The main document's phases, ms from the navigation's start: where a mode's extra time goes.
        const at = (v) => (v > 0 ? Math.round((v - n.startTime) * 10) / 10 : null);
        const phases = {
          connect_start: at(n.connectStart),
          connect_end: at(n.connectEnd),
          request_start: at(n.requestStart),
          response_start: at(n.responseStart),
          response_end: at(n.responseEnd),
          dom_content_loaded: at(n.domContentLoadedEventEnd),
        };
        return { plt: n.loadEventEnd - n.startTime, proto: n.nextHopProtocol, phases };
      });
      await new Promise((r) => setTimeout(r, 300));
      const after = this.counters();
      const decisions = await browser.call('decisions');
      const seen = Object.values(decisions).find((d) => d && d.origin === origin);
      decision = seen ? pickDecision(seen) : null;
      // When the extension had the host's decision and its header rule, ms after onBeforeNavigate.
      const t = await browser.call('navTimings', origin).catch(() => null);
      const since = (v) => (t && v != null ? Math.round((v - t.navStartedAt) * 10) / 10 : null);
      rec.extension_ms = t ? { decided: since(t.decidedAt), rule: since(t.ruleInstalledAt) } : null;
      rec.start_unix_ns = Number(startNs);
      rec.end_unix_ns = Number(startNs) + Math.round(nav.plt * 1e6);
      rec.plt_ms = nav.plt;
      rec.next_hop_protocol = nav.proto;
      rec.nav_phases = nav.phases;
      rec.link_bytes = diffCounters(before, after);
      rec.decision = decision;
      if (this.proxy) {
        // Whether requests are routed to the relay (Chromium's PAC, Firefox's per-request routes: one table).
        rec.pac = (await browser.call('pac')) !== null;
        // What the extension says of the proxy (never the relay's credentials).
        const v = await browser.call('proxy');
        // stats: the relay's tunnel counters as of its last report (failures: tunnels it reset, so that the browser
        // went on DIRECT).
        rec.proxy_view = { active: v.active, fallback: v.fallback, state: v.status?.state ?? null, detail: v.status?.detail ?? null, stats: v.status?.stats ?? null };
      }
      rec.ok = true;
    } catch (err) {
      rec.error = String(err.message || err).split('\n')[0];
    } finally {
      await browser?.close().catch(() => {});
      profile?.remove();
      if (actuator) {
        // Connections close with the browser; the actuator logs them as CLOSED shortly after.
        await new Promise((r) => setTimeout(r, 300));
        const st = await actuator.status().catch((e) => ({ error: String(e.message || e) }));
        rec.actuator_conns = st.result?.backend?.connections ?? null;
        rec.actuator_stats = st.result?.backend?.stats ?? st.error ?? null;
        await actuator.stop();
      }
    }
    if (rec.ok) {
      // Connections close with the browser; their per-subflow totals are logged then.
      await new Promise((r) => setTimeout(r, 300));
      const conns = this.readOrigin('conn', rec.start_unix_ns - 5e9).filter((c) => c.open_ns >= rec.start_unix_ns - 1e9);
      const reqs = this.readOrigin('request', rec.start_unix_ns);
      rec.server_path_bytes = { [WIFI_IF]: 0, [CELL_IF]: 0 };
      for (const c of conns) for (const sf of c.subflows || []) if (sf.path) rec.server_path_bytes[sf.path] = (rec.server_path_bytes[sf.path] || 0) + sf.bytes_sent;
      rec.requests = reqs.length;
      rec.header_seen = reqs.length > 0 && reqs.every((r) => r.mp_policy && r.mp_policy.raw);
      rec.header_missing = reqs.filter((r) => !(r.mp_policy && r.mp_policy.raw)).map((r) => r.path).slice(0, 5);
      rec.mptcp_conns = conns.filter((c) => c.mptcp).length;
      rec.conns = conns.length;
      if (this.proxy) {
        // Used: Squid logged an established tunnel to the page's host that ended after the load began (it logs a
        // tunnel when it closes, with the browser).
        const tunnels = this.proxy
          .accessLog()
          .filter((l) => Number(l.split(/\s+/)[0]) * 1e9 >= rec.start_unix_ns && l.includes(` CONNECT ${host}:443 `) && l.includes(' TCP_TUNNEL/200 '));
        rec.proxy.used = tunnels.length > 0;
        rec.proxy.tunnels = tunnels.length;
        // The origin speaks plain TCP and sees each request's sender: the proxy host's address through Squid, the
        // client's own for a request that went DIRECT.
        rec.proxy.requests_via = reqs.filter((r) => r.remote.startsWith(`${PROXY_ADDR}:`)).length;
        rec.proxy.requests_direct = reqs.length - rec.proxy.requests_via;
      }
    }
    try {
      tb('flush');
    } catch {}
    return rec;
  }
}

async function untilProxy(browser, pred, timeoutMs) {
  const t0 = Date.now();
  let last;
  while (Date.now() - t0 < timeoutMs) {
    last = await browser.call('proxy');
    if (pred(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`proxy view never matched within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
}

// A seeded shuffle, so a grid's order is random but can be repeated.
export function shuffle(xs, seed) {
  let s = seed >>> 0 || 1;
  const rnd = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

// What the native host of an mp-adaptive load remembers: see Session.hostBaseEnv.
export const HISTORIES = ['session', 'none'];

// hostKind names a mode's host in its log and decision-log files: one per deciding mode, and per preference for
// the adaptive ones; "other" for the modes whose host decides nothing.
export function hostKind(mode, preference = 'performance') {
  if (ADAPTIVE.has(mode)) return `${mode === 'mp-adaptive' ? 'adaptive' : 'proxy-adaptive'}-${preference}`;
  if (RULE.has(mode)) return mode === 'mp-rule' ? 'rule' : 'proxy-rule';
  return 'other';
}

// setPreference sets the user's preference as a user does, on the extension's options page (the mode's radio
// button), and waits until the host has taken it (PROTOCOL.md prefs): the load's decision is then made under it.
// browser: either launcher's interface (browser.mjs). Returns the ms it took.
export async function setPreference(browser, preference, timeoutMs = 10000) {
  const t0 = Date.now();
  let opts;
  if (browser.kind === 'firefox') {
    opts = await browser.openExtensionPage('options.html');
  } else {
    opts = await browser.newTab();
    await opts.goto(`chrome-extension://${extensionId}/options.html`);
  }
  try {
    const radio = `#mode-${preference}`;
    await opts.waitForSelector(radio);
    await opts.click(radio);
    for (;;) {
      const s = await browser.call('settings');
      if (s.prefs.mode === preference && s.prefsSync.state === 'ok' && s.prefsSync.hostPrefs?.mode === preference) break;
      if (s.prefsSync.state === 'unsupported' || s.prefsSync.state === 'error') throw new Error(`the host did not take the preferences: ${s.prefsSync.detail}`);
      if (Date.now() - t0 > timeoutMs) throw new Error(`preference ${preference} not taken by the host within ${timeoutMs} ms: the extension holds ${s.prefs.mode}, the host's last answer ${JSON.stringify(s.prefsSync)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await opts.close();
  }
  return Date.now() - t0;
}

// isProfilePath tells a profile file from a built-in profile id, as dist/testbed does (e2e/profiles Load).
export function isProfilePath(p) {
  return p.includes('/') || p.endsWith('.json');
}

// readProfile reads a built-in profile or a profile file: its id (what output files are named after), its
// cellular technology (lte or 3g), and the argument for dist/testbed (an absolute path for a file).
export function readProfile(profile, cwd = process.cwd()) {
  const file = isProfilePath(profile) ? path.resolve(cwd, profile) : path.join(root, 'e2e', 'profiles', `${profile}.json`);
  let p;
  try {
    p = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    if (err.code === 'ENOENT') {
      throw new Error(isProfilePath(profile) ? `profile file ${file} does not exist` : `no built-in profile ${profile} (e2e/profiles/*.json, or give a file)`);
    }
    throw new Error(`profile ${file}: ${err.message}`);
  }
  const id = p?.id;
  const tech = p?.links?.wwan0?.tech;
  // dist/testbed validates the whole profile; these two are needed before it runs.
  if (typeof id !== 'string' || !/^[a-z0-9][a-z0-9.+_-]{0,63}$/.test(id)) throw new Error(`profile ${file}: id ${JSON.stringify(id)} is not a profile id`);
  if (tech !== 'lte' && tech !== '3g') throw new Error(`profile ${file}: links.wwan0.tech ${JSON.stringify(tech)}, want lte or 3g`);
  // trace: a link replays a recorded trace, so each repetition meets another stretch of it (see traceReps).
  const trace = Object.values(p.links ?? {}).some((l) => l?.down?.trace !== undefined || l?.up?.trace !== undefined);
  return { id, tech, trace, file, arg: isProfilePath(profile) ? file : profile };
}

// corpusManifest lists the corpus (dist/origin corpus --list) with the given corpus files' sites added.
export function corpusManifest(corpus = []) {
  const args = ['corpus', '--list', '--json', ...corpus.flatMap((f) => ['--corpus', f])];
  try {
    return JSON.parse(execFileSync(originBin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
  } catch (err) {
    throw new Error(String(err.stderr || err.message).trim().split('\n')[0]);
  }
}

// The corpus sites' server addresses: 10.200.3.16 and up, in corpus order (below .16 is left to callers' own names).
export const SITE_ADDR_FIRST = 16;

export function siteAddresses(manifest, serverAddr) {
  const hosts = [...new Set(manifest.pages.map((p) => p.host))];
  const base = serverAddr.split('.').slice(0, 3).join('.');
  if (SITE_ADDR_FIRST + hosts.length > 255) throw new Error(`${hosts.length} sites: more than the server's /24 holds`);
  return Object.fromEntries(hosts.map((h, i) => [h, `${base}.${SITE_ADDR_FIRST + i}`]));
}

// traceOffsetMs is where a load of page, repetition rep, starts in a trace-driven link's trace: FNV-1a of the pair,
// within the first 5 minutes (the Mahimahi traces used here run 8-18 minutes; a trace loops past its end).
export function traceOffsetMs(page, rep) {
  let h = 0x811c9dc5;
  for (const c of Buffer.from(`${page}#${rep}`)) h = Math.imul(h ^ c, 0x01000193) >>> 0;
  return h % 300000;
}

function pickDecision(d) {
  const out = { multipath: d.multipath, theta1: d.theta1, theta2: d.theta2 ?? null, reason: d.reason };
  // The basis of the decision (measured, prior, rule) when the host gives one, and the size it predicted.
  out.basis = d.basis ?? d.inputs?.basis ?? null;
  if (d.size && typeof d.size === 'object') out.predicted_bytes = d.size.known ? (d.size.median ?? null) : null;
  if (d.inputs?.actuation !== undefined) out.actuation = d.inputs.actuation;
  return out;
}

// diffCounters is what each client interface received and sent between two `dist/testbed counters` readings.
export function diffCounters(a, b) {
  const out = {};
  for (const ifname of [WIFI_IF, CELL_IF]) {
    const x = a[ifname] || a.interfaces?.[ifname];
    const y = b[ifname] || b.interfaces?.[ifname];
    out[ifname] = { rx: y.rx_bytes - x.rx_bytes, tx: y.tx_bytes - x.tx_bytes };
  }
  return out;
}

// Policy files for adaptiveMix: the seed's baseline with only the decision changed. A test override, not a
// model: multipath (from the first byte unless theta1 is given; the actuator opens the cellular subflow once a
// connection has received θ1 bytes and closes it at θ2) or off.
export function writePolicy(file, multipath, { theta1 = 0, theta2 = null } = {}) {
  const base = JSON.parse(fs.readFileSync(path.join(root, 'policy-models', 'baseline.json'), 'utf8'));
  delete base.$schema;
  const terms = multipath ? `-t1-${theta1}-t2-${theta2 ?? 'none'}` : '';
  Object.assign(base, {
    id: (multipath ? 'testbed-mp' : 'testbed-single-path') + terms,
    version: multipath ? 2 : 3,
    description: 'testbed override for the actuation check: ' + (multipath ? `multipath, theta1 ${theta1}, theta2 ${theta2 ?? 'none'}` : 'single path'),
    multipath,
    theta1_bytes: multipath ? theta1 : base.theta1_bytes,
    theta2_bytes: multipath ? theta2 : null,
  });
  fs.writeFileSync(file + '.tmp', JSON.stringify(base, null, 2));
  fs.renameSync(file + '.tmp', file);
  return base.id;
}

// adaptiveMix runs one real browser (the session's, under mptcpize in the client namespace) whose native host talks to a running actuator,
// and loads each of `loads` ({ host, page, multipath, theta1?, theta2? }) in turn. Before each load the host's policy file is
// switched to the wanted decision and the host re-reads it (SIGHUP), so one host decides both ways while the
// actuator keeps every origin's decision. Returns the decisions the extension recorded and the host's pid.
export async function adaptiveMix(session, actuator, loads, { hostEnv = {}, onHost, log = () => {} } = {}) {
  const policyDir = fs.mkdtempSync(path.join(session.outDir, 'policy-'));
  const policyFile = path.join(policyDir, 'policy.json');
  writePolicy(policyFile, loads[0]?.multipath ?? true, loads[0]);
  let browser;
  let profile;
  const out = { decisions: [], hostPid: null, startNs: Date.now() * 1e6 };
  try {
    ({ profile, browser } = await session.launchBrowser({
      prefix: 'mpsurf-act-',
      env: { MPSURF_ACTUATOR: actuator.socket, MPSURF_HOSTS: session.hostsEnv(), MPSURF_POLICY: policyFile, ...hostEnv },
    }));
    await untilStatus(browser, (s) => s.host === 'connected', 15000);
    await withoutDailyLimit(browser);
    out.hostPid = hostPids(profile.host)[0];
    let i = 0;
    for (const l of loads) {
      const id = writePolicy(policyFile, l.multipath, l);
      process.kill(out.hostPid, 'SIGHUP');
      await untilStatus(browser, (s) => s.policy?.multipath === l.multipath && s.policy?.model?.id === id, 10000);
      const url = `https://${l.host}${session.urlPath(l.page, l.host)}`;
      const tab = await browser.newTab();
      await tab.goto(url, { waitUntil: 'load', timeout: 120000 });
      const all = await browser.call('decisions');
      const d = Object.values(all).find((x) => x && x.origin === `https://${l.host}`);
      // The extension's last announce (announce.ts): the page's responses announced θ1 bytes, the subflow joined then.
      const ann = (await browser.call('announce')).last;
      const announced = ann?.origin === `https://${l.host}` ? ann : null;
      out.decisions.push(d ? { origin: d.origin, multipath: d.multipath, actuation: d.inputs?.actuation, addrs: d.inputs?.actuation_addrs, announced } : { origin: `https://${l.host}`, missing: true });
      await tab.close();
      i++;
      log(`load ${i}/${loads.length}: ${l.host} ${l.page} (decide ${l.multipath ? 'multipath' : 'single path'})`);
    }
    if (onHost) await onHost({ browser, hostPid: out.hostPid, profile });
  } finally {
    await browser?.close().catch(() => {});
    profile?.remove();
    fs.rmSync(policyDir, { recursive: true, force: true });
  }
  return out;
}

// classifyConns joins the origin server's conn lines (per-subflow bytes, written at close) with the decision of the
// address each connection reached: { byAddr: {addr: {conns, withCell}}, mp, mpShort, sp, undecided: {n, cell} }.
// Multipath-decided connections the server held for less than minLifeMs are counted apart (mpShort): a join
// takes one LTE round trip after the connection is established, so one that ends sooner cannot get a subflow from
// any path manager.
export function classifyConns(conns, decidedMultipath, { minLifeMs = 0 } = {}) {
  const r = { mp: { n: 0, cell: 0 }, mpShort: { n: 0, cell: 0 }, sp: { n: 0, cell: 0 }, undecided: { n: 0, cell: 0 }, byAddr: {} };
  for (const c of conns) {
    const addr = c.local.replace(/:\d+$/, '');
    const cell = (c.subflows || []).some((sf) => sf.path === CELL_IF);
    let cls = decidedMultipath[addr] === true ? 'mp' : decidedMultipath[addr] === false ? 'sp' : 'undecided';
    if (cls === 'mp' && (c.time_ns - c.open_ns) / 1e6 < minLifeMs) cls = 'mpShort';
    r[cls].n++;
    if (cell) r[cls].cell++;
    const b = (r.byAddr[addr] ??= { conns: 0, withCell: 0 });
    b.conns++;
    if (cell) b.withCell++;
  }
  return r;
}
