// The testbed's proxy host: Debian's Squid in the PREFIX-proxy namespace, configured by the same script a user
// runs on a server of their own (packaging/proxy/mpsurf-proxy-setup, --root mode) and started with the same
// LD_PRELOAD its systemd drop-in sets, so that it accepts MPTCP from the client and speaks plain TCP to origins.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root } from '../lib/paths.mjs';
import { asRemote } from '../lib/priority.mjs';
import { TOPO, networkOf } from '../lib/topo.mjs';

export const PROXY_ADDR = TOPO.addresses.proxy;
export const PROXY_PORT = 8443;
// The testbed's server network (the server's address, and each site's address beside it).
const ORIGIN_NET = networkOf(TOPO.addresses.server, TOPO.prefix_len);
const setupScript = path.join(root, 'packaging', 'proxy', 'mpsurf-proxy-setup');

export function squidMissing() {
  try {
    execFileSync('sh', ['-c', 'command -v squid && command -v htpasswd && command -v openssl'], { stdio: 'pipe' });
    return null;
  } catch {
    return 'squid, apache2-utils or openssl is not installed (bash scripts/setup.sh as root installs them)';
  }
}

// The drop-in's Environment= lines, as systemd would set them.
export function dropInEnv(file) {
  const env = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^Environment=([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) env[m[1]] = m[2];
  }
  return env;
}

// dropInCommand is the command line the drop-in's last ExecStart= gives squid.service, as argv: the testbed and the
// tests start Squid as systemd would.
export function dropInCommand(file) {
  let argv = null;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^ExecStart=(.*)$/.exec(line.trim());
    if (m) argv = m[1].trim() === '' ? null : m[1].trim().split(/\s+/);
  }
  if (!argv) throw new Error(`${file} sets no ExecStart=`);
  return argv;
}

// mptcpListening says whether `ss -Mltn` output has an MPTCP listener: ss lists one as tcp and as mptcp, a plain TCP
// listener only as tcp.
export const mptcpListening = (ssOut) => /^mptcp\s+LISTEN/m.test(ssOut);

function waitFor(pred, what, timeoutMs) {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      let v;
      try {
        v = pred();
      } catch (e) {
        reject(e);
        return;
      }
      if (v) resolve(v);
      else if (Date.now() - t0 > timeoutMs) reject(new Error(`${what}: not ready after ${timeoutMs} ms`));
      else setTimeout(tick, 50);
    };
    tick();
  });
}

export class SquidProxy {
  // start configures a private Squid under dir (the setup script's --root), maps the testbed's names for it
  // (Squid resolves CONNECT targets itself) and runs it in namespace ns.
  static async start({ ns, dir, names = {}, log = () => {} }) {
    const why = squidMissing();
    if (why) throw new Error(why);
    fs.rmSync(dir, { recursive: true, force: true });
    // The origins live on the testbed's private server network, which the setup refuses to proxy to unless the
    // operator opens it (--allow-dst): the testbed is that operator.
    const out = execFileSync(setupScript, ['--root', dir, '--no-install', '--name', PROXY_ADDR, '--port', String(PROXY_PORT), '--user', 'mpsurf', '--allow-dst', ORIGIN_NET], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const field = (k) => new RegExp(`^\\s*${k}\\s+(\\S+)`, 'm').exec(out)?.[1];
    const p = new SquidProxy();
    p.dir = dir;
    p.ns = ns;
    p.addr = `${PROXY_ADDR}:${PROXY_PORT}`;
    p.user = field('user');
    p.password = field('password');
    p.pin = field('pin');
    if (!p.user || !p.password || !p.pin) throw new Error(`mpsurf-proxy-setup printed no user, password or pin:\n${out}`);
    const conf = path.join(dir, 'etc', 'squid', 'squid.conf');
    const hosts = path.join(dir, 'etc', 'hosts');
    fs.writeFileSync(hosts, Object.entries(names).map(([n, a]) => `${a} ${n}`).join('\n') + '\n');
    // Testbed-only additions: the names above, no DNS server to wait for, a quick stop between grids.
    fs.appendFileSync(conf, `hosts_file ${hosts}\ndns_nameservers 127.0.0.1\nshutdown_lifetime 1 seconds\nvisible_hostname mpsurf-testbed-proxy\n`);
    const dropIn = path.join(dir, 'etc', 'systemd', 'system', 'squid.service.d', 'mpsurf-mptcp.conf');
    p.env = dropInEnv(dropIn);
    // At the priority of the testbed's other remote machines (lib.mjs asRemote).
    const [cmd, ...argv] = asRemote(['ip', 'netns', 'exec', ns, 'env', ...Object.entries(p.env).map(([k, v]) => `${k}=${v}`), ...dropInCommand(dropIn), '-f', conf]);
    p.child = spawn(cmd, argv, {
      detached: true,
      stdio: ['ignore', 'ignore', fs.openSync(path.join(dir, 'squid.stderr'), 'w')],
    });
    try {
      await waitFor(() => {
        if (p.child.exitCode !== null) throw new Error(`squid exited (${p.child.exitCode}); see ${dir}/squid.stderr and var/log/squid/cache.log`);
        return mptcpListening(execFileSync('ip', ['netns', 'exec', ns, 'ss', '-Mltn', `sport = :${PROXY_PORT}`], { encoding: 'utf8' }));
      }, 'squid (MPTCP listener)', 20000);
    } catch (e) {
      await p.stop();
      throw e;
    }
    p.version = /Version (\S+)/.exec(execFileSync('squid', ['-v'], { encoding: 'utf8' }))?.[1] ?? 'unknown';
    log(`squid ${p.version} up in ${ns} on ${p.addr} (MPTCP, TLS, LD_PRELOAD=${p.env.LD_PRELOAD})`);
    return p;
  }

  // The proxy settings the host takes (PROTOCOL.md proxy_config).
  config() {
    return { server: this.addr, user: this.user, password: this.password, pin: this.pin };
  }

  // Squid's access log lines (native format) written so far.
  accessLog() {
    const f = path.join(this.dir, 'var', 'log', 'squid', 'access.log');
    return fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').filter(Boolean) : [];
  }

  async stop() {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise((resolve) => {
      const timer = setTimeout(() => {
        try {
          process.kill(-c.pid, 'SIGKILL');
        } catch {}
        resolve();
      }, 5000);
      c.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      try {
        process.kill(-c.pid, 'SIGTERM');
      } catch {
        resolve();
      }
    });
  }
}
