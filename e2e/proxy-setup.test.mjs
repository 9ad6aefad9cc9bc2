// The server side of the MPTCP proxy deployment (README "Use it on the real web"): packaging/proxy/mpsurf-proxy-setup
// run for real with --root (nothing outside a temporary directory changes), then Debian's Squid started as its
// systemd drop-in would start it (the drop-in's LD_PRELOAD) inside a network namespace of its own, and checked the
// way a client meets it: MPTCP listener, TLS only, authentication required, CONNECT only to 443 and only to the
// public internet (never to the server's own loopback, link-local, private, unique-local or documentation addresses,
// by address or by a name that resolves there, unless --allow-dst opens a private range or a single special-purpose
// address, which never covers loopback or link-local), a plain port that asks for no credentials, and a second run
// that keeps the certificate and users.
// Needs root and Debian's squid,
// apache2-utils and openssl (scripts/setup.sh installs them); skips with the reason otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dropInCommand, dropInEnv, mptcpListening, squidMissing } from './testbed/proxy.mjs';
import { originBin } from './testbed/lib.mjs';
import { root } from './lib/paths.mjs';

const script = path.join(root, 'packaging', 'proxy', 'mpsurf-proxy-setup');
const NS = `${process.env.MPS_PREFIX || 'mps'}-squidsetup`;
const PORT = 8443;
// Inside the test's own namespace (no route out): a stand-in for a website's public address, and the server's
// internal services a proxy user must not reach: a private (LAN) address, the link-local one cloud metadata
// services answer on, a unique-local IPv6 one, and loopback; and two addresses of a documentation range (RFC 5737),
// where a test network's names may resolve (a machine's mirror did): shut like the rest until --allow-dst opens one.
const PUBLIC = '11.1.1.1';
const INTERNAL = {
  'lan.test': '10.9.9.9',
  'meta.test': '169.254.169.254',
  'ula.test': 'fd00::9',
  'rebind.test': '127.0.0.1',
  'rebind6.test': '::1',
  'doc.test': '203.0.113.80',
  'doc-next.test': '203.0.113.81',
};
// Loopback as an IPv6 address carries it: IPv4-mapped, NAT64.
const EMBEDDED = ['::ffff:127.0.0.1', '64:ff9b::7f00:1'];
const urlHost = (a) => (a.includes(':') ? `[${a}]` : a);

function whyNot() {
  if (process.getuid?.() !== 0) return 'needs root (network namespace, files for Squid’s user)';
  if (!fs.existsSync('/proc/sys/net/mptcp/enabled')) return 'the kernel has no MPTCP';
  if (!fs.existsSync(originBin)) return 'dist/origin is not built';
  return squidMissing();
}
const skip = whyNot() ?? false;

const sh = (args, opts = {}) => execFileSync(args[0], args.slice(1), { encoding: 'utf8', ...opts });
const inNS = (...args) => sh(['ip', 'netns', 'exec', NS, ...args]);

// curl's status lines and headers for one proxied request, from inside the namespace with MPTCP sockets (mptcpize,
// as the host's relay dials); -k: the origin's test certificate.
function curl(args) {
  const r = spawnSync('ip', ['netns', 'exec', NS, 'mptcpize', 'run', 'curl', '-sS', '-k', '-o', '/dev/null', '-D', '-', '-w', 'codes %{http_connect} %{http_code}\n', '--max-time', '10', ...args], { encoding: 'utf8' });
  return r.stdout + r.stderr;
}
// [the proxy's answer to CONNECT (0 for plain HTTP), the final status (0 when there was none)].
const statusOf = (out) => (/^codes (\d{3}) (\d{3})$/m.exec(out) ?? [0, -1, -1]).slice(1).map(Number);

test('proxy setup script: --help, bad flags', { skip }, () => {
  assert.match(sh([script, '--help']), /usage: mpsurf-proxy-setup/);
  const bad = spawnSync(script, ['--bogus'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
  assert.equal(spawnSync(script, ['--port', '70000'], { encoding: 'utf8' }).status, 2);
  // Neither loopback nor link-local, not even one address of them; no public range; nothing wider than a range the
  // rules shut (203.0.113.0/23 reaches past the documentation range into public space).
  for (const cidr of ['10.0.0.0', '10.0.0.0/33', 'lan', '127.0.0.0/8', '127.0.0.1/32', '169.254.0.0/16', '169.254.169.254/32', '::1/128', 'fe80::/10', 'fe80::1/128', '0.0.0.0/0', '::/0', '0.0.0.0/32', '8.8.8.8/32', '203.0.113.0/23', '2001:db8::/31', '224.0.0.1/32']) {
    const r = spawnSync(script, ['--allow-dst', cidr], { encoding: 'utf8' });
    assert.equal(r.status, 2, `--allow-dst ${cidr}: ${r.stderr}`);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});

test('proxy setup script: Squid over MPTCP and TLS, auth required, CONNECT to 443 only, idempotent', { skip, timeout: 120000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-squid-'));
  fs.chmodSync(dir, 0o755);
  spawnSync('ip', ['netns', 'del', NS]);
  sh(['ip', 'netns', 'add', NS]);
  sh(['ip', '-n', NS, 'link', 'set', 'lo', 'up']);
  for (const a of [PUBLIC, ...Object.values(INTERNAL)].filter((a) => a !== '127.0.0.1' && a !== '::1')) {
    sh(['ip', '-n', NS, 'addr', 'add', a.includes(':') ? `${a}/128` : `${a}/32`, 'dev', 'lo']);
  }
  const children = [];
  t.after(async () => {
    for (const c of children) {
      try {
        process.kill(-c.pid, 'SIGKILL');
      } catch {}
    }
    await new Promise((r) => setTimeout(r, 300));
    spawnSync('ip', ['netns', 'del', NS]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const out = sh([script, '--root', dir, '--no-install', '--name', '127.0.0.1', '--port', String(PORT), '--user', 'alice']);
  const field = (k, text = out) => new RegExp(`^\\s*${k}\\s+(\\S+)`, 'm').exec(text)?.[1];
  const password = field('password');
  const pin = field('pin');
  assert.ok(password && password.length >= 20, `a generated password is printed once: ${out}`);
  // The pin is the SHA-256 of the certificate's public key.
  const cert = path.join(dir, 'etc', 'squid', 'mpsurf', 'cert.pem');
  const spki = execFileSync('sh', ['-c', `openssl x509 -in ${cert} -noout -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`], { encoding: 'utf8' }).trim();
  assert.equal(pin, spki);
  const key = fs.statSync(path.join(dir, 'etc', 'squid', 'mpsurf', 'key.pem'));
  assert.equal(key.mode & 0o077, 0o040, 'the key is readable by Squid’s group only');
  const pw = fs.readFileSync(path.join(dir, 'etc', 'squid', 'mpsurf', 'passwd'), 'utf8');
  assert.match(pw, /^alice:\$2y\$/m, 'bcrypt hash');
  assert.ok(!pw.includes(password), 'the password is not stored in clear');
  const dropIn = path.join(dir, 'etc', 'systemd', 'system', 'squid.service.d', 'mpsurf-mptcp.conf');
  const env = dropInEnv(dropIn);
  assert.match(env.LD_PRELOAD ?? '', /libmptcpwrap\.so/, 'the drop-in preloads mptcpize’s wrapper');
  assert.match(fs.readFileSync(dropIn, 'utf8'), /^\[Service\]$/m);
  // systemd itself reads the drop-in beside Debian's squid.service: `systemd-analyze verify` loads the unit with its
  // drop-ins offline (PID 1 need not be systemd) and warns about any key or section it would ignore.
  const unit = '/lib/systemd/system/squid.service';
  if (fs.existsSync(unit) && spawnSync('sh', ['-c', 'command -v systemd-analyze']).status === 0) {
    const units = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-units-'));
    try {
      fs.copyFileSync(unit, path.join(units, 'squid.service'));
      fs.mkdirSync(path.join(units, 'squid.service.d'));
      fs.copyFileSync(dropIn, path.join(units, 'squid.service.d', 'mpsurf-mptcp.conf'));
      const v = spawnSync('systemd-analyze', ['verify', path.join(units, 'squid.service')], {
        encoding: 'utf8',
        env: { ...process.env, SYSTEMD_UNIT_PATH: `${units}:` },
      });
      assert.equal(v.status, 0, v.stderr);
      assert.doesNotMatch(v.stderr, /mpsurf-mptcp\.conf/, `systemd objects to the drop-in: ${v.stderr}`);
    } finally {
      fs.rmSync(units, { recursive: true, force: true });
    }
  }

  // A TLS origin on 443 and another port inside the namespace, plain TCP as nearly every website.
  const origin = spawn('ip', ['netns', 'exec', NS, originBin, 'serve', '--listen', ':443', '--listen-h1', ':9443', '--mptcp=false'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  children.push(origin);
  await new Promise((resolve, reject) => {
    origin.stdout.once('data', resolve);
    origin.once('exit', (c) => reject(new Error(`origin exited ${c}`)));
  });

  const conf = path.join(dir, 'etc', 'squid', 'squid.conf');
  // Names Squid resolves for CONNECT, as a DNS server would answer them: each internal address has one.
  const hosts = path.join(dir, 'etc', 'hosts');
  fs.writeFileSync(hosts, [`${PUBLIC} public.test`, ...Object.entries(INTERNAL).map(([n, a]) => `${a} ${n}`)].join('\n') + '\n');
  const testLines = `shutdown_lifetime 1 seconds\ndns_nameservers 127.0.0.1\nhosts_file ${hosts}\n`;
  fs.appendFileSync(conf, testLines);
  // As squid.service with the drop-in starts it: its ExecStart (run as root, as systemd does), its LD_PRELOAD. Debian's
  // own `squid --foreground` would listen with plain TCP: its kid runs in secure-execution mode, without the wrapper.
  const squid = spawn('ip', ['netns', 'exec', NS, 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...dropInCommand(dropIn), '-f', conf], {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(squid);
  let stderr = '';
  squid.stderr.on('data', (b) => (stderr += b));
  const t0 = Date.now();
  while (!mptcpListening(inNS('ss', '-Mltn', `sport = :${PORT}`))) {
    assert.equal(squid.exitCode, null, `squid exited: ${stderr}`);
    assert.ok(Date.now() - t0 < 20000, `no MPTCP listener on ${PORT}: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  // Both ports are MPTCP listeners (the wrapper), and only the TLS one serves.
  assert.ok(mptcpListening(inNS('ss', '-Mltn', 'sport = :3128')), 'port 3128 listens with MPTCP');

  const proxy = `https://127.0.0.1:${PORT}`;
  const noAuth = curl(['--proxy', proxy, '--proxy-insecure', 'https://public.test/']);
  assert.deepEqual(statusOf(noAuth), [407, 0], noAuth);
  assert.match(noAuth, /^Proxy-Authenticate: Basic realm="MPSurf proxy"/m);
  assert.match(noAuth, /^Server: squid\/\d/m, 'the proxy reports itself in its refusals');

  const good = curl(['--proxy', proxy, '--proxy-insecure', '--proxy-user', `alice:${password}`, 'https://public.test/healthz']);
  assert.deepEqual(statusOf(good), [200, 200], good);
  const wrong = curl(['--proxy', proxy, '--proxy-insecure', '--proxy-user', 'alice:not-the-password', 'https://public.test/healthz']);
  assert.deepEqual(statusOf(wrong), [407, 0], wrong);
  const otherPort = curl(['--proxy', proxy, '--proxy-insecure', '--proxy-user', `alice:${password}`, 'https://public.test:9443/healthz']);
  assert.deepEqual(statusOf(otherPort), [403, 0], `CONNECT to a port other than 443 is refused: ${otherPort}`);
  const plainHTTP = curl(['--proxy', proxy, '--proxy-insecure', '--proxy-user', `alice:${password}`, 'http://public.test:9443/healthz']);
  assert.deepEqual(statusOf(plainHTTP), [0, 403], `plain HTTP is not proxied: ${plainHTTP}`);
  // Debian's plain port refuses without asking for credentials, so a misconfigured client never sends them in clear.
  const clear = curl(['--proxy', 'http://127.0.0.1:3128', 'https://public.test/healthz']);
  assert.deepEqual(statusOf(clear), [403, 0], clear);
  assert.doesNotMatch(clear, /Proxy-Authenticate/);
  // The server's own internal services, by address and by a name that resolves there (DNS rebinding included:
  // Squid checks the addresses it resolved, the ones it connects to), IPv4 and IPv6: refused.
  const internal = (user = `alice:${password}`) =>
    Object.fromEntries(
      [...Object.keys(INTERNAL), ...Object.values(INTERNAL), ...EMBEDDED].map((h) => [h, statusOf(curl(['--proxy', proxy, '--proxy-insecure', '--proxy-user', user, `https://${urlHost(h)}/healthz`]))[0]]),
    );
  const refused = internal();
  t.diagnostic(`CONNECT to internal destinations: ${JSON.stringify(refused)}`);
  for (const [h, code] of Object.entries(refused)) assert.equal(code, 403, `CONNECT ${h}:443 answered ${code}`);

  // The proxied connection from client to Squid was MPTCP: Squid's listener accepted it as such (the origin leg
  // falls back to TCP: the origin does not speak MPTCP).
  const mib = inNS('nstat', '-az', 'MPTcpExtMPCapableSYNRX', 'MPTcpExtMPCapableFallbackSYNACK');
  assert.doesNotMatch(mib, /MPTcpExtMPCapableSYNRX\s+0\s/, `no MP_CAPABLE SYN reached Squid: ${mib}`);

  // Again, with a password from stdin for a second user: the pin and alice stay.
  const again = execFileSync(script, ['--root', dir, '--no-install', '--name', '127.0.0.1', '--port', String(PORT), '--user', 'bob', '--password-stdin'], {
    encoding: 'utf8',
    input: 'bob-secret-passphrase\n',
  });
  assert.equal(field('pin', again), pin);
  assert.match(field('password', again) ?? '', /^\(the/, 'a typed password is not printed back');
  const users = fs.readFileSync(path.join(dir, 'etc', 'squid', 'mpsurf', 'passwd'), 'utf8');
  assert.match(users, /^alice:/m);
  assert.match(users, /^bob:/m);

  // Again without a password: alice's stays, and the summary says so rather than "the one you gave".
  const rerun = execFileSync(script, ['--root', dir, '--no-install', '--name', '127.0.0.1', '--port', String(PORT), '--user', 'alice'], { encoding: 'utf8' });
  assert.match(field('password', rerun) ?? '', /^\(unchanged/);
  assert.equal(fs.readFileSync(path.join(dir, 'etc', 'squid', 'mpsurf', 'passwd'), 'utf8'), users);
  // A user's name is compared exactly: "a.ice" is a new user beside "alice", with a password of its own.
  const dotted = execFileSync(script, ['--root', dir, '--no-install', '--name', '127.0.0.1', '--port', String(PORT), '--user', 'a.ice'], { encoding: 'utf8' });
  assert.match(field('password', dotted) ?? '', /^[A-Za-z0-9_-]{24}$/);
  assert.match(fs.readFileSync(path.join(dir, 'etc', 'squid', 'mpsurf', 'passwd'), 'utf8'), /^a\.ice:/m);

  // The operator's opt-in for a private range (the testbed's network, a LAN of their own) and for exactly one address
  // of a documentation range (a test network's mirror): those open; the documentation address beside it, loopback
  // and link-local stay shut.
  const opens = { 'lan.test': true, [INTERNAL['lan.test']]: true, 'doc.test': true, [INTERNAL['doc.test']]: true };
  execFileSync(script, ['--root', dir, '--no-install', '--name', '127.0.0.1', '--port', String(PORT), '--user', 'alice', '--allow-dst', '10.9.9.0/24', '--allow-dst', '203.0.113.80/32'], { encoding: 'utf8' });
  fs.appendFileSync(conf, testLines);
  inNS('squid', '-k', 'reconfigure', '-f', conf);
  let opened;
  for (const t0 = Date.now(); Date.now() - t0 < 10000; await new Promise((r) => setTimeout(r, 200))) {
    opened = internal();
    if (opened['lan.test'] === 200) break;
  }
  t.diagnostic(`with --allow-dst 10.9.9.0/24 --allow-dst 203.0.113.80/32: ${JSON.stringify(opened)}`);
  for (const [h, code] of Object.entries(opened)) assert.equal(code, opens[h] ? 200 : 403, `CONNECT ${h}:443 answered ${code}`);
});
