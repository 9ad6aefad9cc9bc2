#!/usr/bin/env node
// Firefox inside the testbed's client namespace, its TCP sockets turned into MPTCP sockets by mptcpize unless
// MPSURF_MPTCPIZE=0 (the proxy modes), as chromium-in-client.sh runs Chromium. puppeteer-core starts this in place of
// /usr/bin/firefox-esr. Two things differ from Chromium:
//   - Names: Firefox has no --host-resolver-rules, so it reads the testbed's names from /etc/hosts, which this
//     bind-mounts from MPSURF_HOSTS_FILE inside the namespace's own mount namespace (ip netns exec makes one, so the
//     machine's /etc/hosts is untouched).
//   - The driver: Firefox's WebDriver BiDi server listens on the loopback of the namespace, which the test process
//     (in the root namespace) cannot reach, and Firefox offers no pipe. This bridges it: a copy of this script inside
//     the namespace (--bridge) forwards a Unix socket (the file system is the same in every network namespace) to
//     the BiDi port there, and a listener on the root namespace's loopback forwards to that socket. Firefox refuses
//     a WebSocket handshake whose Host names another port than its own, so both ends use one port number: one free
//     in the root namespace, which Firefox (alone in the client namespace) then listens on.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const self = fileURLToPath(import.meta.url);

// pipeBoth joins two sockets; either one closing or failing closes the other.
function pipeBoth(a, b) {
  a.pipe(b);
  b.pipe(a);
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end);
  b.on('error', end);
  a.on('close', end);
  b.on('close', end);
}

// In the namespace: Unix socket -> TCP 127.0.0.1:port, until stdin closes (the wrapper went away).
function bridge(sock, port) {
  fs.rmSync(sock, { force: true });
  // The socket's name goes with the first connection (the driver's): nothing is left in /tmp even if the wrapper
  // is killed before it can clean up.
  const server = net.createServer((c) => {
    fs.rmSync(sock, { force: true });
    pipeBoth(c, net.connect(port, '127.0.0.1'));
  });
  server.listen(sock, () => process.stdout.write('ready\n'));
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
}

async function main() {
  const ns = process.env.MPS_CLIENT_NS || `${process.env.MPS_PREFIX || 'mps'}-client`;
  const firefox = process.env.MPSURF_FIREFOX || '/usr/bin/firefox-esr';
  const hosts = process.env.MPSURF_HOSTS_FILE;
  if (!hosts) throw new Error('MPSURF_HOSTS_FILE is not set: Firefox would not resolve the testbed names');
  const run = process.env.MPSURF_MPTCPIZE === '0' ? [firefox] : ['mptcpize', 'run', firefox];
  const sock = path.join(os.tmpdir(), `mpsurf-bidi-${process.pid}.sock`);
  const outer = net.createServer((c) => pipeBoth(c, net.connect(sock)));
  await new Promise((resolve, reject) => outer.once('error', reject).listen(0, '127.0.0.1', resolve));
  const port = outer.address().port;
  const args = process.argv.slice(2).map((a) => (a.startsWith('--remote-debugging-port=') ? `--remote-debugging-port=${port}` : a));
  const child = spawn('ip', ['netns', 'exec', ns, 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', hosts, ...run, ...args], {
    stdio: ['inherit', 'inherit', 'pipe'],
  });
  let inner = null;
  const cleanup = () => {
    inner?.stdin.end();
    outer.close();
    fs.rmSync(sock, { force: true });
  };
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, sig) => {
    cleanup();
    process.exit(code ?? (sig ? 1 : 0));
  });
  const lines = readline.createInterface({ input: child.stderr });
  for await (const line of lines) {
    // The line puppeteer waits for is passed on once the bridge is up, so that its first connection gets through.
    if (!inner && /^WebDriver BiDi listening on ws:\/\/127\.0\.0\.1:\d+/.test(line)) {
      inner = spawn('ip', ['netns', 'exec', ns, process.execPath, self, '--bridge', sock, String(port)], { stdio: ['pipe', 'pipe', 'inherit'] });
      await new Promise((resolve, reject) => {
        inner.stdout.once('data', resolve);
        inner.once('exit', (c) => reject(new Error(`BiDi bridge exited (${c})`)));
      });
    }
    process.stderr.write(line + '\n');
  }
}

if (process.argv[2] === '--bridge') {
  bridge(process.argv[3], Number(process.argv[4]));
} else {
  main().catch((e) => {
    process.stderr.write(`firefox-in-client: ${e.message}\n`);
    process.exit(1);
  });
}
