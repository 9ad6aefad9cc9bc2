// The documentation names what is there and its commands do what it says: native-host/README.md has a row for every
// Go package under native-host/ (and none for one that is gone), extension/README.md one for every source file;
// README.md is a map whose links resolve; every docs/ page names only files that exist, commands whose --help
// lists the flags it gives them, and docs/environment.md exactly the variables the code reads; the own-browser
// path and its host check; no package-registry or mirror host and no compiled binary in the repository.
// Needs Node, and the build (dist/) for the commands' --help and the host check.
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

// extension/README.md has a row for every file under extension/src (subfolders too), whatever the source is split
// into, and none for a file that is gone.
test('extension/README.md lists every source file', () => {
  const base = path.join(root, 'extension');
  const files = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else files.push(path.relative(base, p).split(path.sep).join('/'));
    }
  };
  walk(path.join(base, 'src'));
  const readme = fs.readFileSync(path.join(base, 'README.md'), 'utf8');
  const rows = [...readme.matchAll(/^\| `(src\/[^`]+)` \|/gm)].map((m) => m[1]);
  assert.ok(files.length >= 20, `found ${files}`);
  assert.deepEqual(files.filter((f) => !rows.includes(f)).sort(), [], 'source files without a row in extension/README.md');
  assert.deepEqual(rows.filter((r) => !files.includes(r)).sort(), [], 'rows for files that do not exist');
});

// "Using it in your own Chromium" leads to multipath: it names each part multipath needs with the command that adds
// it, the same commands the popup shows when a part is missing (extension/src/view.ts).
test('docs/from-source.md: the own-browser path names the host, the helper and MPTCP sockets, as the popup does', () => {
  const readme = fs.readFileSync(path.join(root, 'docs', 'from-source.md'), 'utf8');
  const sec = readme.slice(readme.indexOf('## Chromium'), readme.indexOf('## Firefox'));
  assert.ok(sec.length > 100, 'docs/from-source.md has no "## Chromium" section before "## Firefox"');
  const view = fs.readFileSync(path.join(root, 'extension', 'src', 'view.ts'), 'utf8');
  const constant = (name) => view.match(new RegExp(`export const ${name} = '([^']+)'`))?.[1];
  for (const name of ['INSTALL_COMMAND', 'MPTCPIZE_COMMAND', 'HELPER_INSTALL_COMMAND']) {
    const cmd = constant(name);
    assert.ok(cmd, `view.ts has no ${name}`);
    assert.ok(sec.includes(cmd), `the README's own-browser section lacks the popup's ${name}: ${cmd}`);
  }
  assert.match(sec, /--user-data-dir DIR/);
  // The Firefox part gives the commands the popup gives in Firefox (view.ts: mptcpizeCommand, installCommand).
  const ff = readme.slice(readme.indexOf('## Firefox'), readme.indexOf('## The helper from source'));
  assert.ok(ff.includes('mptcpize run firefox') && ff.includes('dist/mpsurf-host install --browser firefox'), ff);
});

// A packaged install: the README's Install section names the fixes the popup gives it (view.ts).
test('README: the Install section names the fixes the popup gives a packaged install', () => {
  const view = fs.readFileSync(path.join(root, 'extension', 'src', 'view.ts'), 'utf8');
  const constant = (name) => view.match(new RegExp(`export const ${name} = '([^']+)'`))?.[1];
  const top = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const inst = top.slice(top.indexOf('## Install'), top.indexOf('\n## ', top.indexOf('## Install') + 3));
  for (const name of ['PACKAGE_INSTALL_COMMAND', 'HELPER_START_COMMAND', 'DOCTOR_COMMAND']) {
    const cmd = constant(name);
    assert.ok(cmd, `view.ts has no ${name}`);
    assert.ok(inst.includes(cmd), `the README's Install section lacks the popup's ${name}: ${cmd}`);
  }
});

// The one-line host check of docs/from-source.md answers, and writes nothing into the user's real decision log.
test('docs/from-source.md: the one-line host check answers and leaves the real decision log alone', (t) => {
  const host = path.join(root, 'dist', 'mpsurf-host');
  if (!fs.existsSync(host)) return t.skip('dist/mpsurf-host is not built (npm run build)');
  const readme = fs.readFileSync(path.join(root, 'docs', 'from-source.md'), 'utf8');
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

// The pages a newcomer reads: the README, docs/ and the packages' own READMEs.
const docPages = () => [
  'README.md',
  ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`),
  'extension/README.md',
  'native-host/README.md',
  'e2e/RESULTS.md',
];
const read = (rel) => fs.readFileSync(path.join(root, rel), 'utf8');
// GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'.
const slug = (h) => h.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
const anchors = (text) => new Set([...text.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1])));

test('README.md is a map: at most 150 lines, naming the two commands and every docs/ page', () => {
  const readme = read('README.md');
  const lines = readme.split('\n').length;
  assert.ok(lines <= 150, `README.md has ${lines} lines`);
  assert.match(readme, /^npm start\b/m);
  assert.match(readme, /^npm test\b/m);
  for (const page of docPages().filter((p) => p.startsWith('docs/'))) assert.ok(readme.includes(`](${page})`), `README.md does not link ${page}`);
});

test('every link of the docs resolves, anchors included', () => {
  const bad = [];
  for (const page of docPages()) {
    const text = read(page).replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      const [file, anchor] = target.split('#');
      const abs = file ? path.resolve(path.dirname(path.join(root, page)), file) : path.join(root, page);
      if (!fs.existsSync(abs)) { bad.push(`${page}: ${target} (no such file)`); continue; }
      if (anchor && abs.endsWith('.md') && !anchors(fs.readFileSync(abs, 'utf8')).has(anchor)) bad.push(`${page}: ${target} (no such heading)`);
    }
  }
  assert.deepEqual(bad, []);
});

// Repository paths named in backticks exist (a '*' matches within one name); built (dist/) and output (out/) paths
// are not in the repository.
test('every repository file the docs name exists', () => {
  const bad = [];
  const top = /^(e2e|native-host|extension|policy-models|packaging|scripts|docs|\.ci)\//;
  for (const page of docPages()) {
    for (const [, span] of read(page).matchAll(/`([^`\s]+)`/g)) {
      const p = span.replace(/[.,:;]$/, '');
      if (!top.test(p) || /[A-Z]{2,}|\$|<|\{/.test(p.replace(/README|RESULTS|PROTOCOL|THREAT-MODEL|ARCHIVE/g, ''))) continue;
      const dir = path.join(root, path.dirname(p));
      const base = path.basename(p);
      const re = new RegExp(`^${base.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
      if (!(fs.existsSync(dir) && fs.readdirSync(dir).some((f) => re.test(f)))) bad.push(`${page}: ${p}`);
    }
  }
  assert.deepEqual(bad, []);
});

// Each command line of the docs: `[dist/]mpsurf-host SUB [SUB] --flag...`, `npm run testbed -- --flag...`,
// `dist/testbed VERB`, `dist/report --flag`, `mpsurf-proxy-setup --flag`: the command's own --help lists every flag
// the docs give it. `npm run X` is a script of package.json; `node`/`go run`/`go test` name files and packages that
// exist, and `go test -run TestX` a test that is there.
test('every command the docs give exists and its --help lists the flags they use', (t) => {
  const dist = path.join(root, 'dist');
  if (!fs.existsSync(path.join(dist, 'mpsurf-host')) || !fs.existsSync(path.join(dist, 'testbed'))) return t.skip('dist/ is not built (npm run build)');
  const helpCache = new Map();
  const help = (cmd, args) => {
    const key = [cmd, ...args].join(' ');
    if (!helpCache.has(key)) {
      let out;
      try { out = execFileSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 }); } catch (e) { out = `${e.stdout ?? ''}${e.stderr ?? ''}`; }
      helpCache.set(key, out);
    }
    return helpCache.get(key);
  };
  const scripts = JSON.parse(read('package.json')).scripts;
  const hostSubs = new Set([...help(path.join(dist, 'mpsurf-host'), ['--help']).matchAll(/^ {2}mpsurf-host ([a-z][a-z-]*(?: [a-z][a-z-]*)?)/gm)].map((m) => m[1]));
  const bad = [];
  const lines = [];
  for (const page of docPages()) {
    const text = read(page);
    for (const [, block] of text.matchAll(/```sh\n([\s\S]*?)```/g)) for (const l of block.replace(/\\\n/g, ' ').split('\n')) lines.push([page, l]);
    for (const [, span] of text.replace(/```[\s\S]*?```/g, '').matchAll(/`([^`\n]+)`/g)) lines.push([page, span]);
  }
  const flags = (s) => [...s.matchAll(/(?:^|\s)(--[a-z][a-z0-9-]*)/g)].map((m) => m[1]);
  let checked = 0;
  for (const [page, raw] of lines) {
    for (const part of raw.replace(/#.*$/, '').split(/\||&&|;|\$\(/)) {
      const l = part.trim().replace(/^(sudo\s+)?([A-Z_]+=\S*\s+)*/, '');
      let m;
      if ((m = l.match(/^(?:dist\/)?mpsurf-host\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?(.*)$/))) {
        const sub = m[2] && hostSubs.has(`${m[1]} ${m[2]}`) ? `${m[1]} ${m[2]}` : m[1];
        if (!hostSubs.has(sub)) { bad.push(`${page}: mpsurf-host has no subcommand "${sub}": ${l}`); continue; }
        const h = help(path.join(dist, 'mpsurf-host'), [...sub.split(' '), '--help']);
        for (const f of flags(l)) if (!h.includes(f)) bad.push(`${page}: mpsurf-host ${sub} --help lacks ${f}: ${l}`);
        checked++;
      } else if ((m = l.match(/^npm run ([a-z:]+)(.*)$/))) {
        if (!scripts[m[1]]) { bad.push(`${page}: no npm script ${m[1]}`); continue; }
        if (m[1] === 'testbed') {
          const h = help('node', ['e2e/testbed/grid.mjs', '--help']);
          for (const f of flags(m[2])) if (!h.includes(f)) bad.push(`${page}: the grid's --help lacks ${f}: ${l}`);
        }
        checked++;
      } else if ((m = l.match(/^dist\/testbed\s+([a-z-]+)/))) {
        if (!new RegExp(`^ {2}${m[1]}\\b`, 'm').test(help(path.join(dist, 'testbed'), ['help']))) bad.push(`${page}: dist/testbed help lacks ${m[1]}`);
        checked++;
      } else if ((m = l.match(/^dist\/report(.*)$/))) {
        const h = help(path.join(dist, 'report'), ['--help']);
        for (const f of flags(m[1])) if (!h.includes(f.slice(1))) bad.push(`${page}: dist/report --help lacks ${f}`);
        checked++;
      } else if ((m = l.match(/^(?:packaging\/proxy\/)?mpsurf-proxy-setup(.*)$/))) {
        const h = help('bash', ['packaging/proxy/mpsurf-proxy-setup', '--help']);
        for (const f of flags(m[1])) if (!h.includes(f)) bad.push(`${page}: mpsurf-proxy-setup --help lacks ${f}`);
        checked++;
      } else if ((m = l.match(/^(?:node(?: --test)?|go run|go test)\s+(\.\/)?((?:e2e|native-host|policy-models)[\w./-]*)(.*)$/))) {
        const p = m[2].replace(/\/\.\.\.$/, '');
        if (!fs.existsSync(path.join(root, p))) { bad.push(`${page}: ${p} does not exist`); continue; }
        const run = m[3].match(/-run\s+(Test\w+)/)?.[1];
        if (run && !fs.readdirSync(path.join(root, p)).some((f) => f.endsWith('_test.go') && read(path.join(p, f)).includes(`func ${run}(`))) bad.push(`${page}: no ${run} in ${p}`);
        checked++;
      }
    }
  }
  assert.ok(checked >= 30, `only ${checked} command lines found`);
  assert.deepEqual(bad, []);
});

// The variables the code reads: Go outside tests (os.Getenv, os.LookupEnv), the scripts' ${VAR} and $VAR, and the
// Node programs' process.env.VAR (or env.VAR); a Go test's own child-process plumbing is not configuration.
test('docs/environment.md names exactly the environment variables the code reads', () => {
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: root, encoding: 'utf8' }).split('\n')
    .filter((f) => /\.(go|mjs|js|ts|sh|bash)$|^scripts\/|^packaging\/|^\.ci\//.test(f) && !f.endsWith('_test.go') && !f.includes('node_modules/') && fs.existsSync(path.join(root, f)) && fs.statSync(path.join(root, f)).isFile());
  const read_ = new Set();
  for (const f of files) for (const [, v] of read(f).matchAll(/\b(MPSURF_[A-Z0-9_]+|MPS_[A-Z0-9_]+)\b/g)) read_.add(v);
  const page = read('docs/environment.md');
  const named = new Set([...page.matchAll(/\b(MPSURF_[A-Z0-9_]+|MPS_[A-Z0-9_]+)\b/g)].map((m) => m[1]));
  assert.ok(read_.size >= 30, `only ${read_.size} variables found in the code`);
  assert.deepEqual([...read_].filter((v) => !named.has(v)).sort(), [], 'read by the code, not on docs/environment.md');
  assert.deepEqual([...named].filter((v) => !read_.has(v)).sort(), [], 'on docs/environment.md, read by nothing');
});

// The mirror comes from the system's own apt sources (packaging/lib/fresh-debian.bash), the registries from each
// tool's own configuration: the repository names none of their hosts. The patterns are written so that this file
// does not match them itself.
test('no package-registry or mirror host is named in the repository', () => {
  const hosts = ['deb', 'security', 'ftp\\.[a-z]{2}', 'archive'].map((h) => `${h}\\.debian\\.org`)
    .concat(['registry\\.npmjs\\.org', 'registry\\.yarnpkg\\.com', '(proxy|sum)\\.golang\\.org', 'goproxy\\.(io|cn)', 'pypi\\.org', 'files\\.pythonhosted\\.org', '(archive|security)\\.ubuntu\\.com', 'npmmirror\\.com']);
  const re = new RegExp(hosts.join('|'), 'i');
  const found = [];
  for (const f of execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean)) {
    const abs = path.join(root, f);
    if (!fs.existsSync(abs) || f.endsWith('.gz')) continue;
    const text = fs.readFileSync(abs, 'latin1');
    const m = text.match(re);
    if (m) found.push(`${f}: ${m[0]}`);
  }
  assert.deepEqual(found, []);
});

// Compiled programs are built by npm run build, never committed: ELF, PE, Mach-O, ar archives, WebAssembly.
test('git ls-files holds no compiled binary', () => {
  const magic = [[0x7f, 0x45, 0x4c, 0x46], [0x4d, 0x5a], [0xcf, 0xfa, 0xed, 0xfe], [0xfe, 0xed, 0xfa, 0xcf], [0x21, 0x3c, 0x61, 0x72, 0x63, 0x68, 0x3e], [0x00, 0x61, 0x73, 0x6d]];
  const found = [];
  for (const f of execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean)) {
    const abs = path.join(root, f);
    if (!fs.existsSync(abs)) continue;
    const fd = fs.openSync(abs, 'r');
    const head = Buffer.alloc(8);
    fs.readSync(fd, head, 0, 8, 0);
    fs.closeSync(fd);
    if (magic.some((m) => m.every((b, i) => head[i] === b))) found.push(f);
  }
  assert.deepEqual(found, []);
});
