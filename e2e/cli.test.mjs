// Every command the project ships follows the command-line conventions (native-host/cli, e2e/lib/cli.mjs): -h and
// --help print a usage on stdout and exit 0, an unknown flag is one line on stderr and exit status 2. The commands
// are found, not listed: every Go main package (built here), every Node entry point under e2e/ and scripts/, and
// every shell script under scripts/ and packaging/. Subcommands are checked by each Go command's own test, from its command table
// (native-host/cmd/mpsurf-host, e2e/cmd/testbed, e2e/origin). Needs Go and Node only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root } from './lib/paths.mjs';

const BAD = '--no-such-flag-here';

// Scripts that are not commands of their own, with why.
const NOT_COMMANDS = {
  // The testbed's wrapper: runs chromium in the client namespace with chromium's own arguments.
  'e2e/testbed/chromium-in-client.sh': 'passes every argument to chromium',
  // Its Firefox counterpart, which puppeteer-core starts in place of firefox-esr.
  'e2e/testbed/firefox-in-client.mjs': 'passes every argument to firefox',
  // The Debian packages' maintainer scripts: dpkg runs them with its own arguments (configure, remove, purge, ...).
  'packaging/deb/mpsurf.postinst': 'a maintainer script, run by dpkg',
  'packaging/deb/mpsurf.prerm': 'a maintainer script, run by dpkg',
  'packaging/deb/mpsurf.postrm': 'a maintainer script, run by dpkg',
  'packaging/deb/mpsurf-proxy.postrm': 'a maintainer script, run by dpkg',
};

function check(label, argv0, args) {
  for (const h of ['-h', '--help']) {
    const r = spawnSync(argv0, [...args, h], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, `${label} ${h}: exit ${r.status}, stderr ${r.stderr}`);
    assert.match(r.stdout.split('\n')[0], /^usage:/, `${label} ${h}: first line ${JSON.stringify(r.stdout.split('\n')[0])}`);
    assert.equal(r.stderr, '', `${label} ${h}: stderr ${r.stderr}`);
  }
  const r = spawnSync(argv0, [...args, BAD], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 2, `${label} ${BAD}: exit ${r.status}, stderr ${r.stderr}`);
  assert.equal(r.stdout, '', `${label} ${BAD}: stdout ${r.stdout}`);
  assert.match(r.stderr, /^[^\n]+\n$/, `${label} ${BAD}: stderr not one line: ${JSON.stringify(r.stderr)}`);
  assert.ok(r.stderr.includes('no-such-flag-here'), `${label} ${BAD}: stderr does not name the flag: ${r.stderr}`);
}

const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);

test('every Go command', (t) => {
  const mains = execFileSync('go', ['list', '-f', '{{if eq .Name "main"}}{{.ImportPath}}{{end}}', './...'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  assert.ok(mains.length >= 7, `go list found ${mains}`);
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-cli-'));
  t.after(() => fs.rmSync(bin, { recursive: true, force: true }));
  execFileSync('go', ['build', '-o', bin + path.sep, ...mains], { cwd: root, stdio: 'inherit' });
  for (const m of mains) check(m, path.join(bin, path.basename(m)), []);
});

test('every Node entry point', () => {
  // An entry point runs when started: a file with the main-module guard, or one that exports nothing.
  const entries = files.filter((f) => {
    if (!/^(e2e|scripts)\/.*\.mjs$/.test(f) || f.endsWith('.test.mjs') || NOT_COMMANDS[f]) return false;
    const src = fs.readFileSync(path.join(root, f), 'utf8');
    return src.includes('process.argv[1]') || !/^export /m.test(src);
  });
  for (const must of ['e2e/start.mjs', 'e2e/testbed/grid.mjs', 'e2e/bench-actuation.mjs', 'e2e/bench-slice.mjs', 'scripts/package-extension.mjs']) {
    assert.ok(entries.includes(must), `${must} not found as an entry point`);
  }
  for (const f of entries) check(f, process.execPath, [f]);
});

test('every script', () => {
  const scripts = files.filter((f) => {
    if (!/^(scripts|packaging|e2e)\//.test(f) || NOT_COMMANDS[f] || f.includes('/testdata/') || f.endsWith('.mjs')) return false;
    if (f.endsWith('.sh')) return true;
    const head = fs.readFileSync(path.join(root, f)).subarray(0, 2).toString();
    return head === '#!';
  });
  assert.ok(scripts.includes('scripts/test.sh') && scripts.includes('packaging/proxy/mpsurf-proxy-setup'), `found ${scripts}`);
  for (const f of scripts) check(f, 'bash', [f]);
});
