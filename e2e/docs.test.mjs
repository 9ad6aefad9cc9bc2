// The documentation names what is there and its commands do what it says: native-host/README.md has a row for every
// Go package under native-host/ (and none for one that is gone); the README's own-browser path and its host check.
// Needs Node, and the build for the host check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root } from './lib/paths.mjs';

test('native-host/README.md lists every package', () => {
  const base = path.join(root, 'native-host');
  const pkgs = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory() || e.name === 'testdata' || e.name === 'vectors') continue;
      const sub = path.join(dir, e.name);
      if (fs.readdirSync(sub).some((f) => f.endsWith('.go') && !f.endsWith('_test.go'))) pkgs.push(path.relative(base, sub));
      walk(sub);
    }
  };
  walk(base);
  const readme = fs.readFileSync(path.join(base, 'README.md'), 'utf8');
  const rows = [...readme.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
  assert.ok(pkgs.length >= 15, `found ${pkgs}`);
  const listed = (p) => rows.includes(p) || (p.includes('/') && !p.startsWith('cmd/') && readme.includes(`\`${p}\``));
  assert.deepEqual(pkgs.filter((p) => !listed(p)).sort(), [], 'packages without a row');
  assert.deepEqual(rows.filter((r) => !pkgs.includes(r)).sort(), [], 'rows for packages that do not exist');
});

// "Using it in your own Chromium" leads to multipath: it names each part multipath needs with the command that adds
// it, the same commands the popup shows when a part is missing (extension/src/view.ts).
test('README: the own-browser path names the host, the helper and MPTCP sockets, as the popup does', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const sec = readme.slice(readme.indexOf('## Using it in your own Chromium'), readme.indexOf('## The `Multipath-Policy` header'));
  const view = fs.readFileSync(path.join(root, 'extension', 'src', 'view.ts'), 'utf8');
  const constant = (name) => view.match(new RegExp(`export const ${name} = '([^']+)'`))?.[1];
  for (const name of ['INSTALL_COMMAND', 'MPTCPIZE_COMMAND', 'HELPER_INSTALL_COMMAND']) {
    const cmd = constant(name);
    assert.ok(cmd, `view.ts has no ${name}`);
    assert.ok(sec.includes(cmd), `the README's own-browser section lacks the popup's ${name}: ${cmd}`);
  }
  assert.match(sec, /--user-data-dir DIR/);
  // The Firefox part gives the commands the popup gives in Firefox (view.ts: mptcpizeCommand, installCommand).
  const ff = readme.slice(readme.indexOf('## Using it in Firefox'), readme.indexOf('## The `Multipath-Policy` header'));
  assert.ok(ff.includes('mptcpize run firefox') && ff.includes('dist/mpsurf-host install --browser firefox'), ff);
});

// The README's one-line host check answers, and writes nothing into the user's real decision log.
test('README: the one-line host check answers and leaves the real decision log alone', (t) => {
  const host = path.join(root, 'dist', 'mpsurf-host');
  if (!fs.existsSync(host)) return t.skip('dist/mpsurf-host is not built (npm run build)');
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const at = readme.indexOf('A one-line check that the host answers');
  const block = readme.slice(at).match(/```sh\n([\s\S]*?)```/)?.[1];
  assert.ok(block, 'no command after "A one-line check"');
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-home-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MPSURF_') && k !== 'XDG_DATA_HOME'));
  const out = execFileSync('bash', ['-o', 'pipefail', '-c', block], { cwd: root, env: { ...env, HOME: home, MPSURF_NO_MEASURE: '1' }, encoding: 'utf8', timeout: 30_000 });
  const reply = JSON.parse(out.trim().split('\n')[0]);
  assert.equal(reply.ok, true, out);
  assert.equal(reply.body.origin, 'https://example.com');
  assert.equal(fs.existsSync(path.join(home, '.local', 'share', 'mpsurf')), false, 'the check wrote into the default decision log');
});
